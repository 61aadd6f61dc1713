"""Kill -9 trials: a training killed at random moments and inside checkpoint writes and pruning.

Each trial forks a training of a tiny model on the copy task (resuming the run when it has a
checkpoint) and kills it with SIGKILL: either after a random delay, or at a chosen point of the
write protocol through the hook ``AIAYN_FAULT=POINT[@N]`` (``aiayn.storage.fault_point``).
After each kill the run is checked as the next start-up would find it:

- corrupt: a complete checkpoint whose files fail their manifest (sizes, SHA-256) or do not load;
- lost: the newest complete checkpoint is older than the newest one before the trial, or
  ``latest_checkpoint`` does not give the newest complete one;
- leftover: anything but complete checkpoints, ``latest``, config, metrics and the lock once
  ``clean_run`` (what ``train`` start-up, ``--resume`` run) has removed what the dead writer left;
- resume failed: the next trial's training (a resume) exited with an error instead of being
  killed. After the last trial one more resume runs to its end in this process.

  python tests/fault_trials.py --trials 60 --json tests/results/faults.json   # the long series
  python tests/fault_trials.py --quick              # 12 trials, a smoke test

tests/test_faults.py runs a short series of its own; the long one is quoted in
docs/reliability.md. The counts are printed as a table and, with --json FILE, written as JSON.
No timing is reported: the figures are counts.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from aiayn import run_dir as layout
from aiayn import storage
from aiayn.config import ModelConfig, TrainConfig
from aiayn.data import InMemorySplit, synthetic_pairs
from aiayn.errors import UserError
from aiayn.train import TrainData, train
from aiayn.train import checkpoints as ckpt

log = logging.getLogger("faults")

# Points of the write protocol a kill is aimed at (NAME@N: the Nth time the point is reached).
POINTS = (
    "checkpoint.model",  # model.safetensors written into the temporary directory
    "checkpoint.trainer",  # trainer.pt written too
    "write.replace",  # config.json's temporary complete, not yet renamed (start-up)
    "write.replace@3",  # ... the checkpoint's trainer.pt
    "manifest.write",  # every file there, the manifest not yet written
    "directory.rename",  # the directory complete and fsynced, not yet renamed into place
    "checkpoint.latest",  # the checkpoint in place, ``latest`` not yet updated
    "prune.renamed",  # an old checkpoint renamed away for deletion, not yet deleted
    "prune.file",  # ... its first file deleted
    "prune.file@2",  # ... its second file deleted
)
KEEP_LAST = 2
SAVE_EVERY = 3
V = 12
EXPECTED = {"checkpoints", "config.json", "metrics.jsonl", layout.CHECKPOINTS, "train.lock"}


class FakeTokenizer:
    def to_str(self) -> str:
        return '{"fake": "tokenizer"}'


def setup(max_steps: int = 10**6) -> tuple[ModelConfig, TrainConfig, TrainData]:
    model = ModelConfig(vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_layers=1)
    cfg = TrainConfig(
        max_steps=max_steps,
        warmup=10,
        max_tokens=120,
        log_every=2,
        valid_every=0,
        save_every_minutes=0.0,
        save_every_steps=SAVE_EVERY,
        keep_last=KEEP_LAST,
    )
    data = TrainData(InMemorySplit(synthetic_pairs("copy", 200, V, 1, 6, 0)), None, FakeTokenizer())
    return model, cfg, data


def newest_step(run: Path) -> int:
    found = layout.list_checkpoints(run)
    return int(found[-1].name.split("_")[1]) if found else -1


def run_child(run: Path, fault: str | None, delay: float, wait_s: float = 10.0) -> str:
    """Fork a training of run; kill it after delay (no fault) or let it kill itself at fault.

    Returns "killed", "timeout" (a fault that was not reached within wait_s: killed then),
    "exited" (0: the training ended) or "error N" (it failed).
    """
    resume = layout.latest_checkpoint(run) is not None
    pid = os.fork()
    if pid == 0:  # the child: train until killed
        code = 0
        try:
            if fault:
                os.environ["AIAYN_FAULT"] = fault
            else:
                os.environ.pop("AIAYN_FAULT", None)
            storage._fault_hits.clear()
            model, cfg, data = setup()
            train(model, cfg, data, run, resume=resume)
        except BaseException:
            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + (delay if not fault else wait_s)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout" if fault else "killed"
        time.sleep(0.002)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return "killed"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return "exited" if code == 0 else f"error {code}"


def leftovers_before(run: Path) -> list[str]:
    """Temporaries a dead writer left (before start-up cleans them)."""
    names = [p.name for p in run.iterdir()] if run.is_dir() else []
    root = run / layout.CHECKPOINTS
    names += [p.name for p in root.iterdir()] if root.is_dir() else []
    return [n for n in names if n.startswith(".")]


def check(run: Path, newest_before: int) -> dict[str, list[str]]:
    """The problems of a run after a kill, as the next start-up sees it (after clean_run)."""
    problems: dict[str, list[str]] = {"corrupt": [], "lost": [], "leftover": []}
    with storage.DirectoryLock(run, layout.LOCK_FILE, what="training"):
        ckpt.clean_run(run)
    for d in layout.list_checkpoints(run):
        try:
            storage.check_files(d, storage.read_manifest(d), hashes=True)
            from aiayn.weights import load_state

            load_state(d / layout.MODEL_FILE)
            ckpt.read_trainer_state(d)
        except (UserError, OSError) as e:
            problems["corrupt"].append(f"{d.name}: {e}")
    newest = newest_step(run)
    if newest < newest_before:
        problems["lost"].append(f"newest complete step {newest} < {newest_before} before")
    latest = layout.latest_checkpoint(run)
    if newest >= 0 and (latest is None or int(latest.name.split("_")[1]) != newest):
        problems["lost"].append(f"latest_checkpoint gives {latest}, newest is step {newest}")
    if run.is_dir():
        problems["leftover"] += [p.name for p in run.iterdir() if p.name not in EXPECTED]
    root = run / layout.CHECKPOINTS
    if root.is_dir():
        complete = {p.name for p in layout.list_checkpoints(run)}
        problems["leftover"] += [
            p.name for p in root.iterdir() if p.name != layout.LATEST and p.name not in complete
        ]
    return problems


def run_trials(n: int, seed: int, workdir: Path, max_delay: float = 1.0) -> dict[str, Any]:
    """n kill trials on one run (the chosen points in turn with random kills between them)."""
    torch.set_num_threads(1)
    # Warm up in this process (lazy imports, first backward, first save and load), so that
    # the forked children start training at once instead of each paying for it again.
    model, cfg, data = setup(max_steps=SAVE_EVERY)
    train(model, cfg, data, workdir / "warm-up")
    model, cfg, data = setup(max_steps=SAVE_EVERY + 1)
    train(model, cfg, data, workdir / "warm-up", resume=True)
    rng = random.Random(seed)
    run = workdir / "run"
    counts: dict[str, Any] = {
        "trials": 0,
        "at_points": 0,
        "at_random": 0,
        "not_killed": 0,
        "leftovers_removed": 0,
        "corrupt": 0,
        "lost": 0,
        "leftover": 0,
        "resume_failed": 0,
        "details": [],
    }
    for i in range(n):
        fault = POINTS[(i // 2) % len(POINTS)] if i % 2 == 1 else None
        before = newest_step(run) if run.is_dir() else -1
        t0 = time.monotonic()
        outcome = run_child(run, fault, rng.uniform(0.05, max_delay))
        log.info(
            "trial %d (%s): %s after %.2f s", i, fault or "random", outcome, time.monotonic() - t0
        )
        counts["trials"] += 1
        counts["at_points" if fault else "at_random"] += 1
        if outcome.startswith("error"):
            counts["resume_failed"] += 1
            counts["details"].append(f"trial {i} ({fault or 'random'}): training failed")
        elif outcome != "killed":
            counts["not_killed"] += 1
            counts["details"].append(f"trial {i} ({fault or 'random'}): {outcome}")
        found = leftovers_before(run)
        counts["leftovers_removed"] += len(found)
        problems = check(run, before)
        for kind, items in problems.items():
            counts[kind] += len(items)
            counts["details"] += [f"trial {i} ({fault or 'random'}): {kind} {x}" for x in items]
    # One last resume runs to its end in this process: the run is still usable.
    model, cfg, data = setup(max_steps=max(newest_step(run), 0) + SAVE_EVERY + 1)
    try:
        train(model, cfg, data, run, resume=layout.latest_checkpoint(run) is not None)
        left = check(run, newest_step(run))
        counts["final_resume"] = "ok" if not any(left.values()) else f"problems {left}"
    except UserError as e:
        counts["final_resume"] = f"failed: {e}"
        counts["resume_failed"] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60, help="kill trials (default 60)")
    parser.add_argument("--quick", action="store_true", help="12 trials")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the counts here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    n = 12 if args.quick else args.trials
    with tempfile.TemporaryDirectory(prefix="aiayn-faults-") as tmp:
        counts = run_trials(n, args.seed, Path(tmp))
    for key in (
        "trials",
        "at_points",
        "at_random",
        "not_killed",
        "leftovers_removed",
        "corrupt",
        "lost",
        "leftover",
        "resume_failed",
        "final_resume",
    ):
        print(f"{key:>18}  {counts[key]}")
    for line in counts["details"]:
        print("  " + line)
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    bad = counts["corrupt"] + counts["lost"] + counts["leftover"] + counts["resume_failed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
