"""Bad requests to `aiayn explore`'s API (issue 53): a 4xx with one short line of JSON naming
the field, never a 500, and no traceback in the server's log.

The server is a real `aiayn explore` process on 127.0.0.1 (tests/explore_support.py). Each
request here once answered 500 with a traceback in the log, or is a neighbour of one: numbers
past any field's range (400 and 5,000 digits: float() overflows, int() meets the interpreter's
digit limit), JSON nested 30,000 levels deep (json.loads recursed), a lone surrogate in a
string, and the usual wrong types, missing fields, non-JSON, wrong sizes, paths and methods.
A request whose HTTP itself is broken (a Content-Length that is no number) is answered by the
HTTP server before the app sees it: a 400 of one plain-text line.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.explore_support import serve

pytestmark = pytest.mark.slow  # a trained run and a server process: several seconds

TEXT = b'{"text": "the dog sees the ball ."'  # a good request's start: a field is appended


def _with(field: str, raw: bytes | str) -> bytes:
    raw = raw.encode() if isinstance(raw, str) else raw
    return TEXT + b', "' + field.encode() + b'": ' + raw + b"}"


# (id, body, status, what the message must contain)
BAD = [
    # Numbers past any range: overflow, the interpreter's digit limit, NaN and infinities.
    ("alpha-400-digits", _with("alpha", "9" * 400), 422, "alpha: a number is required"),
    ("alpha-5000-digits", _with("alpha", "9" * 5000), 422, "alpha: a number is required"),
    ("alpha-minus-400-digits", _with("alpha", "-" + "9" * 400), 422, "alpha: "),
    ("alpha-1e400", _with("alpha", "1e400"), 422, "alpha: a number is required"),
    ("alpha-NaN", _with("alpha", "NaN"), 422, "alpha: a number is required, got NaN"),
    ("alpha-Infinity", _with("alpha", "Infinity"), 422, "alpha: a number is required"),
    ("alpha--Infinity", _with("alpha", "-Infinity"), 422, "alpha: a number is required"),
    ("alpha-5000-digit-decimal", _with("alpha", "1" * 5000 + ".5"), 422, "alpha: "),
    ("alpha-string", _with("alpha", '"0.6"'), 422, "alpha: a number is required"),
    ("alpha-null", _with("alpha", "null"), 422, "alpha: a number is required"),
    ("alpha-2.5", _with("alpha", "2.5"), 422, "alpha: must be in 0.0..2.0"),
    ("beam-400-digits", _with("beam", "9" * 400), 422, "beam: an integer is required"),
    ("beam-5000-digits", _with("beam", "9" * 5000), 422, "beam: an integer is required"),
    ("beam-20-digits", _with("beam", "9" * 20), 422, "beam: must be in 1..8"),
    ("beam-negative", _with("beam", "-4"), 422, "beam: must be in 1..8"),
    ("beam-zero", _with("beam", "0"), 422, "beam: must be in 1..8"),
    ("beam-1e3", _with("beam", "1e3"), 422, "beam: an integer is required"),
    ("beam-4.0", _with("beam", "4.0"), 422, "beam: an integer is required"),
    ("beam-NaN", _with("beam", "NaN"), 422, "beam: an integer is required"),
    ("beam-list", _with("beam", "[4]"), 422, "beam: an integer is required"),
    (
        "heads-off-huge-layer",
        _with("heads_off", '[["encoder", ' + "9" * 400 + ", 0]]"),
        422,
        "heads_off: each entry",
    ),
    ("heads-off-negative-head", _with("heads_off", '[["encoder", 0, -1]]'), 422, "head -1"),
    ("heads-off-float", _with("heads_off", '[["encoder", 0.5, 0]]'), 422, "heads_off"),
    (
        "heads-off-too-many",
        _with("heads_off", "[" + ",".join(["0"] * 1100) + "]"),
        422,
        "heads_off",
    ),
    ("erratum-number", _with("erratum", "1"), 422, "erratum: true or false"),
    # Nesting: 30,000 levels once made json.loads recurse out of the stack.
    ("nested-30000-arrays", b"[" * 30000 + b"]" * 30000, 400, "body: arrays and objects nested"),
    ("nested-10000-objects", b'{"a":' * 10000 + b"1" + b"}" * 10000, 400, "nested deeper"),
    ("nested-30000-open", b"[" * 30000, 400, "nested deeper than 8"),
    ("nested-in-a-field", _with("checkpoint", b"[" * 50 + b"]" * 50), 400, "nested deeper"),
    ("nested-9", b"[" * 9 + b"]" * 9, 400, "nested deeper than 8"),
    ("brackets-in-a-string", _with("reference", '"' + "[" * 100 + '"'), 200, ""),
    # Text that is not Unicode: a lone surrogate, escaped in JSON (valid JSON, not valid text).
    ("text-lone-surrogate", b'{"text": "\\ud800"}', 422, "text: not valid Unicode text"),
    ("text-low-surrogate", b'{"text": "a \\udfff b"}', 422, "text: not valid Unicode text"),
    ("reference-lone-surrogate", _with("reference", '"\\ud800"'), 422, "reference: not valid"),
    ("checkpoint-lone-surrogate", _with("checkpoint", '"\\ud800"'), 422, "checkpoint: not valid"),
    ("heads-off-lone-surrogate", _with("heads_off", '[["\\ud800", 0, 0]]'), 422, "heads_off"),
    ("field-name-lone-surrogate", _with("\\ud800", "1"), 422, "unknown field '\\ud800'"),
    ("text-surrogate-pair", b'{"text": "\\ud83d\\ude00"}', 200, ""),  # a real pair: an emoji
    # The body: encoding, JSON, shape, fields.
    ("body-latin1", '{"text": "Größe"}'.encode("latin-1"), 400, "body: not UTF-8"),
    ("body-utf16", '{"text": "a"}'.encode("utf-16"), 400, "body: not UTF-8"),
    ("body-raw-surrogate-bytes", b'{"text": "\xed\xa0\x80"}', 400, "body: not UTF-8"),
    ("body-empty", b"", 400, "body: not JSON"),
    ("body-form", b"text=hello", 400, "body: not JSON"),
    ("body-truncated", b'{"text": "a", "beam": ', 400, "body: not JSON"),
    ("body-trailing", b'{"text": "a"} {}', 400, "body: not JSON"),
    ("body-string", b'"the dog"', 400, "body: must be a JSON object"),
    ("body-number", b"9" * 5000, 400, "body: must be a JSON object"),
    ("body-null", b"null", 400, "body: must be a JSON object"),
    ("text-missing", b'{"beam": 4}', 422, "text: a string is required"),
    ("text-null", b'{"text": null}', 422, "text: a string is required"),
    ("text-number", b'{"text": 12}', 422, "text: a string is required"),
    ("text-empty", b'{"text": "  "}', 422, "text: empty"),
    ("text-too-long", b'{"text": "' + "ä".encode() * 2100 + b'"}', 413, "text: more than 4096"),
    ("field-unknown", _with("beam_size", "4"), 422, "unknown field 'beam_size'"),
    ("body-over-64k", b'{"text": "' + b"a" * 70000 + b'"}', 413, "body: more than 65536 bytes"),
]


@pytest.fixture(scope="module")
def server(explore_model):
    """The server, with its log (stderr) read as it comes, so that a long log cannot block it."""
    with serve(explore_model) as s:
        s.log = []
        s.reader = threading.Thread(target=lambda: s.log.extend(s.proc.stderr), daemon=True)
        s.reader.start()
        yield s


def _raw(server, data: bytes, half_close: bool = False) -> bytes:
    """Send bytes as they are; what the server answers until it closes (or 10 s pass).

    half_close: the client says it has sent everything (a server may then drop its answer).
    """
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer


CLOSE = "Connection: close\r\n"  # the server closes after its answer: the end of what _raw reads


def _status(answer: bytes) -> int | None:
    first = answer.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) >= 2 and first[1].isdigit() else None


def _still_serving(server) -> None:
    status, info = server.get("/api/info")
    assert status == 200
    assert info["model"]["d_model"] == 32


@pytest.mark.parametrize(
    ("body", "status", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_bad_request_is_a_4xx_naming_the_field(server, body, status, message) -> None:
    got_status, got = server.post("/api/translate", body, timeout=30)
    assert got_status == status, got
    if status == 200:
        assert got["output"]["text"]
    else:
        assert set(got) == {"error"}
        assert message in got["error"]
        assert len(got["error"]) <= 300
        assert "Traceback" not in got["error"]
    _still_serving(server)


def test_wrong_paths_and_methods_are_a_json_4xx(server) -> None:
    for method, path, status in [
        ("GET", "/api/translate", 405),
        ("PUT", "/api/translate", 405),
        ("DELETE", "/api/info", 405),
        ("POST", "/api/info", 405),
        ("GET", "/api/nothing", 404),
        ("POST", "/api/translate/x", 404),
        ("GET", "/static/../app.py", 404),
        ("GET", "/static/nothing.js", 404),
    ]:
        request = f"{method} {path} HTTP/1.1\r\nHost: x\r\n{CLOSE}Content-Length: 0\r\n\r\n"
        answer = _raw(server, request.encode())
        assert _status(answer) == status, (method, path, answer[:200])
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"application/json" in head.lower(), (method, path)
        assert set(json.loads(body)) == {"error"}
    _still_serving(server)


POST = b"POST /api/translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"


def test_a_wrong_content_length_is_a_4xx_or_a_closed_connection(server) -> None:
    body = b'{"text": "the dog sees the ball ."}'
    # Fewer bytes declared than sent: the first bytes alone are not JSON.
    answer = _raw(server, POST + b"Content-Length: 5\r\n\r\n" + body)
    assert _status(answer) == 400
    assert b"body: not JSON" in answer
    # More declared than sent, then the client stops: nobody to answer, nothing logged.
    answer = _raw(server, POST + b"Content-Length: 500\r\n\r\n" + body, half_close=True)
    assert _status(answer) in (None, 400)
    # More than the limit declared: refused before a byte of the body is read.
    answer = _raw(server, POST + b"Content-Length: 99999999999\r\n\r\n" + body)
    assert _status(answer) == 413
    assert b"body: more than 65536 bytes" in answer
    # Declared sizes that are no number: the HTTP server's own 400.
    for length in (b"-1", b"abc", b"9" * 5000):
        answer = _raw(server, POST + b"Content-Length: " + length + b"\r\n\r\n" + body)
        assert _status(answer) == 400, (length[:20], answer[:200])
    _still_serving(server)


def test_a_chunked_body_over_the_limit_is_413(server) -> None:
    chunk = b"a" * 16384
    data = POST + b"Transfer-Encoding: chunked\r\n\r\n" + b'e\r\n{"text": "aaaa\r\n'
    data += (b"4000\r\n" + chunk + b"\r\n") * 5 + b'3\r\n"}\n\r\n0\r\n\r\n'
    answer = _raw(server, data)
    assert _status(answer) == 413, answer[:200]
    _still_serving(server)


def test_bytes_that_are_not_http_are_a_400(server) -> None:
    for data in (
        b"\x00\xff\xfe garbage\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET / HTTP/1.1\r\nno colon here\r\n\r\n",
    ):
        assert _status(_raw(server, data)) in (400, 505), data
    _still_serving(server)


def test_after_all_of_it_a_good_request_is_answered_and_the_log_has_no_traceback(
    server,
) -> None:
    status, got = server.post("/api/translate", {"text": "the dog sees the ball .", "beam": 4})
    assert status == 200
    assert got["output"]["text"]
    server.proc.send_signal(2)  # SIGINT: the server stops; its log ends
    server.proc.wait(timeout=30)
    server.reader.join(timeout=10)
    log = b"".join(server.log).decode("utf-8", "replace")
    assert "Traceback" not in log, log[-3000:]
    assert "ERROR" not in log, log[-3000:]
    assert " 500 " not in log
