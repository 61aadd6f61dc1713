"""Choose the demo's recipe on the validation split, one trial a call; test only on request.

    python benchmarks/demo_trials.py --name m30k-bpe4000 --corpus multi30k \
        --multi30k-dir DIR --vocab-size 4000
    python benchmarks/demo_trials.py --name m30k-bpe4000 --corpus multi30k ... --test  # once

A trial is the demo's flow with the settings given: prepare (the demo's packaged subset, or
Multi30k), train `tiny` (or another `--shape` of benchmarks/multi30k.py) for --steps steps
(steps decide, so a loaded machine trains the same model, only slower), average the last
--average checkpoints, translate the VALIDATION split with beam 4 and alpha 0.6 and score it.
The protocol (docs/demo.md): every setting is chosen by validation BLEU; the test split is
translated once, with --test, for the chosen recipe only. Appends one JSON line per trial to
--results (default benchmarks/results/demo-trials.jsonl), with the settings, the machine, the
training time and the scores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from multi30k import SHAPES  # benchmarks/multi30k.py: the shapes its recipe search trialled

from aiayn.cli import main as aiayn
from aiayn.cli.demo import DEMO_AVERAGE, DEMO_STEPS, DEMO_VOCAB, DEMO_WARMUP

PACKAGED = ["--source", "packaged", "--origins", "help", "--min-words", "6", "--max-words", "25"]


def _prepare(args: argparse.Namespace, data: Path) -> None:
    if (data / "manifest.json").is_file():
        return  # prepared by an earlier trial with the same corpus and vocabulary
    corpus = PACKAGED if args.corpus == "packaged" else ["--source", "multi30k"]
    if args.corpus == "multi30k" and args.multi30k_dir:
        corpus += ["--multi30k-dir", args.multi30k_dir]
    argv = ["prepare", *corpus, "--vocab-size", str(args.vocab_size), "--out", str(data)]
    if aiayn([*argv, "--no-progress"]) != 0:
        sys.exit(f"demo_trials: could not prepare {args.corpus}")


def _score(model: Path, data: Path, split: str, out: Path) -> dict:
    argv = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--split", split]
    if aiayn([*argv, "--json", str(out)]) != 0:
        sys.exit(f"demo_trials: evaluating {model} on {split} failed")
    report = json.loads(out.read_text(encoding="utf-8"))
    keys = ("sacrebleu", "chrf", "lowercase_bleu", "paper_bleu", "perplexity")
    return {k: report[k] for k in keys if k in report}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True, help="the trial's name (its run directory)")
    ap.add_argument("--corpus", choices=["packaged", "multi30k"], default="packaged")
    ap.add_argument("--multi30k-dir", default=None, help="local Multi30k files (default: download)")
    ap.add_argument("--root", default="runs/trials", help="where trials and their data live")
    ap.add_argument(
        "--run",
        default=None,
        help="the trial's run directory (default ROOT/NAME); one with checkpoints is scored, not "
        "trained again: `--run runs/demo --data runs/demo-data` scores what `aiayn demo` trained",
    )
    ap.add_argument("--data", default=None, help="prepared data (default ROOT/data-CORPUS-bpeV)")
    ap.add_argument("--vocab-size", type=int, default=DEMO_VOCAB)
    ap.add_argument(
        "--shape",
        choices=SHAPES,
        default="tiny",
        help="the model, as benchmarks/multi30k.py names it (default tiny, the demo's preset)",
    )
    ap.add_argument("--steps", type=int, default=DEMO_STEPS)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--warmup", type=int, default=DEMO_WARMUP)
    ap.add_argument("--lr-scale", type=float, default=0.5)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument(
        "--norm-first", action="store_true", help="pre-LN, DEVIATION(3.1) (default: post-LN)"
    )
    ap.add_argument(
        "--average", type=int, default=DEMO_AVERAGE, help="last N checkpoints (one per 100 steps)"
    )
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all)")
    ap.add_argument("--test", action="store_true", help="also score the test split (once!)")
    ap.add_argument("--results", default="benchmarks/results/demo-trials.jsonl")
    args = ap.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    root = Path(args.root)
    data = Path(args.data) if args.data else root / f"data-{args.corpus}-bpe{args.vocab_size}"
    run = Path(args.run) if args.run else root / args.name
    _prepare(args, data)
    settings = [*SHAPES[args.shape], "--dropout", str(args.dropout), "--warmup", str(args.warmup)]
    settings += ["--lr-scale", str(args.lr_scale), "--max-tokens", str(args.max_tokens)]
    settings += ["--norm-first"] if args.norm_first else []
    start = time.monotonic()
    trained = not (run / "checkpoints").is_dir()  # else: an earlier trial's or the demo's run
    if trained:
        train = ["train", "--data", str(data), "--run", str(run), *settings]
        train += ["--max-steps", str(args.steps), "--max-minutes", "600"]
        train += ["--save-every-steps", "100", "--keep-last", "10", "--no-progress"]
        if aiayn(train) != 0:
            return 1
    minutes = (time.monotonic() - start) / 60
    model = run / f"average-last{args.average}.safetensors"
    averaged = ["average", str(run), "--last", str(args.average), "--out", str(model), "--force"]
    if aiayn(averaged) != 0:
        return 1
    record = {
        "name": args.name,
        "corpus": args.corpus,
        "vocab_size": args.vocab_size,
        "steps": args.steps,
        "train_flags": settings,
        "average": args.average,
        "decode": "beam 4, alpha 0.6 (gnmt), max length |X| + 50",
        "training_wall_minutes": round(minutes, 2) if trained else None,  # None: scored only
        "threads": args.threads or os.cpu_count(),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "valid": _score(model, data, "valid", run / "valid.json"),
    }
    if args.test:
        record["test"] = _score(model, data, "test", run / "test.json")
    record["command"] = " ".join(["python", "benchmarks/demo_trials.py", *(argv or sys.argv[1:])])
    out = Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    v = record["valid"]["sacrebleu"]["score"]
    took = f"{minutes:.1f} min" if trained else "trained before"
    print(f"{args.name}: valid sacreBLEU {v:.2f} after {args.steps} steps ({took})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
