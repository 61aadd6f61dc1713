"""Rerun Table 3's model variations (section 6.2) at CPU scale, resumably, and report them.

  aiayn table3                              (the whole table: 18 variations and the base)
  aiayn table3 --rows A,C --seeds 2 --out runs/table3
  aiayn table3 --rows A --steps 20 --seeds 1 --out /tmp/t3    (a check: about 2 minutes)
  aiayn table3 --report-only --out runs/table3                (rebuild the report)

Each row of the paper's Table 3 changes one thing of the base model; here the same change, in
the same proportion, is made around a small base (N 3, d_model 128, d_ff 512, h 8, d_k = d_v
16: the paper's widths divided by 4, half its depth), printed first beside the paper's. Every
run trains the same number of updates (--steps) on the same token-budget batches of Multi30k
EN-DE (--multi30k-dir / $AIAYN_MULTI30K, or a download from its official repository;
--source packaged is the labelled fallback), for each seed; the base row gets --base-seeds
seeds. Each run is then scored on the dev split as in Table 3: perplexity per word-piece
(teacher-forced, no label smoothing) and sacreBLEU with beam 4, alpha 0.6 and no checkpoint
averaging; its parameters, steps, training minutes and training FLOPs are recorded.

Below 200 steps a run is a check, scored on the first 100 dev pairs (--dev-limit N sets it;
0 scores all): an untrained model never emits EOS, and decoding the whole dev split to its
maximum length would take most of the time. protocol.json records the limit, so that a check
and the table never share a results directory.

OUT receives protocol.json (the shared settings: another --steps is refused there),
results.jsonl (one record per finished run, with its config, seed, commit and the machine's
matmul peak), curves.json (each run's dev PPL every 100 updates, a tenth of a shorter budget,
and its training loss per 50 updates), hyps/ (the dev translations, for the paired
bootstrap), runs/ (checkpoints), report.md (and the same as one self-contained page,
report.html) and plots/ (table3-{A..E}.png, and curves-{A..E}.png once runs have curves).
Interrupted (Ctrl-C, a kill), the same command continues the run it was in from its last
checkpoint and never redoes a finished run. A damaged protocol.json or results.jsonl (named
with its line), an OUT/data of another corpus and a --multi30k-url that is not a URL are
refused in one line before anything is run or written.

How long: a base-sized run of 1000 steps trains in 4.4 to 5.9 minutes with 2 threads on an
otherwise idle 2-core machine (10.6 to 17.6 on one thread of a shared one) and is scored in
under a minute; the whole table (18 variations x 2 seeds + 3 base seeds = 39 runs) takes about
3 hours at the first pace (the committed run, on 1 and then 2 threads, took 4.6 hours),
meant to run across sessions: rerun the same command to continue.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aiayn.cli.common import integer, threads
from aiayn.table3.run import (  # the runner's module imports nothing heavy at its top
    QUICK_DEV_LIMIT,
    QUICK_STEPS,
    ROWS,
)


def _rows(text: str) -> tuple[str, ...]:
    rows = tuple(r.strip().upper() for r in text.split(",") if r.strip())
    bad = [r for r in rows if r not in ROWS]
    if not rows or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give row groups of Table 3 separated by commas, from A, B, C, D, E"
        )
    return tuple(dict.fromkeys(rows))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.data.corpora.multi30k import ENV, URL_ENV
    from aiayn.table3.results import Protocol

    p = Protocol()
    parser.add_argument(
        "--rows",
        type=_rows,
        default=ROWS,
        help="row groups to run, e.g. A,C (default A,B,C,D,E)",
    )
    parser.add_argument(
        "--steps",
        type=integer(1),
        default=p.steps,
        metavar="N",
        help=f"updates per run, the same for every run (default {p.steps})",
    )
    parser.add_argument(
        "--seeds",
        type=integer(1),
        default=2,
        metavar="N",
        help="seeds 1..N for every variation (default 2)",
    )
    parser.add_argument(
        "--base-seeds",
        type=integer(1),
        default=None,
        metavar="N",
        help="seeds of the base row (default: --seeds + 1, so 3)",
    )
    parser.add_argument(
        "--dev-limit",
        type=integer(0),
        default=None,
        metavar="N",
        help=f"score the first N dev pairs only, a check (0: all; default {QUICK_DEV_LIMIT} "
        f"below {QUICK_STEPS} steps, else all); protocol.json records it",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default="runs/table3",
        help="results directory (default runs/table3)",
    )
    parser.add_argument(
        "--source",
        choices=["auto", "multi30k", "packaged"],
        default="auto",
        help="corpus: auto (Multi30k, else the packaged one, labelled), "
        "multi30k or packaged (default auto)",
    )
    parser.add_argument(
        "--multi30k-dir",
        metavar="DIR",
        default=None,  # else $AIAYN_MULTI30K, read where Multi30k is opened
        help=f"a local copy of Multi30k's raw files (default ${ENV})",
    )
    parser.add_argument(
        "--multi30k-url",
        metavar="URL",
        default=None,  # else $AIAYN_MULTI30K_URL, read by run() so that its errors name it
        help=f"a mirror to download Multi30k from (default ${URL_ENV})",
    )
    parser.add_argument(
        "--threads",
        type=threads,
        default=0,
        metavar="N",
        help="intra-op threads (default 0: all cores)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: write OUT's report from its results",
    )


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    import torch

    from aiayn.data.corpora.multi30k import mirror
    from aiayn.errors import require
    from aiayn.table3.run import run_table3, write_report

    require("matplotlib", "plot")  # the report's plots: said before hours of runs, not after
    out = Path(args.out)
    url = mirror(args.multi30k_url)  # checked first: a bad one is one line naming its origin
    if args.report_only:
        _say(f"report: {write_report(out)}")
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    report = run_table3(
        out,
        rows=args.rows,
        steps=args.steps,
        seeds=args.seeds,
        base_seeds=args.base_seeds,
        dev_limit=args.dev_limit,
        source=args.source,
        multi30k_dir=args.multi30k_dir,
        multi30k_url=url,
        say=_say,
    )
    _say(f"report: {report}")
    return 0
