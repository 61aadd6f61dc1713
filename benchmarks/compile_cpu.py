"""torch.compile on the CPU: is a training step of the Multi30k model faster compiled?

  python benchmarks/compile_cpu.py --json benchmarks/results/compile-cpu.json   # ~10 minutes
  python benchmarks/compile_cpu.py --quick                                        # a smoke test

Times one training step (forward with the label-smoothed loss, backward, Adam) of the Multi30k
benchmark's `small` shape (d_model 128, d_ff 256, 4 heads, 4 + 4 layers, BPE 10000, dropout
0.2) on 2,048-token batches, four ways: eager and compiled, each with the plain PyTorch ops
(`PLAIN`) and with aiayn's CPU kernels (`FAST`, what `aiayn train` runs on a CPU). The batches
are token-budget batches (section 5.1) of synthetic pairs whose lengths follow Multi30k's
(about 13 source and 15 target BPE tokens, an even spread of 6 to 40), so nothing is
downloaded; --data DIR takes the training split of a prepared corpus instead.

Compiled is `torch.compile(model, dynamic=True)` with Dynamo's `capture_scalar_outputs` on (the
loss's token count would otherwise break the graph) and a cache of 64 graphs (the batch shapes
vary). Each variant has its own model and optimizer from the same initial weights; the first
--warmup steps (compilation included, timed apart) are not counted; then the variants take
turns batch by batch, so a slow spell of the machine falls on all of them, over the --steps
timed batches twice: the first pass meets batch shapes not seen before (a compiled model may
compile again, a cost a training pays), the second repeats them (the steady state). Reports the
milliseconds a step of each in each pass and its speed relative to eager FAST, the warm-up
time (compilation included) and Dynamo's graph count and graph breaks. `aiayn train
--compile` is ignored on a CPU because of what this measures (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import numpy as np
import torch
from harness import at_least_1, parser, provenance, write_report

from aiayn.config import ModelConfig
from aiayn.data import layout
from aiayn.data.batch import Batch
from aiayn.data.splits import InMemorySplit
from aiayn.data.token_budget import batch_from_indices, token_batches
from aiayn.kernels import FAST
from aiayn.model import PLAIN, Transformer

VARIANTS = ("eager-fast", "eager-plain", "compiled-plain", "compiled-fast")


def synthetic_batches(n_pairs: int, max_tokens: int, vocab: int, seed: int) -> list[Batch]:
    """Token-budget batches of N_PAIRS random pairs with Multi30k-like lengths."""
    rng = np.random.default_rng(seed)
    src_len = np.clip(rng.normal(13, 4.5, n_pairs), 6, 40).astype(int)  # (N,)
    tgt_len = np.clip(src_len + rng.normal(2, 3, n_pairs), 6, 40).astype(int)  # (N,)
    pairs = [
        (rng.integers(4, vocab, s).tolist(), rng.integers(4, vocab, t).tolist())
        for s, t in zip(src_len, tgt_len, strict=True)
    ]
    split = InMemorySplit(pairs)
    return [batch_from_indices(split, b) for b in token_batches(split, max_tokens, seed=seed)]


def data_batches(data: Path, max_tokens: int, seed: int) -> list[Batch]:
    from aiayn.data.store import load_prepared

    split = load_prepared(data).split("train")
    return [batch_from_indices(split, b) for b in token_batches(split, max_tokens, seed=seed)]


def make(cfg: ModelConfig, variant: str) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """One variant's network (compiled or not) and its Adam (section 5.3), weights of seed 0."""
    torch.manual_seed(0)
    model = Transformer(cfg, FAST if variant.endswith("fast") else PLAIN).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    if variant.startswith("compiled"):
        return torch.compile(model, dynamic=True), opt  # type: ignore[return-value]
    return model, opt


def step(
    net: torch.nn.Module, opt: torch.optim.Optimizer, batch: Batch, bf16: bool = False
) -> float:
    """One update (its matmuls in bf16 under autocast when BF16); its label-smoothed loss per
    target token."""
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with cast:
        smoothed, _, n = net(batch.src, batch.tgt_in, target=batch.tgt_out, label_smoothing=0.1)
    (smoothed / n).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(smoothed.detach()) / int(n)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, quick="tiny model, 3 + 3 steps: a smoke test")
    ap.add_argument("--data", type=Path, help="a prepared corpus (default: synthetic pairs)")
    ap.add_argument("--steps", type=at_least_1, default=100, help="timed steps (default 100)")
    ap.add_argument("--warmup", type=at_least_1, default=20, help="untimed first (default 20)")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    args = ap.parse_args(argv)
    if args.data is not None and not layout.is_complete(args.data):
        ap.error(f"--data {args.data}: not a prepared corpus (no {layout.MANIFEST})")
    machine = provenance(args.threads, argv=argv)  # the peak measured before the steps
    import torch._dynamo as dynamo

    dynamo.config.capture_scalar_outputs = True
    dynamo.config.cache_size_limit = 64
    if args.quick:
        args.steps, args.warmup = 3, 3
        cfg = ModelConfig(vocab_size=200, d_model=32, n_heads=2, d_ff=64, n_layers=1, dropout=0.2)
    else:
        cfg = ModelConfig(
            vocab_size=10000, d_model=128, n_heads=4, d_ff=256, n_layers=4, dropout=0.2
        )
    need = args.warmup + args.steps
    if args.data is None:
        batches = synthetic_batches(max(2000, need * 160), 2048, cfg.vocab_size, seed=1)
    else:
        batches = data_batches(args.data, 2048, seed=1)
    if len(batches) < need:
        ap.error(f"{len(batches)} batches, fewer than --warmup + --steps ({need})")
    nets = {v: make(cfg, v) for v in args.variants}
    compile_s: dict[str, float] = {}
    for v, (net, opt) in nets.items():
        t0 = time.perf_counter()
        for b in batches[: args.warmup]:
            step(net, opt, b)
        compile_s[v] = time.perf_counter() - t0
        print(f"{v}: {args.warmup} warm-up steps in {compile_s[v]:.1f} s", flush=True)
    # pass 1 meets new batch shapes (a compiled model may compile again); pass 2 repeats the
    # same batches, every shape seen: the steady state
    spent = {v: [0.0, 0.0] for v in nets}
    for p in (0, 1):
        for b in batches[args.warmup : need]:
            for v, (net, opt) in nets.items():  # in turns, batch by batch
                t0 = time.perf_counter()
                step(net, opt, b)
                spent[v][p] += time.perf_counter() - t0
    base = spent.get("eager-fast")
    rows = {}
    for v, (first, second) in spent.items():
        rows[v] = {
            "ms_per_step_first_pass": round(1000 * first / args.steps, 2),
            "ms_per_step_second_pass": round(1000 * second / args.steps, 2),
            "warmup_s": round(compile_s[v], 1),
        }
        if base:
            rows[v]["speed_vs_eager_fast_first_pass"] = round(base[0] / first, 3)
            rows[v]["speed_vs_eager_fast_second_pass"] = round(base[1] / second, 3)
        print(
            f"{v}: {rows[v]['ms_per_step_first_pass']:.1f} ms a step in pass 1 (new shapes), "
            f"{rows[v]['ms_per_step_second_pass']:.1f} in pass 2 (shapes seen)",
            flush=True,
        )
    from torch._dynamo.utils import counters

    breaks = {k.splitlines()[0]: n for k, n in counters["graph_break"].items()}
    result = {
        "benchmark": "a training step, eager against torch.compile, on the CPU",
        "model": {k: getattr(cfg, k) for k in ("d_model", "d_ff", "n_heads", "n_layers")},
        "vocab_size": cfg.vocab_size,
        "max_tokens": 2048,
        "batches": "synthetic, Multi30k-like lengths" if args.data is None else "prepared data",
        "steps": args.steps,
        "warmup_steps": args.warmup,
        "variants": rows,
        "graph_breaks": breaks,
        "graphs": counters["stats"].get("unique_graphs", 0),
        **machine,
    }
    write_report(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
