"""Multi30k EN-DE, the standard small benchmark: train for a wall-clock budget, average, BLEU.

    python benchmarks/multi30k.py --multi30k-dir DIR --minutes 40 60
    python benchmarks/multi30k.py --minutes 60            # downloads the official files

Prepares Multi30k task 1 (train 29,000 / val 1,014 / test_2016_flickr 1,000) with a shared BPE,
trains with the paper's recipe and the settings below for --minutes on this machine's cores,
averages the last --average checkpoints (section 6.1), translates test2016 with beam 4 and
alpha 0.6 and reports sacreBLEU (cased, 13a, with its signature) and the other figures of
`aiayn evaluate`. Writes RUN/multi30k.json with the budget, the machine and the command.
An existing --run directory is replaced only with --overwrite; the prepared data (RUN-data)
is reused while its BPE size matches --vocab-size.
Published small-model results on this test set are about 35-41 BLEU (see README).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from aiayn.cli import main as aiayn

# Model and recipe: the tiny preset (d_model 256, 4 heads, d_ff 1024, 3 + 3 layers, tied).
TRAIN_FLAGS = ["--preset", "tiny", "--warmup", "400", "--lr-scale", "0.5", "--max-tokens", "4096"]


def _evaluate(run: Path, data: Path, n_average: int, test_limit: int, tag: str) -> dict | None:
    """Average RUN's last checkpoints, decode test2016 with beam 4, return the evaluation."""
    from aiayn.train import list_checkpoints

    n = min(n_average, len(list_checkpoints(run)))  # a budget of seconds writes fewer
    model = run / f"average-{tag}.safetensors"
    if aiayn(["average", str(run), "--last", str(n), "--out", str(model), "--force"]):
        return None
    report = run / f"evaluation-{tag}.json"
    evaluate = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--split", "test"]
    if test_limit:
        evaluate += ["--limit", str(test_limit)]
    if aiayn([*evaluate, "--json", str(report)]) != 0:
        return None
    result = json.loads(report.read_text(encoding="utf-8"))
    result["averaged_checkpoints"] = n
    return result


def _meta(run: Path) -> dict:
    """The latest checkpoint's meta.json (step, tokens, elapsed_s: training time so far)."""
    from aiayn.train.checkpoints import META_FILE, latest_checkpoint

    latest = latest_checkpoint(run) if run.is_dir() else None
    if latest is None:
        return {"step": 0, "elapsed_s": 0.0}
    return json.loads((latest / META_FILE).read_text(encoding="utf-8"))


def _prepared_vocab(data: Path) -> int | None:
    """The BPE size DATA was prepared with, or None if it holds no complete preparation."""
    try:
        manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest.get("options", {}).get("vocab_size") if manifest.get("complete") else None


def _trained_minutes(run: Path) -> float:
    return float(_meta(run)["elapsed_s"]) / 60


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--multi30k-dir", default=None, help="local raw files (default: download)")
    ap.add_argument("--run", default="runs/multi30k", help="run directory")
    ap.add_argument(
        "--minutes",
        type=float,
        nargs="+",
        default=[40.0],
        help="training budgets, increasing: evaluate at each, then train on (default 40)",
    )
    ap.add_argument("--vocab-size", type=int, default=8000, help="shared BPE (default 8000)")
    ap.add_argument("--average", type=int, default=3, help="checkpoints to average (default 3)")
    ap.add_argument("--test-limit", type=int, default=0, help="score only the first N sentences")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --run")
    args = ap.parse_args()
    budgets = args.minutes
    if any(b <= 0 for b in budgets) or budgets != sorted(set(budgets)):
        ap.error(f"--minutes must be positive and increasing, got {budgets}")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    run = Path(args.run)
    data = run.parent / f"{run.name}-data"
    if run.exists() and not args.overwrite:
        ap.error(f"{run} exists; pass --overwrite to replace it, or another --run")
    if _prepared_vocab(data) != args.vocab_size:  # missing, or prepared with another BPE
        prep = ["prepare", "--source", "multi30k", "--out", str(data), "--overwrite"]
        prep += ["--vocab-size", str(args.vocab_size), "--no-progress"]
        if args.multi30k_dir:
            prep += ["--multi30k-dir", args.multi30k_dir]
        if aiayn(prep) != 0:
            return 1
    if run.exists():
        shutil.rmtree(run)  # --overwrite: a benchmark measures a fresh run
    every = max(budgets[0] / 20, 0.05)  # minutes between checkpoints
    results = []
    wall = 0.0  # seconds of the training commands (their validation and checkpoints included)
    for budget in budgets:
        start = time.monotonic()
        left = budget - _trained_minutes(run)  # the checkpoints' own clock of training time
        if left > 0:
            train = ["train", "--data", str(data), "--run", str(run)]
            train += ["--resume"] if results else TRAIN_FLAGS  # a resumed run keeps its config
            train += ["--max-minutes", f"{left:.4f}", "--max-steps", "1000000"]
            train += ["--save-every-minutes", str(every), "--keep-last", "100"]
            if aiayn([*train, "--no-progress"]) != 0:
                return 1
        wall += time.monotonic() - start
        result = _evaluate(run, data, args.average, args.test_limit, f"{budget:g}min")
        if result is None:
            return 1
        trained = _trained_minutes(run)
        results.append(
            {
                "budget_minutes": budget,
                "training_minutes": trained,
                "training_command_minutes": wall / 60,
                "steps": _meta(run)["step"],
                "sacrebleu": result["sacrebleu"],
                "chrf": result["chrf"],
                "lowercase_bleu": result.get("lowercase_bleu"),
                "paper_bleu": result.get("paper_bleu"),
                "averaged_checkpoints": result["averaged_checkpoints"],
                "decode": result["decode"],
            }
        )
        bleu = result["sacrebleu"]
        print(
            f"Multi30k test2016: sacreBLEU {bleu['score']:.2f} ({bleu['signature']}) after ", end=""
        )
        print(f"{trained:.1f} minutes of training on {os.cpu_count()} cores", flush=True)
        if result.get("lowercase_bleu"):
            lc = result["lowercase_bleu"]
            print(f"  lowercased BLEU {lc['score']:.2f} ({lc['signature']}; {lc['label']})")
    summary = {
        "benchmark": "Multi30k EN-DE test2016 (1000 sentences)",
        **results[-1],
        "budgets": results,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "command": " ".join(sys.argv),
        "train_flags": TRAIN_FLAGS,
    }
    (run / "multi30k.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
