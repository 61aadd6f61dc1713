"""bf16 autocast on the CPU: is a training step of the Multi30k models faster in bf16?

  python benchmarks/bf16_cpu.py --json benchmarks/results/bf16-cpu.json   # ~5 minutes
  python benchmarks/bf16_cpu.py --quick                                    # a smoke test

Times one training step (forward with the label-smoothed loss, backward, Adam: section 5.3) of
the Multi30k benchmark's `small` (d_model 128, d_ff 256) and `mid` (d_model 192, d_ff 512)
shapes, 4 heads, 4 + 4 layers, BPE 10000, dropout 0.2, on 2,048-token batches of synthetic
pairs with Multi30k's lengths (benchmarks/compile_cpu.py's), in float32 and under
`torch.autocast("cpu", dtype=torch.bfloat16)` (what `aiayn train --bf16` runs), both with
aiayn's CPU kernels. The weights, their gradients, Adam's state and the loss stay float32;
the matmuls run in bf16. Each variant has its own model and optimizer from the same initial
weights; after --warmup untimed steps they take turns batch by batch, so a slow spell of the
machine falls on both. Reports the milliseconds a step and bf16's speed relative to float32,
and whether this CPU runs bf16 natively (AVX512-BF16 or AMX, through oneDNN): where it does
not, bf16 is emulated and slower, so `--bf16` stays off by default (docs/performance.md).
"""

from __future__ import annotations

import sys
import time

import torch
from compile_cpu import step, synthetic_batches
from harness import at_least_1, parser, provenance, write_report

from aiayn.config import ModelConfig
from aiayn.data.batch import Batch
from aiayn.kernels import FAST
from aiayn.model import Transformer
from aiayn.train.runtime import cpu_bf16_native

SHAPES = {"small": (128, 256), "mid": (192, 512)}  # benchmarks/multi30k.py's (d_model, d_ff)
VARIANTS = ("float32", "bf16")


def time_shape(cfg: ModelConfig, batches: list[Batch], warmup: int, steps: int) -> dict:
    """Both variants of one shape, in turns: ms a step, bf16's speed relative to float32."""
    nets = {}
    for v in VARIANTS:
        torch.manual_seed(0)
        model = Transformer(cfg, FAST).train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
        nets[v] = (model, opt)
    for v, (net, opt) in nets.items():
        for b in batches[:warmup]:
            step(net, opt, b, v == "bf16")
    spent = dict.fromkeys(VARIANTS, 0.0)
    loss = dict.fromkeys(VARIANTS, 0.0)
    for b in batches[warmup : warmup + steps]:
        for v, (net, opt) in nets.items():
            t0 = time.perf_counter()
            loss[v] = step(net, opt, b, v == "bf16")
            spent[v] += time.perf_counter() - t0
    out = {v: {"ms_per_step": round(1000 * spent[v] / steps, 2)} for v in VARIANTS}
    for v in VARIANTS:
        out[v]["last_loss"] = round(loss[v], 4)
    out["bf16_speed_vs_float32"] = round(spent["float32"] / spent["bf16"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, quick="tiny models, 3 + 3 steps: a smoke test")
    ap.add_argument("--steps", type=at_least_1, default=100, help="timed steps (default 100)")
    ap.add_argument("--warmup", type=at_least_1, default=10, help="untimed first (default 10)")
    args = ap.parse_args(argv)
    run = provenance(args.threads, argv=argv)
    if args.quick:
        args.steps, args.warmup = 3, 3
    need = args.warmup + args.steps
    results = {}
    for shape, (d_model, d_ff) in SHAPES.items():
        if args.quick:
            d_model, d_ff = d_model // 8, d_ff // 8
        vocab = 200 if args.quick else 10000
        cfg = ModelConfig(
            vocab_size=vocab, d_model=d_model, n_heads=4, d_ff=d_ff, n_layers=4, dropout=0.2
        )
        batches = synthetic_batches(max(2000, need * 160), 2048, vocab, seed=1)
        results[shape] = time_shape(cfg, batches, args.warmup, args.steps)
        r = results[shape]
        print(
            f"{shape}: float32 {r['float32']['ms_per_step']:.1f} ms a step, bf16 "
            f"{r['bf16']['ms_per_step']:.1f}: bf16 x{r['bf16_speed_vs_float32']:.2f}",
            flush=True,
        )
    result = {
        "benchmark": "a training step, float32 against bf16 autocast, on the CPU (FAST kernels)",
        "max_tokens": 2048,
        "vocab_size": 200 if args.quick else 10000,
        "batches": "synthetic, Multi30k-like lengths",
        "steps": args.steps,
        "warmup_steps": args.warmup,
        "shapes": results,
        **run,
    }
    run["machine"]["bf16_native"] = cpu_bf16_native()
    run["machine"]["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    write_report(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
