"""Multi30k EN-DE, the standard small benchmark: train for a budget, choose on valid, then BLEU.

    python benchmarks/multi30k.py --multi30k-dir DIR --minutes 40 60
    python benchmarks/multi30k.py --minutes 18 --no-test --record "dropout 0.3" --dropout 0.3
    python benchmarks/multi30k.py --steps 8000 --patience 2000 --run runs/converged --resume

Prepares Multi30k task 1 (train 29,000 / val 1,014 / test_2016_flickr 1,000) with a shared BPE,
trains a shape (`--shape`) with the paper's recipe and the settings below for a budget of
training minutes (`--minutes`) or of updates (`--steps`), then, at each budget, chooses on the
VALIDATION split how many of the last checkpoints to average (section 6.1: each candidate of
--average is averaged and scored on val with --beam and --alpha) and translates test2016
once, with the chosen average. Budgets increase: the run is evaluated at each, then trains on.

- `--no-test` scores the validation split only: that is how the settings themselves are chosen
  (a trial per setting, the test split left alone); `--record NAME` then appends the trial to
  benchmarks/results/multi30k-trials.jsonl (`--trials-file`).
- `--patience P` (with `--steps`): to convergence. After the last step budget the run trains on
  while the validation sacreBLEU of its latest checkpoint (checked every --check-every updates)
  still rose within the last P updates, at most --max-updates; then the same choice and test.
- `--resume` continues an existing --run where it stopped (its checkpoints, the budgets already
  evaluated and the validation curve are kept), across sessions; without it an existing --run is
  refused, and replaced only with --overwrite. Resuming a finished `--no-test` trial without
  `--no-test` makes it a final: nothing is trained or re-chosen, and test2016 is scored once with
  the average the trial chose on valid (a rerun of the same seed would train the same model).

Reports sacreBLEU (cased, 13a, with its signature), the lowercased sacreBLEU, and the other
figures of `aiayn evaluate`. Writes RUN/multi30k.json (after every budget) with the budgets, the
machine and the command. The prepared data (RUN-data, or `--data` for runs that share it) is
reused while its BPE size matches --vocab-size. The best text-only small Transformer on this
test set we know of reaches 41.0 (Moses-tokenized, lowercased BLEU; 4 + 4 layers, d_model 128,
to convergence).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sys
import time
from pathlib import Path

import torch

from aiayn.cli import main as aiayn
from aiayn.flops import matmul_peak

ROOT = Path(__file__).resolve().parent.parent
TRIALS_FILE = ROOT / "benchmarks" / "results" / "multi30k-trials.jsonl"

# The model shapes trialled (every other setting is the paper's unless a flag below says so).
# "tiny" is the preset (7.6M parameters with BPE 8000); "small" is the shape of the best
# published small Transformer on this test set (fairseq, 4 + 4 layers, d_model 128, d_ff 256,
# 4 heads: Wu et al., ACL 2021); "mid" lies between the two.
SHAPES: dict[str, list[str]] = {
    "tiny": ["--preset", "tiny"],
    "mid": ["--preset", "tiny", "--d-model", "192", "--d-ff", "512", "--n-layers", "4"],
    "small": ["--preset", "tiny", "--d-model", "128", "--d-ff", "256", "--n-layers", "4"],
}
# The defaults below are the recipe the search of benchmarks/multi30k_trials.py chose on the
# validation split (20-minute `--no-test` trials, stage by stage, two seeds for the leaders:
# docs/training.md, benchmarks/results/multi30k-trials.jsonl); tests/test_multi30k_trials.py
# keeps them equal to its choice. Each departure from the paper is in docs/deviations.md.
SCORES = ("sacrebleu", "lowercase_bleu", "moses_bleu", "chrf", "paper_bleu", "perplexity")


def _train_flags(args: argparse.Namespace) -> list[str]:
    flags = [*SHAPES[args.shape], "--dropout", f"{args.dropout:g}", "--warmup", str(args.warmup)]
    flags += ["--lr-scale", f"{args.lr_scale:g}", "--max-tokens", str(args.max_tokens)]
    flags += ["--seed", str(args.seed)]
    if args.norm_first:  # DEVIATION(3.1): pre-LN, a final LayerNorm on each stack
        flags += ["--norm-first"]
    if args.bf16:  # EXTENSION: bf16 autocast (off by default), fp32 weights and Adam state
        flags += ["--bf16"]
    if args.attn_dropout:  # EXTENSION: dropout on the attention weights (off by default)
        flags += ["--attn-dropout", f"{args.attn_dropout:g}"]
    if args.ffn_dropout:  # EXTENSION: dropout after the FFN's ReLU (off by default)
        flags += ["--ffn-dropout", f"{args.ffn_dropout:g}"]
    if args.lr_decay == "linear":  # DEVIATION(5.3): to zero at the end of the last budget
        unit = "--decay-minutes" if args.minutes else "--decay-steps"
        flags += ["--lr-decay", "linear", unit, f"{_budgets(args)[-1]:g}"]
    return flags


def _budgets(args: argparse.Namespace) -> list[float]:
    return args.minutes if args.minutes else [float(s) for s in args.steps]


def _label(args: argparse.Namespace, budget: float) -> str:
    return f"{budget:g}min" if args.minutes else f"{budget:g}steps"


def _score(
    model: Path, data: Path, split: str, args: argparse.Namespace, report: Path
) -> dict | None:
    """Decode SPLIT with MODEL (--beam, --alpha) and return `aiayn evaluate`'s figures."""
    evaluate = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--split", split]
    evaluate += ["--beam", str(args.beam), "--alpha", f"{args.alpha:g}"]
    if args.limit:
        evaluate += ["--limit", str(args.limit)]
    if aiayn([*evaluate, "--json", str(report)]) != 0:
        return None
    return json.loads(report.read_text(encoding="utf-8"))


def _choose_and_test(run: Path, data: Path, args: argparse.Namespace, tag: str) -> dict | None:
    """Average each candidate number of RUN's last checkpoints, score them on valid, keep the
    best (ties: fewer checkpoints), then score test2016 once with it (unless --no-test)."""
    from aiayn.train import list_checkpoints

    have = len(list_checkpoints(run))  # a budget of seconds writes fewer
    candidates = sorted({min(n, have) for n in args.average})
    valid: dict[str, dict] = {}
    best: tuple[float, int] | None = None
    for n in candidates:
        model = run / f"average-{tag}-last{n}.safetensors"
        if aiayn(["average", str(run), "--last", str(n), "--out", str(model), "--force"]):
            return None
        scored = _score(model, data, "valid", args, run / f"valid-{tag}-last{n}.json")
        if scored is None:
            return None
        valid[str(n)] = {k: scored[k] for k in SCORES if k in scored}
        bleu = scored["sacrebleu"]["score"]
        print(f"  valid sacreBLEU {bleu:.2f} with the last {n} checkpoint(s) averaged", flush=True)
        if best is None or bleu > best[0]:
            best = (bleu, n)
    assert best is not None
    chosen = best[1]
    result: dict = {"valid": valid, "averaged_checkpoints": chosen}
    if not args.no_test:
        tested = _test(run, data, args, tag, chosen)
        if tested is None:
            return None
        result.update(tested)
    return result


def _test(run: Path, data: Path, args: argparse.Namespace, tag: str, n: int) -> dict | None:
    """Score test2016 once with RUN's average of its last N checkpoints (N chosen on valid)."""
    model = run / f"average-{tag}-last{n}.safetensors"
    scored = _score(model, data, "test", args, run / f"evaluation-{tag}.json")
    if scored is None:
        return None
    return {k: scored[k] for k in (*SCORES, "decode") if k in scored}


def _meta(run: Path) -> dict:
    """The latest checkpoint's meta.json (step, tokens, elapsed_s: training time so far)."""
    from aiayn.run_dir import META_FILE, latest_checkpoint

    latest = latest_checkpoint(run) if run.is_dir() else None
    if latest is None:
        return {"step": 0, "elapsed_s": 0.0}
    return json.loads((latest / META_FILE).read_text(encoding="utf-8"))


def _prepared(data: Path) -> tuple[int, bool] | None:
    """(the BPE size, lowercased) DATA was prepared with, or None if it holds no complete
    preparation."""
    try:
        manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not manifest.get("complete"):
        return None
    options = manifest.get("options", {})
    return options.get("vocab_size"), bool(options.get("lowercase", False))


def _trained(run: Path, args: argparse.Namespace) -> float:
    """How much of a budget RUN has used: training minutes, or updates."""
    meta = _meta(run)
    return float(meta["elapsed_s"]) / 60 if args.minutes else float(meta["step"])


def _train_to(run: Path, data: Path, args: argparse.Namespace, budget: float) -> bool:
    """Train RUN on (or start it) until it has used BUDGET; False when the training failed."""
    left = budget - _trained(run, args)
    # elapsed_s counts the steps, not the saves and logs, so a training that --max-minutes
    # stopped ends a few seconds short of its budget by that clock: within 1% it is reached
    near = bool(args.minutes) and left <= budget / 100
    if near and (left <= 0 or _stop_reason(run) == "max_minutes"):
        return True
    if args.minutes:
        limit = ["--max-minutes", f"{left:.4f}", "--max-steps", "1000000"]
        every = ["--save-every-minutes", f"{max(_budgets(args)[0] / 20, 0.05):g}"]
    else:
        if left <= 0:
            return True
        # no minutes limit: a run resumed from a --minutes trial keeps that trial's otherwise
        limit = ["--max-steps", f"{budget:.0f}", "--max-minutes", "0"]
        every = ["--save-every-steps", str(args.save_every), "--save-every-minutes", "0"]
    train = ["train", "--data", str(data), "--run", str(run), *limit, *every]
    resumed = _meta(run)["step"] > 0
    train += ["--resume"] if resumed else [*_train_flags(args), "--keep-last", str(args.keep)]
    # --valid-every 0: the benchmark's own scoring is the validation (one decode per budget)
    start = time.monotonic()
    status = aiayn([*train, "--valid-every", "0", "--no-progress"])
    _add_wall(run, time.monotonic() - start)
    if status != 0:
        return False
    # SIGINT/SIGTERM: saved, then stopped with status 0. A budget of updates is checked on
    # the step, one of minutes by why the training stopped (see above)
    short = _trained(run, args) < budget if args.steps else _stop_reason(run) != "max_minutes"
    if short:
        unit = f"{budget:g} training minutes" if args.minutes else f"update {budget:,.0f}"
        print(f"multi30k: training stopped before {unit}; --resume goes on")
        return False
    return True


WALL_FILE = "multi30k-wall.json"


def _add_wall(run: Path, seconds: float) -> float:
    """Add SECONDS to RUN's wall time of training commands, summed over every invocation and
    resume (saves and logs included, scoring not); return the sum. The step clock, elapsed_s,
    counts the steps only; this sum is what the budget cost on the wall."""
    file = run / WALL_FILE
    total = _wall(run) + seconds
    if run.is_dir():
        file.write_text(json.dumps({"training_command_seconds": total}) + "\n", encoding="utf-8")
    return total


def _wall(run: Path) -> float:
    """RUN's summed wall time of training commands (0.0 before the first)."""
    try:
        saved = json.loads((run / WALL_FILE).read_text(encoding="utf-8"))
        return float(saved["training_command_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _stop_reason(run: Path) -> str:
    """Why RUN's latest training stopped: "max_minutes", "max_steps", ... or "" (a signal)."""
    from aiayn.train import read_metrics

    stops = [e for e in read_metrics(run) if e.get("event") == "stop"]
    reason = str(stops[-1].get("reason", "")) if stops else ""
    return reason.removeprefix("reached ").split("=")[0] if reason.startswith("reached ") else ""


def _converge(run: Path, data: Path, args: argparse.Namespace) -> bool:
    """Train on in --check-every chunks while valid sacreBLEU rose within --patience updates.

    Each check scores RUN's latest checkpoint alone on valid (--beam, --alpha) and appends
    it to RUN/curve.jsonl, which a resumed run reads back.
    """
    curve_file = run / "curve.jsonl"
    curve = (
        [json.loads(x) for x in curve_file.read_text().splitlines()] if curve_file.is_file() else []
    )
    minimum = args.steps[-1]
    while True:
        step = int(_meta(run)["step"])
        if not curve or curve[-1]["step"] != step:
            scored = _score(run, data, "valid", args, run / "valid-latest.json")
            if scored is None:
                return False
            curve.append({"step": step, "valid_sacrebleu": round(scored["sacrebleu"]["score"], 2)})
            with curve_file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(curve[-1]) + "\n")
            print(
                f"  step {step:,}: valid sacreBLEU {curve[-1]['valid_sacrebleu']:.2f}", flush=True
            )
        best = max(curve, key=lambda c: (c["valid_sacrebleu"], -c["step"]))
        if step >= minimum and step - best["step"] >= args.patience:
            print(f"converged: no rise since step {best['step']:,} ({args.patience:,} updates)")
            return True
        if step >= args.max_updates:
            print(f"stopped at --max-updates {args.max_updates:,} (still rising)")
            return True
        nxt = min((step // args.check_every + 1) * args.check_every, args.max_updates)
        if not _train_to(run, data, args, float(nxt)):
            return False


def _processor() -> str:
    """The CPU's model name (Linux), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _command(args: argparse.Namespace) -> str:
    """The command line as anyone can rerun it (quoted for a POSIX shell): the local Multi30k
    copy is DIR, a path inside the project is relative to it, and any other absolute --run or
    --data is RUN or DATA (no path of the machine that ran it is recorded)."""
    names = {args.multi30k_dir: "DIR"}
    for value, name in ((args.run, "RUN"), (args.data, "DATA")):
        if value and Path(value).is_absolute():
            names[value] = name

    def shown(word: str) -> str:
        path = Path(word)
        if path.is_absolute() and path.is_relative_to(ROOT):
            return str(path.relative_to(ROOT))
        return names.get(word, word)

    return shlex.join(["python", "benchmarks/multi30k.py", *(shown(x) for x in sys.argv[1:])])


def _machine() -> dict:
    peak = matmul_peak(torch.device("cpu"), quick=True) / 1e9
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": _processor(),
        "matmul_peak_gflops": round(peak, 1),
        "threads": torch.get_num_threads(),
    }


def _train_nll(run: Path, every: int = 500) -> dict[str, float]:
    """The training loss (NLL per target token, without smoothing) of RUN's logged windows near
    every EVERY updates and at the last: how a trial learned, a divergence seen at a glance."""
    try:
        lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    logged = [r for r in map(json.loads, filter(None, lines)) if r.get("event") == "train"]
    out: dict[str, float] = {}
    for i, r in enumerate(logged):
        last = i == len(logged) - 1
        if last or (r["step"] - 1) // every != (logged[i + 1]["step"] - 1) // every:
            out[str(r["step"])] = round(float(r["nll"]), 3)
    return out


def _record(args: argparse.Namespace, summary: dict) -> None:
    """Append the trial (validation figures only) to --trials-file."""
    valid = summary["valid"]
    record = {
        "name": args.record,
        "train_flags": summary["train_flags"],
        "vocab_size": args.vocab_size,
        **({"lowercase": True} if args.lowercase else {}),
        "seed": args.seed,
        **({"budget_minutes": summary["budget_minutes"]} if args.minutes else {}),
        **({"budget_steps": summary["budget_steps"]} if args.steps else {}),
        "training_minutes": round(summary["training_minutes"], 3),
        "steps": summary["steps"],
        "valid_sacrebleu_by_averaged": {n: v["sacrebleu"]["score"] for n, v in valid.items()},
        "valid_lowercase_bleu_by_averaged": {
            n: v["lowercase_bleu"]["score"] for n, v in valid.items()
        },
        "valid_chrf_by_averaged": {n: v["chrf"]["score"] for n, v in valid.items()},
        "averaged_checkpoints": summary["averaged_checkpoints"],
        "decode": {"beam": args.beam, "alpha": args.alpha},  # what the figures were decoded with
        "signature": next(iter(valid.values()))["sacrebleu"]["signature"],
        "machine": summary["machine"],
        "command": summary["command"],
        "protocol": summary["protocol"],
    }
    if all("moses_bleu" in v for v in valid.values()):  # the literature's flavour, on valid
        record["valid_moses_bleu_by_averaged"] = {
            n: v["moses_bleu"]["score"] for n, v in valid.items()
        }
    if all("perplexity" in v for v in valid.values()):
        record["valid_perplexity_by_averaged"] = {
            n: round(v["perplexity"]["value"], 3) for n, v in valid.items()
        }
    record["train_nll"] = _train_nll(Path(args.run))
    if "curve" in summary:
        record["curve"] = summary["curve"]
    with Path(args.trials_file).open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    print(f"trial {args.record!r} recorded in {args.trials_file}")


def _recorded(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            names.add(json.loads(line)["name"])
    return names


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--multi30k-dir", default=None, help="local raw files (default: download)")
    ap.add_argument("--run", default="runs/multi30k", help="run directory")
    ap.add_argument("--data", help="the prepared data, shared by runs (default: RUN-data)")
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument(
        "--minutes",
        type=float,
        nargs="+",
        help="budgets of training minutes, increasing: evaluate at each, then train on "
        "(default 60)",
    )
    budget.add_argument("--steps", type=int, nargs="+", help="budgets of updates, increasing")
    # DEVIATION(3, 5.1-5.3): a small shape, 2048-token batches, BPE 10000, Eq. (3) at warm-up 800
    # times 0.5, a budget of minutes and P_drop 0.2 (5.4; chosen at convergence), each chosen on
    # valid (docs/deviations.md, the table "The Multi30k benchmark"); label smoothing and Adam
    # are the paper's.
    ap.add_argument("--shape", choices=SHAPES, default="small", help="the model (default small)")
    ap.add_argument("--vocab-size", type=int, default=10000, help="shared BPE (default 10000)")
    ap.add_argument(
        "--dropout", type=float, default=0.2, help="P_drop (default 0.2; the paper's base: 0.1)"
    )
    ap.add_argument("--warmup", type=int, default=800, help="warm-up steps (default 800)")
    ap.add_argument("--lr-scale", type=float, default=0.5, help="Eq. (3) times this (default 0.5)")
    ap.add_argument(
        "--lr-decay",
        choices=("rsqrt", "linear"),
        default="rsqrt",
        help="rsqrt: Eq. (3) (default); linear: DEVIATION(5.3), to zero at the last budget",
    )
    ap.add_argument("--max-tokens", type=int, default=2048, help="tokens a batch (default 2048)")
    ap.add_argument(
        "--norm-first", action="store_true", help="pre-LN (default: the paper's post-LN)"
    )
    ap.add_argument(
        "--lowercase",
        action="store_true",
        help="train and score on lowercased text, as the Multi30k literature (aiayn prepare "
        "--lowercase; its cased sacreBLEU is then a lowercased one)",
    )
    ap.add_argument(
        "--bf16",
        action="store_true",
        help="train under bfloat16 autocast (default: fp32, as the paper; decoding stays fp32)",
    )
    ap.add_argument(
        "--attn-dropout",
        type=float,
        default=0.0,
        help="dropout on the attention weights (default 0: the paper's dropout is on sublayer "
        "outputs only)",
    )
    ap.add_argument(
        "--ffn-dropout",
        type=float,
        default=0.0,
        help="dropout after the FFN's ReLU (default 0, as the paper)",
    )
    ap.add_argument("--seed", type=int, default=1, help="training seed (default 1)")
    ap.add_argument(
        "--average",
        type=int,
        nargs="+",
        default=[1, 3, 5, 10],
        help="candidate numbers of last checkpoints to average, chosen on valid (default 1 3 5 10)",
    )
    # DEVIATION(6.1): the decode round's choice on valid (benchmarks/multi30k_trials.py
    # --decode; section 6.1's beam 4, alpha 0.6 before it). tests/test_multi30k_trials.py
    # holds them equal to benchmarks/results/multi30k-decode.json
    ap.add_argument("--beam", type=int, default=6, help="beam size (default 6)")
    ap.add_argument("--alpha", type=float, default=1.5, help="length penalty (default 1.5)")
    ap.add_argument("--keep", type=int, default=100, help="checkpoints kept (default 100)")
    ap.add_argument(
        "--save-every", type=int, default=100, help="with --steps: updates between checkpoints"
    )
    ap.add_argument("--patience", type=int, default=0, help="with --steps: to convergence")
    ap.add_argument("--check-every", type=int, default=1000, help="updates between checks")
    ap.add_argument("--max-updates", type=int, default=30000, help="convergence's cap")
    ap.add_argument("--no-test", action="store_true", help="a trial: score the validation only")
    ap.add_argument("--record", metavar="NAME", help="with --no-test: append the trial")
    ap.add_argument("--trials-file", default=str(TRIALS_FILE), help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, default=0, help="score only the first N sentences")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all)")
    ap.add_argument("--resume", action="store_true", help="continue an existing --run")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --run")
    return ap


def _check(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.minutes and not args.steps:
        args.minutes = [60.0]
    budgets = _budgets(args)
    unit = "--minutes" if args.minutes else "--steps"
    if any(b <= 0 for b in budgets) or budgets != sorted(set(budgets)):
        ap.error(f"{unit} must be positive and increasing, got {budgets}")
    if args.beam < 1 or args.alpha < 0:
        ap.error(f"--beam must be >= 1 and --alpha >= 0, got {args.beam} and {args.alpha:g}")
    drops = (args.dropout, args.attn_dropout, args.ffn_dropout)
    if not all(0.0 <= p < 1.0 for p in drops):
        got = ", ".join(f"{p:g}" for p in drops)
        ap.error(f"--dropout, --attn-dropout and --ffn-dropout must be in [0, 1), got {got}")
    if any(n < 1 for n in args.average):
        ap.error(f"--average takes numbers of checkpoints of at least 1, got {args.average}")
    if args.patience and not args.steps:
        ap.error("--patience goes with --steps: convergence is counted in updates")
    if args.patience < 0 or args.check_every < 1 or args.save_every < 1 or args.keep < 1:
        ap.error("--patience must be >= 0; --check-every, --save-every and --keep >= 1")
    if args.patience and args.max_updates < args.steps[-1]:
        ap.error(f"--max-updates {args.max_updates} is below the last --steps {args.steps[-1]}")
    if max(args.average) > args.keep:
        ap.error(f"--average {max(args.average)} needs --keep of at least that, got {args.keep}")
    if args.lr_decay == "linear" and args.steps and args.steps[-1] <= args.warmup:
        ap.error(f"--lr-decay linear: the last budget must exceed --warmup {args.warmup}")
    if args.lr_decay == "linear" and args.patience:
        ap.error("--lr-decay linear ends at the last budget; --patience would train past it")
    if args.record is not None:
        if not args.no_test:
            ap.error("--record is for trials: add --no-test (trials never score test2016)")
        if args.record in _recorded(Path(args.trials_file)):
            ap.error(f"{args.trials_file}: a trial named {args.record!r} is already recorded")
    if args.resume and args.overwrite:
        ap.error("--resume continues --run, --overwrite replaces it: pass one")


def _print_test(result: dict) -> None:
    bleu, lc, n = result["sacrebleu"], result["lowercase_bleu"], result["averaged_checkpoints"]
    print(f"Multi30k test2016: sacreBLEU {bleu['score']:.2f} ({bleu['signature']}) ", end="")
    print(f"with the last {n} averaged (chosen on valid)")
    print(f"  lowercased BLEU {lc['score']:.2f}  {lc['signature']}; {lc['label']}")
    if "moses_bleu" in result:
        mb = result["moses_bleu"]
        print(f"  {mb['score']:.2f}  {mb['label']}", flush=True)


def main() -> int:
    ap = _parser()
    args = ap.parse_args()
    _check(ap, args)
    if args.threads:
        torch.set_num_threads(args.threads)
    run = Path(args.run)
    data = Path(args.data) if args.data else run.parent / f"{run.name}-data"
    summary_file = run / "multi30k.json"
    if run.exists() and not (args.overwrite or args.resume):
        ap.error(f"{run} exists; pass --resume to continue it, --overwrite to replace it")
    if args.resume and run.exists() and _meta(run)["step"] > 0:
        from aiayn.train import read_run_config

        if read_run_config(run).train.seed != args.seed:
            ap.error(f"{run} was trained with another --seed; pass its own settings to --resume")
    if _prepared(data) != (args.vocab_size, args.lowercase):  # missing, or prepared otherwise
        asked = f"--vocab-size {args.vocab_size}" + (" --lowercase" if args.lowercase else "")
        if args.resume and run.exists():
            ap.error(f"{data}: not prepared with {asked}, as {run} was")
        prep = ["prepare", "--source", "multi30k", "--out", str(data), "--overwrite"]
        prep += ["--vocab-size", str(args.vocab_size), "--no-progress"]
        prep += ["--lowercase"] if args.lowercase else []
        if args.multi30k_dir:
            prep += ["--multi30k-dir", args.multi30k_dir]
        if aiayn(prep) != 0:
            return 1
    if run.exists() and args.overwrite:
        shutil.rmtree(run)  # a benchmark measures a fresh run
    done: list[dict] = []
    if args.resume and summary_file.is_file():
        done = json.loads(summary_file.read_text(encoding="utf-8")).get("budgets", [])
    summary: dict = {}
    previous = json.loads(summary_file.read_text(encoding="utf-8")) if done else {}
    for budget in _budgets(args):
        key = "budget_minutes" if args.minutes else "budget_steps"
        before = next((b for b in done if b.get(key) == budget), None)
        if before is not None and (args.no_test or "sacrebleu" in before):
            print(f"budget {budget:g} evaluated before (--resume), kept", flush=True)
            continue
        if before is not None:  # a valid-only trial made a final: its choice stands
            n = before["averaged_checkpoints"]
            print(f"budget {budget:g}: the trial chose the last {n} on valid; test2016 once")
            model = run / f"average-{_label(args, budget)}-last{n}.safetensors"
            if not model.is_file():
                print(f"multi30k: {model} is missing: the average chosen on valid cannot be tested")
                return 1
            tested = _test(run, data, args, _label(args, budget), n)
            if tested is None:
                return 1
            before.update(tested)
            _print_test(before)
            summary = {
                **previous,
                **before,
                "budgets": done,
                "trial_command": previous.get("trial_command", previous.get("command")),
                "command": _command(args),
                "protocol": "averaging chosen on valid (val, 1014 sentences) by the valid-only "
                "trial; test2016 scored once afterwards for the chosen average (--resume "
                "without --no-test)",
            }
            summary_file.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
            continue
        if not _train_to(run, data, args, budget):
            return 1
        if args.patience and budget == _budgets(args)[-1] and not _converge(run, data, args):
            return 1
        trained = _meta(run)
        print(
            f"after {trained['elapsed_s'] / 60:.1f} minutes of training on {os.cpu_count()} cores:"
        )
        result = _choose_and_test(run, data, args, _label(args, budget))
        if result is None:
            return 1
        entry = {
            key: budget if args.minutes else int(budget),
            "training_minutes": trained["elapsed_s"] / 60,
            # every `aiayn train` of RUN so far, resumes included (scoring excluded)
            "training_command_minutes": _wall(run) / 60,
            "steps": trained["step"],
            **result,
        }
        if args.patience and budget == _budgets(args)[-1]:
            lines = (run / "curve.jsonl").read_text(encoding="utf-8").splitlines()
            entry["curve"] = [json.loads(x) for x in lines]
        done.append(entry)
        if "sacrebleu" in result:
            _print_test(result)
        else:
            n = result["averaged_checkpoints"]
            print(f"valid only (--no-test): best with the last {n} averaged", flush=True)
        summary = {
            "benchmark": "Multi30k EN-DE test2016 (1000 sentences)",
            **done[-1],
            "budgets": done,
            "machine": _machine(),
            "command": _command(args),
            "train_flags": _train_flags(args),
            "vocab_size": args.vocab_size,
            **({"lowercase": True} if args.lowercase else {}),
            "protocol": "averaging chosen on valid (val, 1014 sentences); test2016 scored once "
            "for the chosen average" + (" (not scored: --no-test)" if args.no_test else ""),
        }
        summary_file.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if args.record is not None and summary:
        _record(args, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
