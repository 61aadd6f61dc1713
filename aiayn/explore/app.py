"""The explorer's ASGI app: the page (package data) and its JSON API.  See docs/explore.md.

Routes: ``GET /`` the page, ``GET /static/...`` its script and style, ``GET /api/info`` the
model, its run and limits, ``POST /api/translate`` one analysis (``core.Explorer.analyze``).
Every refused request is a 4xx whose body is one line of JSON, ``{"error": "..."}``; the
analysis runs in Starlette's thread pool, so the server keeps answering other requests.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request as HTTPRequest
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from aiayn.errors import UserError
from aiayn.explore.core import ALPHA_RANGE, BEAM_RANGE, STACKS, BadRequest, Explorer, Request

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024  # bytes of a request body
FIELDS = {"text", "beam", "alpha", "reference", "checkpoint", "heads_off", "erratum"}


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status)


def parse(body: bytes) -> Request:
    """A Request from a JSON body, or BadRequest naming what is wrong."""
    if len(body) > MAX_BODY:
        raise BadRequest(f"body: more than {MAX_BODY} bytes", status=413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"body: not UTF-8 (byte {e.start})", status=400) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadRequest(
            f"body: not JSON ({e.msg}, line {e.lineno} column {e.colno})", 400
        ) from None
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object", status=400)
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r} (known: {', '.join(sorted(FIELDS))})")
    text_ = data.get("text")
    if not isinstance(text_, str):
        raise BadRequest("text: a string is required")
    beam = data.get("beam", 4)
    if isinstance(beam, bool) or not isinstance(beam, int):
        raise BadRequest(f"beam: an integer is required, got {json.dumps(beam)}")
    if not BEAM_RANGE[0] <= beam <= BEAM_RANGE[1]:
        raise BadRequest(f"beam: must be in {BEAM_RANGE[0]}..{BEAM_RANGE[1]}, got {beam}")
    alpha = data.get("alpha", 0.6)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha):
        raise BadRequest(f"alpha: a number is required, got {json.dumps(alpha)}")
    if not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise BadRequest(f"alpha: must be in {ALPHA_RANGE[0]}..{ALPHA_RANGE[1]}, got {alpha}")
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise BadRequest("reference: a string or null is required")
    checkpoint = data.get("checkpoint")
    if checkpoint is not None and not isinstance(checkpoint, str):
        raise BadRequest("checkpoint: a name (string) or null is required")
    erratum = data.get("erratum", False)
    if not isinstance(erratum, bool):
        raise BadRequest("erratum: true or false is required")
    heads = data.get("heads_off", [])
    if not isinstance(heads, list) or len(heads) > 1024:
        raise BadRequest("heads_off: a list of [stack, layer, head] is required")
    heads_off = []
    for h in heads:
        ok = isinstance(h, list) and len(h) == 3 and h[0] in STACKS
        ok = ok and all(isinstance(x, int) and not isinstance(x, bool) for x in h[1:])
        if not ok:
            raise BadRequest(
                f"heads_off: each entry is [stack, layer, head] with stack one of "
                f"{', '.join(STACKS)}, got {json.dumps(h)[:80]}"
            )
        heads_off.append((h[0], h[1], h[2]))
    return Request(
        text=text_,
        beam=beam,
        alpha=float(alpha),
        reference=reference or None,
        checkpoint=checkpoint,
        heads_off=tuple(heads_off),
        erratum=erratum,
    )


def create_app(explorer: Explorer, lang: str = "en") -> Starlette:
    """The Starlette app serving one Explorer; ``lang`` is the page's default language."""

    async def index(request: HTTPRequest) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def info(request: HTTPRequest) -> Response:
        return JSONResponse({**explorer.info(), "lang": lang})

    async def translate(request: HTTPRequest) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return error(f"body: more than {MAX_BODY} bytes", 413)
        try:
            req = parse(body)
            result: dict[str, Any] = await run_in_threadpool(explorer.analyze, req)
        except BadRequest as e:
            return error(str(e), e.status)
        except UserError as e:
            return error(str(e), 422)
        except Exception as e:  # a bug, not the user's: still one line, and the server goes on
            log.exception("explore: analysis failed")
            return error(f"internal error: {type(e).__name__}: {e}", 500)
        return JSONResponse(result)

    async def not_found(request: HTTPRequest, exc: HTTPException) -> Response:
        return error(f"{request.url.path}: {exc.detail}", exc.status_code)

    routes = [
        Route("/", index),
        Route("/api/info", info),
        Route("/api/translate", translate, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: not_found})
