"""Open a trained model in the browser: tokens, attention, output distribution, beam search.

  aiayn explore [--checkpoint PATH] [--host 127.0.0.1] [--port 8000] [--no-browser] [--lang zh]
                [--device cpu] [--threads N]

Serves a local page (no network needed) whose every number comes from the library: the
translation of `aiayn translate`, every intermediate of `aiayn.trace`, the beam search's own
steps. --checkpoint takes what translate takes (a model file, a checkpoint, a run directory
or a shipped model's name); the default is the model `make demo` writes, else the shipped
model en-zh where this aiayn ships it (docs/pretrained.md). Ctrl-C stops the server.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
from pathlib import Path

from aiayn.cli._signals import interruptible
from aiayn.cli.common import check_device, device, integer, say_checkpoint, threads

DEFAULT_CHECKPOINT = Path("runs/demo/average.safetensors")  # written by `aiayn demo`
DEFAULT_SHIPPED = "en-zh"  # without it: the shipped model of that name (aiayn.pretrained)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help=f"model file, checkpoint, run directory or shipped model's name (default "
        f"{DEFAULT_CHECKPOINT}, else the shipped {DEFAULT_SHIPPED})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=integer(0, 65535), default=8000, help="port (0: any free one; default 8000)"
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--lang", choices=["en", "zh"], default="en", help="the page's language (default en)"
    )
    parser.add_argument(
        "--device", type=device, default="cpu", help="auto, cpu, cuda or cuda:N (default cpu)"
    )
    parser.add_argument(
        "--threads",
        type=threads,
        default=0,
        metavar="N",
        help="intra-op threads of the analyses (default 0: all cores)",
    )


def run(args: argparse.Namespace) -> int:
    from aiayn.errors import require

    require("starlette", "explore")  # the optional extra, before anything
    require("uvicorn", "explore")
    run_on = check_device(args.device)  # before loading: a CUDA this machine lacks is one line
    checkpoint = args.checkpoint
    if checkpoint is None:
        checkpoint = default_checkpoint()
    say_checkpoint("explore", checkpoint)  # a shipped model's name: which model it means

    import torch
    import uvicorn

    from aiayn.explore.app import create_app
    from aiayn.explore.core import Explorer
    from aiayn.pretrained import describe

    if args.threads:
        torch.set_num_threads(args.threads)
    explorer = Explorer(checkpoint, device=run_on)
    app = create_app(explorer, lang=args.lang)
    sock = _listen(args.host, args.port)  # bound here, so a busy port is one clear line
    port = sock.getsockname()[1]  # --port 0: the port the system chose
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{port}/" + ("?lang=zh" if args.lang == "zh" else "")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    shown = describe(explorer.path)  # the path, or "the shipped model NAME (...)"
    print(f"aiayn explore: {shown} on {url}  (Ctrl-C stops)", flush=True)
    if not args.no_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    # uvicorn shuts down gracefully on Ctrl-C (SIGINT) or SIGTERM, then re-raises the signal.
    with interruptible(), contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    print("aiayn explore: stopped", flush=True)
    return 0


def default_checkpoint() -> Path | str:
    """The model `make demo` writes, else the shipped DEFAULT_SHIPPED, else one line saying how
    to get a model."""
    from aiayn.errors import UserError
    from aiayn.pretrained import names

    if DEFAULT_CHECKPOINT.is_file():
        return DEFAULT_CHECKPOINT
    if DEFAULT_SHIPPED in names():
        return DEFAULT_SHIPPED
    raise UserError(
        f"no model to explore: {DEFAULT_CHECKPOINT} does not exist; `make demo` makes "
        "it, or pass --checkpoint PATH"
    )


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or a UserError naming why not."""
    from aiayn.errors import UserError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise UserError(f"--host {host}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UserError(
            f"cannot listen on {host}:{port} ({e.strerror}); try another --port"
        ) from None
    return sock
