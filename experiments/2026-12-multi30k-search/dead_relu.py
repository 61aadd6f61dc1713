"""Dead ReLU units: which hidden units of each FFN never fire on the validation split.

  python benchmarks/dead_relu.py RUN [RUN ...] --json benchmarks/results/NAME.json
  python benchmarks/dead_relu.py RUN --every 4 --pairs 300      # every 4th checkpoint, faster

FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (section 3.3, Eq. (2)): a hidden unit i whose
pre-activation (x W_1 + b_1)_i is at most 0 for every input passes no signal and, the ReLU's
gradient being 0 there, gets no gradient through W_1 or b_1 either, so it stays so. For each
complete checkpoint of each run (oldest first), this counts, layer by layer of the encoder and
the decoder, the units of the d_ff that are not positive at any real (non-padding) position of
the run's own validation split, translated with teacher forcing and dropout off
(``aiayn.model.trace``: the FFN's recorded ``hidden``). A learning rate too high for the batch
shows here: `benchmarks/multi30k_trials.py`'s hour round found the encoder's units dying
during the warm-up of a 5e-3 peak (docs/training.md). Reads run directories only; writes
nothing but --json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
from compile_cpu import write_report  # noqa: E402

from aiayn.data.store import load_prepared  # noqa: E402
from aiayn.data.token_budget import batch_from_indices, token_batches  # noqa: E402
from aiayn.errors import UserError  # noqa: E402
from aiayn.model import Transformer, trace  # noqa: E402
from aiayn.run_dir import list_checkpoints  # noqa: E402
from aiayn.train.configure import read_run_config  # noqa: E402
from aiayn.weights import load_model  # noqa: E402

VALID_TOKENS = 4096  # tokens a batch of the validation pass (only memory depends on it)


def fired(model: Transformer, split, pairs: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(encoder, decoder): per layer, a (d_ff,) bool of the units positive at any real position
    of the first PAIRS pairs of SPLIT (teacher forcing; the model's mode: eval for no dropout)."""
    enc: list[torch.Tensor] = []
    dec: list[torch.Tensor] = []
    pad = model.config.pad_id
    sub = _First(split, pairs)
    with torch.no_grad():
        for indices in token_batches(sub, VALID_TOKENS, shuffle=False):
            b = batch_from_indices(sub, indices)
            t = trace(model, b.src, b.tgt_in)
            sides = ((t.encoder, b.src != pad, enc), (t.decoder, b.tgt_in != pad, dec))
            for layers, keep, out in sides:
                for i, layer in enumerate(layers):
                    hidden = layer["ffn"]["hidden"]  # (B, L, F)
                    any_positive = (hidden[keep] > 0).any(dim=0)  # (F,): real positions only
                    if len(out) <= i:
                        out.append(any_positive)
                    else:
                        out[i] |= any_positive
    return enc, dec


class _First:
    """The first N pairs of a split, as a split (what token_batches needs)."""

    def __init__(self, split, n: int) -> None:
        self.split, self.n = split, n
        self.src_lengths, self.tgt_lengths = split.src_lengths[:n], split.tgt_lengths[:n]

    def __len__(self) -> int:
        return self.n

    def pair(self, i: int):
        return self.split.pair(i)


def dead_units(run: Path, every: int, pairs: int | None) -> dict:
    """The run's checkpoints (every EVERY-th, oldest first, and always the latest), each with
    the dead units of every FFN layer on the run's validation split."""
    config = read_run_config(run)
    if config.data is None:
        raise UserError(f"{run}/config.json names no data directory")
    valid = load_prepared(config.data).split("valid")
    n = len(valid) if pairs is None else min(pairs, len(valid))
    checkpoints = list_checkpoints(run)
    if not checkpoints:
        raise UserError(f"{run}: no complete checkpoint in {run / 'checkpoints'}")
    chosen = checkpoints[::every]
    if chosen[-1] != checkpoints[-1]:
        chosen.append(checkpoints[-1])
    rows = []
    for ckpt in chosen:
        model, _ = load_model(ckpt / "model.safetensors")
        enc, dec = fired(model, valid, n)
        rows.append(
            {
                "step": int(ckpt.name[5:]),
                "encoder_dead": [int((~f).sum()) for f in enc],
                "decoder_dead": [int((~f).sum()) for f in dec],
            }
        )
        print(
            f"{run.name} {ckpt.name}: dead of {model.config.d_ff}, encoder "
            f"{rows[-1]['encoder_dead']}, decoder {rows[-1]['decoder_dead']}",
            flush=True,
        )
    return {"run": run.name, "d_ff": model.config.d_ff, "valid_pairs": n, "checkpoints": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run directories of aiayn train")
    ap.add_argument("--every", type=int, default=1, help="every Nth checkpoint (default 1: all)")
    ap.add_argument("--pairs", type=int, help="the first N validation pairs (default: all)")
    ap.add_argument("--json", type=Path, help="write the counts here")
    args = ap.parse_args(argv)
    if args.every < 1 or (args.pairs is not None and args.pairs < 1):
        ap.error(f"--every and --pairs must be at least 1 (given: {args.every}, {args.pairs})")
    try:
        runs = [dead_units(run, args.every, args.pairs) for run in args.runs]
    except UserError as e:
        print(f"dead_relu.py: error: {e}", file=sys.stderr)
        return 2
    pairs = f" --pairs {args.pairs}" if args.pairs else ""
    every = f" --every {args.every}" if args.every != 1 else ""
    command = f"python benchmarks/dead_relu.py{every}{pairs} " + " ".join(r.name for r in args.runs)
    write_report(args.json, {"command": command, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
