"""Replay the study note's 14 steps on its toy example, proving each one; --html writes a report.

The default example is the note's: d_model 6, a vocabulary of 8 words ("I love you" and
"我 爱 你" with <s> and </s>), 2 heads, one encoder and one decoder layer. Every step is computed
by hand and checked against the model; then the loss row by row, one backward pass (hand-written
= autograd), one optimizer step, the positional-encoding explanation, and where the note and the
paper differ.

With --checkpoint (anything `aiayn translate` takes) the same 14 steps and the loss run on a
trained model: the sentence ("I love you." unless --source gives another) in the model's BPE
pieces, and the model's own translation (beam 4, alpha 0.6, as translate) as the target. Every
matrix is proved whole and shown in part: its first --rows rows and --cols columns, the heads of
--heads (numbered from 1, as in the note), and each output position's most probable tokens.
Examples:

  aiayn walkthrough
  aiayn walkthrough --lang zh
  aiayn walkthrough --source "the cat sat" --target "le chat" --d-model 8 --n-heads 4
  aiayn walkthrough --html walkthrough.html
  aiayn walkthrough --checkpoint runs/base --source "I love you." --heads 1,2 --lang zh
"""

from __future__ import annotations

import argparse
import sys

# With --checkpoint these settings describe the sentence and the page; the rest, the toy model.
TRAINED_SETTINGS = ("source", "lang", "decimals", "label_smoothing")


def heads(text: str) -> tuple[int, ...]:
    """An argparse type: head numbers from 1, separated by commas ("1,2"), in order, once each."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"must be head numbers from 1, separated by commas (1,2), got {text!r}"
        )
    return tuple(sorted(set(values)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.cli.common import add_config_args, integer
    from aiayn.walkthrough.example import WalkthroughConfig

    parser.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="write the walkthrough as one self-contained HTML page instead of printing it",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="PATH",
        default=None,
        help="walk through a trained model instead of the toy one: what aiayn translate takes "
        "(model file, checkpoint or run directory); the target is its own translation of --source "
        "(default 'I love you.')",
    )
    parser.add_argument(
        "--heads",
        type=heads,
        default=None,
        metavar="I,J",
        help="the heads shown, from 1 (default: 1,2 of a trained model, every head of the toy); "
        "every head is proved",
    )
    parser.add_argument(
        "--rows",
        type=integer(1, 10000),
        default=None,
        metavar="N",
        help="show the first N rows of each matrix (default: 8 with --checkpoint, all otherwise)",
    )
    parser.add_argument(
        "--cols",
        type=integer(1, 10000),
        default=None,
        metavar="N",
        help="show the first N columns of each matrix (default: 8 with --checkpoint, all "
        "otherwise)",
    )
    add_config_args(
        parser, WalkthroughConfig, title="the example (defaults: the study note's toy example)"
    )


def run(args: argparse.Namespace) -> int:
    import dataclasses
    from pathlib import Path

    from aiayn.cli.common import config_from_args, flag_values, output_file
    from aiayn.errors import UserError, require
    from aiayn.storage import atomic_write
    from aiayn.walkthrough import (
        NOTE_SENTENCE,
        TRAINED_VIEW,
        ProofError,
        View,
        WalkthroughConfig,
        build,
        build_trained,
        render_html,
        render_text,
    )

    if args.html is not None:
        require("latex2mathml", "html")
    output_file(args.html, "--html")
    shown = {"rows": args.rows, "cols": args.cols, "heads": args.heads}
    shown = {k: v for k, v in shown.items() if v is not None}
    if args.checkpoint is not None:
        toy = [n for n in flag_values(WalkthroughConfig, args) if n not in TRAINED_SETTINGS]
        if toy:
            flag = "--" + toy[0].replace("_", "-")
            what = "the model's own translation" if toy[0] == "target" else "the model's own"
            raise UserError(f"{flag}: a setting of the toy model; with --checkpoint {what} is used")
        base = WalkthroughConfig(source=NOTE_SENTENCE)
        cfg = config_from_args(WalkthroughConfig, args, base=base)
        view = dataclasses.replace(TRAINED_VIEW, **shown)
    else:
        cfg = config_from_args(WalkthroughConfig, args)
        view = View(**shown)
    try:
        if args.checkpoint is None:
            doc = build(cfg, view)
        else:
            doc = build_trained(args.checkpoint, cfg, view)
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
