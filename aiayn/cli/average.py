"""Average the parameters of the last N checkpoints into one model (section 6.1).

  aiayn average RUN --last 5 --out base.safetensors       (the paper's base models)
  aiayn average RUN --last 20 --out big.safetensors       (the paper's big models)
  aiayn average RUN/checkpoints/step_00090000 FILE.safetensors ... --last 2 --out avg.safetensors

"For the base models, we used a single model obtained by averaging the last 5 checkpoints,
which were written at 10-minute intervals. For the big models, we averaged the last 20
checkpoints." (6.1) A run directory gives its complete checkpoints by step; directories and
files given one by one keep their order, and the last N of the whole list are averaged.
Only complete checkpoints count (those whose manifest is there), and each is checked against
its manifest. Checkpoints of different architectures or tokenizers are refused. The output
keeps the tokenizer and is written atomically; an existing --out is kept unless --force.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aiayn.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.cli.common import integer

    parser.add_argument(
        "paths", nargs="+", metavar="RUN_OR_CHECKPOINT", help="run dirs, checkpoint dirs, files"
    )
    parser.add_argument(
        "--last",
        type=integer(1),
        default=5,
        metavar="N",
        help="average the last N (default 5; big: 20)",
    )
    parser.add_argument("--out", required=True, metavar="FILE", help="the averaged model file")
    parser.add_argument("--force", action="store_true", help="replace an existing --out")
    parser.add_argument(
        "--no-hash-check",
        action="store_true",
        help="check the checkpoints by size only, not SHA-256 (for huge files)",
    )


def run(args: argparse.Namespace) -> int:
    from aiayn.storage import set_hash_checks

    set_hash_checks(False if args.no_hash_check else None)
    try:
        return _run(args)
    finally:
        set_hash_checks(None)


def _run(args: argparse.Namespace) -> int:
    from aiayn.train.averaging import average_to_file, resolve_model_files

    if args.last < 1:
        raise UserError(f"--last must be >= 1, got {args.last}")
    from aiayn.cli.common import output_file

    out = Path(args.out)
    output_file(out, "--out")
    if out.exists() and not args.force:
        raise UserError(f"{out}: exists; pass --force to replace it")
    from aiayn.weights import read_metadata

    files = resolve_model_files(args.paths)
    for f in files:  # a file that is no checkpoint is named before any advice on --last
        read_metadata(f)
    if len(files) < args.last:
        raise UserError(
            f"--last {args.last}: only {len(files)} checkpoint(s) found in "
            f"{' '.join(args.paths)}; pass --last {len(files)} to average them all"
        )
    chosen = files[-args.last :]
    if out.resolve() in {f.resolve() for f in chosen}:
        raise UserError(f"{out}: is one of the checkpoints being averaged")
    from aiayn.weights import check_file_fits

    for f in chosen:  # an average of weights its config cannot load would be refused later
        check_file_fits(f)
    meta = average_to_file(chosen, out)
    print(f"averaged {len(chosen)} checkpoint(s) into {out}:")
    for f in json.loads(meta["averaged_from"]):
        print(f"  {f}")
    return 0
