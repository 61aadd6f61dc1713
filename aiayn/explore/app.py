"""The explorer's ASGI app: the page (package data) and its JSON API.  See docs/explore.md.

Routes: ``GET /`` the page, ``GET /static/...`` its script and style, ``GET /api/info`` the
model, its run and limits, ``POST /api/translate`` one analysis (``core.Explorer.analyze``).
Every refused request is a 4xx whose body is one line of JSON, ``{"error": "..."}``; the
analysis runs in Starlette's thread pool, so the server keeps answering other requests.

A request is checked before anything reads it as a request (``parse``): its size (the header
and the bytes), then its nesting depth, then JSON whose integers are kept away from ``int()``
past ``MAX_DIGITS`` digits (no overflow, no interpreter digit limit), then each field: its
type, a finite number in the field's range, text that is valid Unicode (no lone surrogate).
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.requests import Request as HTTPRequest
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from aiayn.errors import UserError
from aiayn.explore.core import ALPHA_RANGE, BEAM_RANGE, STACKS, BadRequest, Explorer, Request

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024  # bytes of a request body
MAX_DEPTH = 8  # nesting of arrays and objects; a request needs 3: {"heads_off": [[...]]}
MAX_DIGITS = 20  # of a JSON integer; every integer field is far smaller
MAX_MESSAGE = 300  # characters of an error message
FIELDS = {"text", "beam", "alpha", "reference", "checkpoint", "heads_off", "erratum"}
_JSON_SYNTAX = re.compile(r'[\\"\[\]{}]')  # what the depth scan looks at


def error(message: str, status: int) -> JSONResponse:
    """One short line of JSON; what the message quotes is escaped, never a 500 of its own."""
    line = " ".join(message.split())
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 3] + "..."
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate
    return JSONResponse({"error": line}, status_code=status)


@dataclass(frozen=True)
class _LongInteger:
    """A JSON integer of more than MAX_DIGITS digits: never converted, refused by its field."""

    digits: int


def _integer(literal: str) -> int | _LongInteger:
    digits = len(literal.lstrip("-"))
    return int(literal) if digits <= MAX_DIGITS else _LongInteger(digits)


def _shown(value: Any) -> str:
    """A value as a message quotes it: JSON, ASCII, at most 40 characters."""
    if isinstance(value, _LongInteger):
        return f"an integer of {value.digits} digits"
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets in strings skipped).

    Stops counting past MAX_DEPTH: a deeper body is refused before json.loads recurses into it.
    """
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # the position of the character after a backslash in a string
    for m in _JSON_SYNTAX.finditer(text):
        at, ch = m.start(), m.group()
        if at == escaped_at:
            continue
        if in_string:
            if ch == "\\":
                escaped_at = at + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif ch in "]}":
            depth -= 1
    return deepest


def _text(value: Any, name: str) -> None:
    """A string field must be text: valid Unicode that encodes to UTF-8 (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadRequest(
            f"{name}: not valid Unicode text (a lone surrogate at character {e.start})"
        ) from None


def parse(body: bytes) -> Request:
    """A Request from a JSON body, or BadRequest naming what is wrong."""
    if len(body) > MAX_BODY:
        raise BadRequest(f"body: more than {MAX_BODY} bytes", status=413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"body: not UTF-8 (byte {e.start})", status=400) from None
    if _depth(text) > MAX_DEPTH:
        raise BadRequest(f"body: arrays and objects nested deeper than {MAX_DEPTH}", 400)
    try:
        data = json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as e:
        raise BadRequest(
            f"body: not JSON ({e.msg}, line {e.lineno} column {e.colno})", 400
        ) from None
    except (ValueError, RecursionError) as e:  # what the scans above should leave to none
        raise BadRequest(f"body: not JSON ({type(e).__name__})", 400) from None
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object", status=400)
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r} (known: {', '.join(sorted(FIELDS))})")
    text_ = data.get("text")
    if not isinstance(text_, str):
        raise BadRequest("text: a string is required")
    _text(text_, "text")
    beam = data.get("beam", 4)
    if isinstance(beam, bool) or not isinstance(beam, int):
        raise BadRequest(f"beam: an integer is required, got {_shown(beam)}")
    if not BEAM_RANGE[0] <= beam <= BEAM_RANGE[1]:
        raise BadRequest(f"beam: must be in {BEAM_RANGE[0]}..{BEAM_RANGE[1]}, got {beam}")
    alpha = data.get("alpha", 0.6)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha):
        raise BadRequest(f"alpha: a number is required, got {_shown(alpha)}")
    if not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise BadRequest(f"alpha: must be in {ALPHA_RANGE[0]}..{ALPHA_RANGE[1]}, got {alpha}")
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise BadRequest("reference: a string or null is required")
    if reference is not None:
        _text(reference, "reference")
    checkpoint = data.get("checkpoint")
    if checkpoint is not None and not isinstance(checkpoint, str):
        raise BadRequest("checkpoint: a name (string) or null is required")
    if checkpoint is not None:
        _text(checkpoint, "checkpoint")
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
                f"{', '.join(STACKS)}, got {_shown(h)}"
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
        length = request.headers.get("content-length", "")
        if len(length) > 12 or (length.isdigit() and int(length) > MAX_BODY):
            return error(f"body: more than {MAX_BODY} bytes (Content-Length {length[:12]})", 413)
        body = b""
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    return error(f"body: more than {MAX_BODY} bytes", 413)
        except ClientDisconnect:  # the client went before its body ended: no one to answer
            return error("body: the client disconnected before the end of the body", 400)
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
