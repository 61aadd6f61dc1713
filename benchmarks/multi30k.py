"""Multi30k EN-DE, the standard small benchmark: train for a wall-clock budget, average, BLEU.

    python benchmarks/multi30k.py --multi30k-dir ../shared/data/multi30k --minutes 40
    python benchmarks/multi30k.py --minutes 60            # downloads the official files

Prepares Multi30k task 1 (train 29,000 / val 1,014 / test_2016_flickr 1,000) with a shared BPE,
trains with the paper's recipe and the settings below for --minutes on this machine's cores,
averages the last --average checkpoints (section 6.1), translates test2016 with beam 4 and
alpha 0.6 and reports sacreBLEU (cased, 13a, with its signature) and the other figures of
`aiayn evaluate`. Writes RUN/multi30k.json with the budget, the machine and the command.
Published small-model results on this test set are about 35-41 BLEU (see README).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from aiayn.cli import main as aiayn

# Model and recipe: the tiny preset (d_model 256, 4 heads, d_ff 1024, 3 + 3 layers, tied).
TRAIN_FLAGS = ["--preset", "tiny", "--warmup", "400", "--lr-scale", "0.5", "--max-tokens", "4096"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--multi30k-dir", default=None, help="local raw files (default: download)")
    ap.add_argument("--run", default="runs/multi30k", help="run directory")
    ap.add_argument("--minutes", type=float, default=40.0, help="training budget (default 40)")
    ap.add_argument("--vocab-size", type=int, default=8000, help="shared BPE (default 8000)")
    ap.add_argument("--average", type=int, default=3, help="checkpoints to average (default 3)")
    ap.add_argument("--test-limit", type=int, default=0, help="score only the first N sentences")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all)")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    run = Path(args.run)
    data = run.parent / f"{run.name}-data"
    if not (data / "manifest.json").is_file():
        prep = ["prepare", "--source", "multi30k", "--out", str(data), "--overwrite"]
        prep += ["--vocab-size", str(args.vocab_size), "--no-progress"]
        if args.multi30k_dir:
            prep += ["--multi30k-dir", args.multi30k_dir]
        if aiayn(prep) != 0:
            return 1
    start = time.monotonic()
    train = ["train", "--data", str(data), "--run", str(run), *TRAIN_FLAGS]
    train += ["--max-minutes", str(args.minutes), "--max-steps", "1000000"]
    train += ["--save-every-minutes", str(max(args.minutes / 20, 0.05)), "--keep-last", "20"]
    if aiayn([*train, "--no-progress"]) != 0:
        return 1
    trained = time.monotonic() - start
    from aiayn.train import list_checkpoints

    n = min(args.average, len(list_checkpoints(run)))  # a budget of seconds writes fewer
    model = run / "average.safetensors"
    if aiayn(["average", str(run), "--last", str(n), "--out", str(model), "--force"]):
        return 1
    report = run / "evaluation.json"
    evaluate = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--split", "test"]
    if args.test_limit:
        evaluate += ["--limit", str(args.test_limit)]
    if aiayn([*evaluate, "--json", str(report)]) != 0:
        return 1
    result = json.loads(report.read_text(encoding="utf-8"))
    summary = {
        "benchmark": "Multi30k EN-DE test2016 (1000 sentences)",
        "sacrebleu": result["sacrebleu"],
        "chrf": result["chrf"],
        "training_minutes": trained / 60,
        "averaged_checkpoints": n,
        "decode": result["decode"],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "command": " ".join(sys.argv),
        "train_flags": TRAIN_FLAGS,
    }
    (run / "multi30k.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    bleu = result["sacrebleu"]
    print(f"Multi30k test2016: sacreBLEU {bleu['score']:.2f} ({bleu['signature']}) after ", end="")
    print(f"{trained / 60:.1f} minutes of training on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
