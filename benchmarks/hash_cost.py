"""What verification on load costs: a base-size checkpoint written, then loaded with and without
SHA-256 checks (docs/reliability.md).

  python benchmarks/hash_cost.py            # the base model (about 63M parameters)
  python benchmarks/hash_cost.py --quick    # the tiny preset, a smoke test

Prints the sizes of model.safetensors and trainer.pt, the seconds to write a checkpoint, to
load it with hash checks (the default) and with sizes only (--no-hash-check), and SHA-256's
throughput on this machine. Run it on a quiet machine: the figures are timings.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch
from harness import parser, provenance, write_report

from aiayn import run_dir as layout
from aiayn import storage
from aiayn.config import TrainConfig, model_preset
from aiayn.model import Transformer
from aiayn.train import checkpoints as ckpt
from aiayn.train.schedule import make_optimizer


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = parser(__doc__, quick="the tiny preset")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None, help="where to write (a real disk)")
    args = ap.parse_args()
    run = provenance(args.threads)
    preset = "tiny" if args.quick else "base"
    cfg = model_preset(preset, vocab_size=37000 if preset == "base" else 1000)
    model = Transformer(cfg)
    optimizer = make_optimizer(model.parameters(), TrainConfig())
    for p in model.parameters():  # Adam's moments exist, as in a real checkpoint
        p.grad = torch.zeros_like(p)
    optimizer.step()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        run = Path(tmp) / "run"
        progress = ckpt.Progress(step=1)
        write = best_of(
            args.repeats,
            lambda: ckpt.save_checkpoint(run, model, optimizer, progress, [ckpt.rng_state()]),
        )
        d = layout.latest_checkpoint(run)
        sizes = {f.name: f.stat().st_size for f in d.iterdir()}
        fresh = Transformer(cfg)
        fresh_opt = make_optimizer(fresh.parameters(), TrainConfig())

        def load(hashes: bool) -> None:
            storage.set_hash_checks(hashes)
            try:
                ckpt.load_checkpoint(d, fresh, fresh_opt)
            finally:
                storage.set_hash_checks(None)

        with_hash = best_of(args.repeats, lambda: load(True))
        sizes_only = best_of(args.repeats, lambda: load(False))
        total = sum(sizes.values())
        sha = best_of(args.repeats, lambda: [storage.sha256_file(d / f) for f in sizes])
    print(f"preset {preset}: {model.num_parameters():,} parameters")
    for name, size in sorted(sizes.items()):
        print(f"  {name:<18} {size / 2**20:9.1f} MiB")
    print(f"write a checkpoint          {write:7.2f} s")
    print(f"load, SHA-256 checked       {with_hash:7.2f} s")
    print(f"load, sizes only            {sizes_only:7.2f} s")
    print(f"SHA-256 of the files        {sha:7.2f} s  ({total / 2**20 / sha:.0f} MiB/s)")
    seconds = {"write": write, "load_hashed": with_hash, "load_sizes_only": sizes_only}
    report = {"preset": preset, "bytes": sizes, "seconds": {**seconds, "sha256": sha}, **run}
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
