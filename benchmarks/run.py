"""aiayn against torch.nn.Transformer and a textbook implementation, in one run.

    python benchmarks/run.py --quick          # a few minutes: tiny only
    python benchmarks/run.py                  # about 15 minutes on 2 cores: tiny and base
    python benchmarks/run.py --device cuda    # the same on a GPU

Measures training throughput (forward, backward and Adam step with the label-smoothed loss, on
token-budget batches of about 4096 target tokens with lengths 10-40), model FLOPs utilisation
against the matmul peak measured here with the same threads, decoding speed (greedy and beam 4,
cached and uncached, against the textbook greedy decode, all under aiayn's length rule) and the
peak memory of a training step (each in a fresh process). Competitors run alternately, step by
step, so a busy machine slows all of them alike; the load average before and after is
reported. Prints a table and writes JSON (``--json``).

The competitors (``COMPETITORS``) do equal work: the same batches, the same optimizer and
dropout only where the paper has it. "nn.Transformer, as users write it" is the one exception,
labelled: ``nn.Transformer(dropout=p)`` with its dropout on the attention probabilities and
after the ReLU as well, as most code builds it. "aiayn --kernels plain" is aiayn with its speed
kernels switched off: what the kernels buy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from baselines import TextbookTransformer, TorchTransformerBaseline
from decoding import MAX_LEN_A, MAX_LEN_B, aiayn_runs
from harness import parser, provenance, write_report

from aiayn import Transformer, model_preset
from aiayn.config import TrainConfig
from aiayn.data import BOS, EOS, InMemorySplit, batch_from_indices, token_batches
from aiayn.decode import max_lengths
from aiayn.flops import training_flops
from aiayn.kernels import FAST
from aiayn.model import PLAIN as PLAIN_OPS
from aiayn.model import Ops
from aiayn.train.schedule import make_optimizer, set_lr

PLAIN = "aiayn --kernels plain"
AS_WRITTEN = "nn.Transformer, as users write it"
COMPETITORS = {
    "aiayn": "aiayn as it trains (kernels fast)",
    PLAIN: "aiayn with its speed kernels off: standard PyTorch ops only",
    "nn.Transformer": "the same model on torch.nn.Transformer, dropout where the paper has it",
    AS_WRITTEN: "nn.Transformer(dropout=p): also on attention probabilities and after the ReLU",
    "textbook": "explicit softmax and masks, per-head view, smoothed-target matrix",
}
IMPLS = tuple(COMPETITORS)
VOCAB = {"tiny": 8000, "base": 37000}
EPS_LS = 0.1


PLAIN_SWITCH = "Transformer(cfg, ops=PLAIN)"  # how the kernels are off (recorded in the JSON)


def ops_of(impl: str) -> Ops:
    """The operations aiayn runs with: FAST as it trains, PLAIN for "aiayn --kernels plain"."""
    return PLAIN_OPS if impl == PLAIN else FAST


def make_batches(vocab: int, max_tokens: int, n_pairs: int, seed: int = 0) -> list:
    """Token-budget batches of random pairs, source lengths 10-40, target within +-20%."""
    rng = np.random.default_rng(seed)
    src_len = rng.integers(10, 41, size=n_pairs)
    tgt_len = np.clip(np.round(src_len * rng.uniform(0.8, 1.2, size=n_pairs)), 10, 40)
    pairs = [
        (rng.integers(4, vocab, size=s).tolist(), rng.integers(4, vocab, size=int(t)).tolist())
        for s, t in zip(src_len, tgt_len, strict=True)
    ]
    split = InMemorySplit(pairs)
    return [batch_from_indices(split, b) for b in token_batches(split, max_tokens, seed=seed)]


def build(impl: str, preset: str, device: torch.device) -> tuple[torch.nn.Module, Callable]:
    """A model and its loss(batch) -> summed label-smoothed loss over the target tokens."""
    cfg = model_preset(preset, vocab_size=VOCAB[preset])
    if impl in ("aiayn", PLAIN):
        model = Transformer(cfg, ops_of(impl))

        def loss(b):  # fast: the output layer and the loss in one chunked pass (kernels)
            return model(b.src, b.tgt_in, target=b.tgt_out, label_smoothing=EPS_LS)[0]

    else:
        if impl == "textbook":
            model = TextbookTransformer(cfg)
        else:
            model = TorchTransformerBaseline(cfg, as_users_write_it=impl == AS_WRITTEN)

        def loss(b):
            return model.loss(model(b.src, b.tgt_in), b.tgt_out, EPS_LS)

    return model.to(device).train(), loss


def make_step(impl: str, preset: str, device: torch.device, bf16: bool) -> Callable:
    model, loss_fn = build(impl, preset, device)
    # aiayn's own optimizer for all of them: Adam 0.9/0.98/1e-9 (5.3), fused where PyTorch has a
    # fused kernel for the device (the CPU included), as `aiayn train` runs it.
    opt = make_optimizer(model.parameters(), TrainConfig())
    set_lr(opt, 1e-4)

    def step(batch) -> None:
        b = batch.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(b) / b.n_tgt_tokens
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_training(preset: str, device, rounds: int, bf16: bool, peak: float) -> dict:
    batches = make_batches(VOCAB[preset], 4096, 2000 if preset == "tiny" else 1200)
    steps = {impl: make_step(impl, preset, device, bf16) for impl in IMPLS}
    times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
    for impl in IMPLS:  # warm-up (allocator, kernels)
        steps[impl](batches[0])
    for r in range(rounds):
        batch = batches[(r + 1) % len(batches)]
        k = r % len(IMPLS)
        order = IMPLS[k:] + IMPLS[:k]  # rotate who goes first
        for impl in order:
            sync(device)
            t = time.perf_counter()
            steps[impl](batch)
            sync(device)
            times[impl].append(time.perf_counter() - t)
    used = [batches[(r + 1) % len(batches)] for r in range(rounds)]
    tgt = sum(b.n_tgt_tokens for b in used)
    src = sum(b.n_src_tokens for b in used)
    cfg = model_preset(preset, vocab_size=VOCAB[preset])
    flops = sum(
        training_flops(len(b), b.src.size(1), b.tgt_in.size(1), cfg, b.n_tgt_tokens) for b in used
    )
    result = {}
    for impl in IMPLS:
        med = statistics.median(times[impl])
        total = med * rounds  # median step time, scaled to the batches used
        result[impl] = {
            "step_s_median": med,
            "tgt_tokens_per_s": tgt / total,
            "tokens_per_s": (src + tgt) / total,
            "mfu": flops / total / peak,
        }
    result["batch_tgt_tokens_avg"] = tgt / rounds
    return result


def bench_memory(preset: str, threads: int, device: str) -> dict:
    """Peak RSS of two training steps, each implementation in a fresh process."""
    out = {}
    for impl in IMPLS:
        cmd = [sys.executable, __file__, "--_memory", impl, preset, "--threads", str(threads)]
        cmd += ["--device", device]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        out[impl] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def _vm(field: str) -> float:
    """A field of /proc/self/status in MiB (VmRSS: now; VmHWM: the peak since exec or reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory_child(impl: str, preset: str, device: torch.device) -> None:
    """Peak resident memory of two training steps, in a fresh process (Linux /proc)."""
    batches = make_batches(VOCAB[preset], 4096, 400)
    step = make_step(impl, preset, device, bf16=False)
    before = _vm("VmRSS")  # model and optimizer built, nothing run yet
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current RSS
    step(batches[0])
    step(batches[1])
    print(json.dumps({"peak_rss_mib": _vm("VmHWM"), "before_step_mib": before}))


def bench_decoding(device, n_sent: int, quick: bool) -> tuple[dict, dict]:
    """Sentences per second, and output tokens a sentence, of every decoding competitor.

    aiayn's greedy and beam 4, cached and uncached, and the textbook greedy decode, all under
    aiayn's length rule (``decoding.py``): at most |X| output tokens, EOS included, and a
    sentence stops at its EOS.
    """
    cfg = model_preset("tiny", vocab_size=VOCAB["tiny"])
    ours = Transformer(cfg, FAST).to(device).eval()
    book = TextbookTransformer(cfg).to(device).eval()
    rng = np.random.default_rng(1)
    lengths = rng.integers(20, 31, size=n_sent)
    src = torch.zeros(n_sent, int(lengths.max()) + 1, dtype=torch.long)  # (B, S)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.from_numpy(rng.integers(4, cfg.vocab_size, size=n))
        src[i, n] = EOS
    src = src.to(device)
    limit = max_lengths(src, MAX_LEN_A, MAX_LEN_B)  # (B,): the same rule for every method
    runs: dict[str, Callable] = dict(aiayn_runs(ours, src))  # name -> callable
    runs["textbook greedy"] = lambda: book.greedy(src, limit, BOS, EOS)
    times: dict[str, list[float]] = {k: [] for k in runs}
    tokens: dict[str, float] = {}
    reps = 1 if quick else 2
    for _ in range(reps):
        for name, fn in runs.items():
            sync(device)
            t = time.perf_counter()
            with torch.inference_mode():
                out = fn()
            sync(device)
            times[name].append(time.perf_counter() - t)
            tokens[name] = _mean_output_tokens(out)
    return {name: n_sent / min(ts) for name, ts in times.items()}, tokens


def _mean_output_tokens(out) -> float:
    """Mean output length, EOS included: from aiayn's hypotheses or the textbook's tensor."""
    if isinstance(out, torch.Tensor):  # (B, t), PAD after EOS
        return float((out != 0).sum()) / out.size(0)
    return sum(len(hyps[0].tokens) for hyps in out) / len(out)


def main() -> int:
    ap = parser(__doc__, quick="tiny only, few steps (a few minutes)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (GPU)")
    ap.add_argument(
        "--presets", nargs="+", choices=["tiny", "base"], help="default: tiny (--quick) or both"
    )
    ap.add_argument("--_memory", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    if args._memory:
        memory_child(args._memory[0], args._memory[1], device)
        return 0
    presets = args.presets or (["tiny"] if args.quick else ["tiny", "base"])
    load_before = os.getloadavg()[0]
    report: dict = {
        **provenance(args.threads, args.device, quick=args.quick),
        "competitors": COMPETITORS,
        "plain_kernels_switch": PLAIN_SWITCH,
    }
    report["machine"]["load_before"] = load_before
    peak = report["machine"]["matmul_peak_gflops"] * 1e9
    print(f"matmul peak (fp32, {args.threads} threads): {peak / 1e9:.1f} GFLOP/s")
    report["training"] = {}
    for preset in presets:
        rounds = (3 if args.quick else 16) if preset == "tiny" else 3
        res = bench_training(preset, device, rounds, args.bf16, peak)
        report["training"][preset] = res
        avg = res["batch_tgt_tokens_avg"]
        print(f"\ntraining, {preset} (about {avg:.0f} target tokens a batch; equal work")
        print(f"  but for {AS_WRITTEN!r}, which also drops attention probabilities and ReLUs)")
        print(f"  {'':34s} {'tgt tok/s':>10s} {'tok/s':>10s} {'MFU':>6s} {'aiayn/x':>8s}")
        for impl in IMPLS:
            r = res[impl]
            ratio = res["aiayn"]["tgt_tokens_per_s"] / r["tgt_tokens_per_s"]
            print(
                f"  {impl:34s} {r['tgt_tokens_per_s']:10.0f} {r['tokens_per_s']:10.0f} "
                f"{r['mfu']:6.2f} {ratio:8.2f}"
            )
    if device.type == "cpu":
        report["memory"] = {p: bench_memory(p, args.threads, args.device) for p in presets}
        for preset, res in report["memory"].items():
            print(f"\npeak RSS of a training step, {preset} (MiB)")
            for impl in IMPLS:
                ratio = res["aiayn"]["peak_rss_mib"] / res[impl]["peak_rss_mib"]
                print(f"  {impl:34s} {res[impl]['peak_rss_mib']:10.0f}   aiayn/x {ratio:5.2f}")
    speed, tokens = bench_decoding(device, 50 if args.quick else 200, args.quick)
    report["decoding"], report["decoding_output_tokens"] = speed, tokens
    print("\ndecoding, tiny (sentences per second; output tokens a sentence, EOS included)")
    for name, v in speed.items():
        print(f"  {name:24s} {v:8.1f} {tokens[name]:8.1f}")
    report["machine"]["load_after"] = os.getloadavg()[0]
    print(
        f"\nload average before/after: {report['machine']['load_before']:.2f} / "
        f"{report['machine']['load_after']:.2f} (on {os.cpu_count()} cores)"
    )
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
