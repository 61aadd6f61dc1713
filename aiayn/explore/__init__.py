"""The explorer: a trained model opened up in the browser, on the learner's own sentence.

A face beside ``aiayn/cli/``: a Starlette app (``app.py``) serving a page (``static/``, plain
JavaScript and SVG, no CDN) and a JSON API whose numbers come from the library (``core.py``:
``Translator``, ``aiayn.trace``, ``beam_search``'s own record). The library never imports it.
Run it with ``aiayn explore``; docs/explore.md documents the API.
"""
