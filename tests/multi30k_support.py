"""For the Multi30k tests (test_data_corpora.py, test_cli_demo_corpus.py): small raw files in
Multi30k's layout, and a local HTTP server to download them (or anything else) from."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


def write_raw(directory: Path, splits: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """Multi30k's raw files ({stem}.en, {stem}.de: one sentence a line) of the (en, de) pairs
    of each split stem; returns their SHA-256 sums, by file name."""
    directory.mkdir(parents=True, exist_ok=True)
    sums = {}
    for stem, pairs in splits.items():
        for k, lang in enumerate(("en", "de")):
            data = "".join(p[k] + "\n" for p in pairs).encode()
            (directory / f"{stem}.{lang}").write_bytes(data)
            sums[f"{stem}.{lang}"] = hashlib.sha256(data).hexdigest()
    return sums


def write_gz(raw: Path, root: Path) -> None:
    """Every file of raw gzipped into root as NAME.gz, the way Multi30k's repository serves it."""
    for f in raw.iterdir():
        (root / f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes()))


@contextlib.contextmanager
def http_server(root: Path) -> Iterator[str]:
    """The base URL of a quiet HTTP server on 127.0.0.1 that serves root while the block runs."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
