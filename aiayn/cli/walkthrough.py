"""Replay the study note's 14 steps on its toy example, proving each one; --html writes a report.

The default example is the note's: d_model 6, a vocabulary of 8 words ("I love you" and
"我 爱 你" with <s> and </s>), 2 heads, one encoder and one decoder layer. Every step is computed
by hand and checked against the model; then the loss row by row, one backward pass (hand-written
= autograd), one optimizer step, the positional-encoding explanation, and where the note and the
paper differ. Examples:

  aiayn walkthrough
  aiayn walkthrough --lang zh
  aiayn walkthrough --source "the cat sat" --target "le chat" --d-model 8 --n-heads 4
  aiayn walkthrough --html walkthrough.html
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.cli.common import add_config_args
    from aiayn.walkthrough.example import WalkthroughConfig

    parser.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="write the walkthrough as one self-contained HTML page instead of printing it",
    )
    add_config_args(
        parser, WalkthroughConfig, title="the example (defaults: the study note's toy example)"
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aiayn.cli.common import config_from_args, output_file
    from aiayn.storage import atomic_write
    from aiayn.walkthrough import ProofError, WalkthroughConfig, build, render_html, render_text

    output_file(args.html, "--html")
    cfg = config_from_args(WalkthroughConfig, args)
    try:
        doc = build(cfg)
    except ProofError as e:
        print(f"aiayn walkthrough: a step did not prove: {e}", file=sys.stderr)
        return 1
    if args.html is None:
        sys.stdout.write(render_text.render(doc, cfg.decimals))
        return 0
    page = render_html.render(doc, cfg.decimals)
    path = Path(args.html)
    atomic_write(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    print(
        f"wrote {path} ({len(page) // 1024} KiB): {len(doc.sections)} sections, "
        f"{len(doc.checks)} checks passed"
    )
    return 0
