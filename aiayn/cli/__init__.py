"""The command line: ``aiayn VERB [options]``.

Every module of this package that defines ``add_arguments(parser)`` and ``run(args) -> int`` is
a verb (``prepare``, ``train``, ``translate``, ...; ``import_hf`` is ``import-hf``), its first
docstring line the verb's help.
Verb modules import heavy dependencies inside ``run`` so that ``aiayn --help`` stays fast.
Errors a user can cause end with one line on stderr and exit status 2 (a bad flag included:
the parser prints one line, not its usage; an optional extra not installed: the line names
its install command). Ctrl-C ends with one line and exit status 130: at
once by default, after cleaning up where a verb can (``_signals``; the training loop saves a
checkpoint first).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from types import ModuleType

from aiayn.cli._signals import name_verb, stop_at_once
from aiayn.errors import UserError, missing_extra

# The modules of pyproject.toml's optional extras that the verbs import, and the extra of each
# (tests/test_cli_extras.py holds this table to pyproject.toml): a verb checks its own first
# (``aiayn.errors.require``); one it forgot still ends in the one line of ``main``.
EXTRAS = {
    "starlette": "explore",  # aiayn explore: the page's server
    "uvicorn": "explore",
    "ctranslate2": "serve",  # aiayn export, translate/evaluate --engine (aiayn.export.EXTRA)
    "onnx": "serve",
    "onnxruntime": "serve",
    "transformers": "hf",  # aiayn export --format hf, import-hf (aiayn.export.hf.EXTRA)
    "sentencepiece": "hf",  # the same, and the tokenizer of an imported Marian model
    "matplotlib": "plot",  # aiayn plot, translate --attention, table3's figures
    "num2words": "numbers",  # aiayn prepare --source numbers
    "latex2mathml": "html",  # aiayn walkthrough --html (its formulas as MathML)
}


def _verbs() -> dict[str, ModuleType]:
    verbs = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "common":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "add_arguments") and hasattr(module, "run"):
            verbs[info.name.replace("_", "-")] = module  # import_hf.py is `aiayn import-hf`
    return verbs


def build_parser() -> argparse.ArgumentParser:
    from aiayn.cli.common import Parser

    parser = Parser(
        prog="aiayn",
        description="The Transformer of 'Attention Is All You Need', faithfully and visibly.",
    )
    from aiayn import __version__

    parser.add_argument("--version", action="version", version=f"aiayn {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, module in sorted(_verbs().items()):
        doc = (module.__doc__ or name).strip()
        first = doc.splitlines()[0]
        p = sub.add_parser(
            name,
            help=first,
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _out_of_memory(e: BaseException) -> bool:
    text = str(e)
    return isinstance(e, MemoryError) or "can't allocate memory" in text or "out of memory" in text


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``aiayn`` command."""
    verb = "aiayn"
    try:
        with stop_at_once():  # Ctrl-C: one line and 130 at once, unless the verb says otherwise
            logging.basicConfig(level=logging.INFO, format="%(message)s")
            parser = build_parser()  # imports every verb, and torch with them
            try:
                args = parser.parse_args(argv)
            except SystemExit as e:  # a bad flag (one line printed) or --help: its code
                return e.code if isinstance(e.code, int) else int(e.code is not None)
            verb = f"aiayn {args.verb}"
            name_verb(verb)
            return int(args._run(args) or 0)
    except UserError as e:
        print(f"{verb}: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # an optional extra that a verb imported unchecked
        module = (e.name or "").split(".")[0]
        if module not in EXTRAS:
            raise
        print(f"{verb}: error: {missing_extra(module, EXTRAS[module])}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # inside a verb's interruptible() part, once it has cleaned up
        print(f"{verb}: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # the file system's answer about a path the user gave: one line
        where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
        print(f"{verb}: error: {where or 'I/O'}: {e.strerror or e}", file=sys.stderr)
        return 1
    except (MemoryError, RuntimeError) as e:
        if not _out_of_memory(e):
            raise
        first = " ".join(str(e).split())[:200]
        print(f"{verb}: error: out of memory; try smaller settings ({first})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
