"""The EN-ZH recipe search on Tatoeba: trials scored on valid only, then one final scored on test.

    python experiments/2026-12-tatoeba-en-zh/search.py --data DATA --runs RUNS trial NAME [FLAG ...]
    python experiments/2026-12-tatoeba-en-zh/search.py --data DATA --runs RUNS final NAME [FLAG ...]

A trial trains `aiayn train --preset tiny FLAGS` for --steps updates (a budget of work, so that
trials compare alike on a machine shared with other jobs), then chooses on the VALID split how
many of the last checkpoints to average (1, 3 or 5; beam 4, alpha 0.6 as section 6.1) by
sacreBLEU with the zh tokenizer, and appends one line to trials.jsonl beside this file. A final
trains for --minutes of wall time (at most 60) with the same choice on valid, then scores the
test split once and writes final.json. Each record carries the flags, updates, minutes, the
machine's matmul peak, and the translation of the note's sentence "I love you.".

Frozen with its records: nothing in aiayn/, tests/ or recipes/ imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
AVERAGES = (1, 3, 5)
NOTE = "I love you."


def aiayn(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "aiayn", *argv], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 3):
        sys.exit(f"aiayn {argv[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def score(model: Path, data: Path, split: str, work: Path) -> dict:
    import sacrebleu

    hyps = work / f"{model.stem}.{split}.hyp"
    aiayn(
        "evaluate",
        "--checkpoint",
        str(model),
        "--data",
        str(data),
        "--split",
        split,
        "--beam",
        "4",
        "--alpha",
        "0.6",
        "--hyps",
        str(hyps),
    )
    manifest = json.loads((data / "manifest.json").read_text())
    refs = (data / "text" / f"{split}.{manifest['tgt_lang']}").read_text().splitlines()
    out = hyps.read_text().splitlines()
    bleu = sacrebleu.metrics.BLEU(tokenize="zh")
    b = bleu.corpus_score(out, [refs])
    c = sacrebleu.metrics.CHRF().corpus_score(out, [refs])
    return {
        "bleu_zh": round(b.score, 2),
        "signature": str(bleu.get_signature()),
        "chrf": round(c.score, 2),
        "empty": sum(not h.strip() for h in out),
    }


def note(model: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "aiayn", "translate", "--checkpoint", str(model)],
        input=NOTE + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=1200, help="a trial's updates (default 1200)")
    ap.add_argument("--minutes", type=float, default=60, help="the final's wall-clock budget")
    ap.add_argument("--save-every", type=int, default=150, help="updates between checkpoints")
    ap.add_argument("kind", choices=("trial", "final"))
    ap.add_argument("name")
    ap.add_argument("flags", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.kind == "final" and not 0 < args.minutes <= 60:
        sys.exit("--minutes: the final trains at most 60 minutes")

    import torch

    from aiayn.flops import matmul_peak

    threads = torch.get_num_threads()  # OMP_NUM_THREADS=1 on a machine shared with other jobs
    peak = matmul_peak()
    run = args.runs / args.name
    if run.exists():
        shutil.rmtree(run)
    budget = (
        ["--max-steps", str(args.steps)]
        if args.kind == "trial"
        else ["--max-minutes", f"{args.minutes:g}"]
    )
    train = ["train", "--data", str(args.data), "--run", str(run), "--preset", "tiny"]
    train += [*args.flags, *budget, "--save-every-steps", str(args.save_every)]
    train += ["--keep-last", str(max(AVERAGES)), "--no-progress", "--valid-every", "500"]
    started = time.perf_counter()
    aiayn(*train)
    minutes = (time.perf_counter() - started) / 60
    events = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    updates = max(e["step"] for e in events if "step" in e)
    curve = [
        {"step": e["step"], "valid_ppl": round(e["ppl"], 2)}
        for e in events
        if e["event"] == "valid"
    ]
    work = run / "scores"
    work.mkdir()
    valid = {}
    for k in AVERAGES:
        model = work / f"avg{k}.safetensors"
        aiayn("average", str(run), "--last", str(k), "--out", str(model))
        valid[k] = score(model, args.data, "valid", work)
    chosen = max(AVERAGES, key=lambda k: valid[k]["bleu_zh"])
    best = work / f"avg{chosen}.safetensors"
    record = {
        "kind": args.kind,
        "name": args.name,
        "flags": args.flags,
        "updates": updates,
        "training_minutes": round(minutes, 1),
        "valid_curve": curve,
        "valid": {str(k): v for k, v in valid.items()},
        "chosen_average": chosen,
        "note": {"source": NOTE, "translation": note(best)},
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "matmul_peak_gflops": round(peak / 1e9, 1),
            "threads": threads,
            "load_average": [round(x, 1) for x in os.getloadavg()],
        },
        "command": " ".join(
            ["python", "experiments/2026-12-tatoeba-en-zh/search.py", *sys.argv[1:]]
        ),
    }
    if args.kind == "final":
        record["test"] = score(best, args.data, "test", work)
        shutil.copy(best, run / "final.safetensors")
        (HERE / "final.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    else:
        with (HERE / "trials.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(json.dumps(record, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
