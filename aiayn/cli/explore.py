"""Open a trained model in the browser: tokens, attention, output distribution, beam search.

  aiayn explore [--checkpoint PATH] [--host 127.0.0.1] [--port 8000] [--no-browser] [--lang zh]

Serves a local page (no network needed) whose every number comes from the library: the
translation of `aiayn translate`, every intermediate of `aiayn.trace`, the beam search's own
steps. --checkpoint takes what translate takes (a model file, a checkpoint or a run
directory); the default is the model `make demo` writes. Ctrl-C stops the server.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

DEFAULT_CHECKPOINT = Path("runs/demo/average.safetensors")  # written by `aiayn demo`


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help=f"model file, checkpoint or run directory (default {DEFAULT_CHECKPOINT})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--lang", choices=["en", "zh"], default="en", help="the page's language (default en)"
    )
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")


def run(args: argparse.Namespace) -> int:
    from aiayn.errors import UserError

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be in 0..65535, got {args.port}")
    checkpoint = args.checkpoint
    if checkpoint is None:
        if not DEFAULT_CHECKPOINT.is_file():
            raise UserError(
                f"no model to explore: {DEFAULT_CHECKPOINT} does not exist; `make demo` makes "
                "it, or pass --checkpoint PATH"
            )
        checkpoint = DEFAULT_CHECKPOINT

    import uvicorn

    from aiayn.explore.app import create_app
    from aiayn.explore.core import Explorer

    explorer = Explorer(checkpoint, device=args.device)
    app = create_app(explorer, lang=args.lang)
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{args.port}/" + ("?lang=zh" if args.lang == "zh" else "")
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
    server = uvicorn.Server(config)
    print(f"aiayn explore: {explorer.path} on {url}  (Ctrl-C stops)", flush=True)
    if not args.no_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    # uvicorn shuts down gracefully on Ctrl-C (SIGINT) or SIGTERM, then re-raises the signal.
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        raise UserError(f"could not serve on {args.host}:{args.port} (is the port in use?)")
    print("aiayn explore: stopped", flush=True)
    return 0
