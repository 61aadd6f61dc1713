"""Draw a run's training curves as PNG: loss, perplexity, learning rate, BLEU (if logged).

  aiayn plot RUN [--out DIR]

Reads RUN/metrics.jsonl (written by aiayn train) and writes into DIR (default RUN/plots) each
figure that has a point to draw:
  loss.png, perplexity.png  once a train or valid event is logged (every --log-every steps)
  lr.png                    once a train event is logged (its learning rate, Eq. (3))
  bleu.png                  once a validation logged BLEU (aiayn train --valid-bleu)
A run with nothing to plot yet is one line on stderr and exit status 2, and no DIR is made.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a run directory of aiayn train")
    parser.add_argument("--out", metavar="DIR", default=None, help="default RUN/plots")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aiayn.errors import UserError, require
    from aiayn.run_dir import METRICS_FILE
    from aiayn.train.metrics import plot_metrics

    require("matplotlib", "plot")
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise UserError(f"--out {args.out}: exists and is not a directory")
    written = plot_metrics(args.run, args.out)
    if not written:
        raise UserError(f"{Path(args.run) / METRICS_FILE}: no train or valid events to plot yet")
    for path in written:
        print(path)
    return 0
