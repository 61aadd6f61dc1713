"""A run's checkpoint directories: writing, finding, pruning, resuming.  Section 5.2.

The layout of a run directory is in ``aiayn.run_dir``.

A checkpoint is built in ``.step_N.tmp-PID-X`` (``aiayn.storage.atomic_directory``): files,
then the manifest, fsync, one rename. It is *complete* only with a manifest whose files are all
there with their recorded sizes; every reader (``latest_checkpoint``, ``list_checkpoints``, so
``--resume``, ``translate --checkpoint RUN`` and ``average --last N``) sees complete ones only,
and loading checks the hashes too. Pruning renames an old checkpoint to ``.step_N.pruned-PID-X``
before deleting it, so a prune cut short never leaves a directory that looks complete. A kill
at any moment leaves the previous checkpoints and temporaries that ``clean_run`` removes at the
next start. Checkpoints of an older aiayn (no manifest, but all three files) are accepted with a
warning and without verification; see docs/reliability.md.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aiayn import storage
from aiayn.errors import UserError
from aiayn.run_dir import (
    CHECKPOINT_FILES,
    CHECKPOINTS,
    LATEST,
    META_FILE,
    MODEL_FILE,
    TRAINER_FILE,
    complete_or_not,
    has_files,
    read_pointer,
    sorted_steps,
    step_name,
)
from aiayn.weights import check_same_architecture, load_state, save_model

log = logging.getLogger(__name__)

TRAINER_KEYS = ("optimizer", "progress", "rng")  # what trainer.pt holds
FORMAT = "aiayn-checkpoint"


@dataclass
class Progress:
    """Where training stands: updates done, data position, counters."""

    step: int = 0  # optimizer updates done (Eq. (3) uses step + 1 for the next one)
    epoch: int = 0  # the data epoch being read
    batch_index: int = 0  # batches of that epoch already consumed by this rank
    tokens: int = 0  # target tokens trained on (all ranks)
    bad_steps: int = 0  # consecutive skipped updates
    elapsed_s: float = 0.0  # training time over all sessions of the run


def clean_run(run_dir: str | Path) -> list[Path]:
    """Remove what dead writers left in a run (temporaries, half-pruned checkpoints); log them.

    Call it with the run's lock held (``Session.start`` does): then no writer is alive.
    """
    run = Path(run_dir)
    removed = storage.remove_leftovers(run, owned=True)
    removed += storage.remove_leftovers(run / CHECKPOINTS, owned=True, is_complete=complete_or_not)
    pointer = run / CHECKPOINTS / LATEST
    complete = [p for p in sorted_steps(run) if complete_or_not(p)]
    named = read_pointer(pointer)
    if complete and named != complete[-1].name:
        storage.write_text(pointer, complete[-1].name + "\n")
        log.warning(
            "%s named %r, now %s (the newest complete one)", pointer, named, complete[-1].name
        )
    return removed


def rng_state() -> dict[str, Any]:
    """The RNG states of torch (CPU and CUDA), NumPy and Python, as tensors and numbers."""
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()  # noqa: NPY002
    py_version, py_state, py_gauss = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": [
            np_name,
            torch.from_numpy(np_keys.astype(np.int64)),
            np_pos,
            np_has_gauss,
            np_gauss,
        ],
        "python": [py_version, torch.tensor(py_state, dtype=torch.int64), py_gauss],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` returned."""
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np_state = (name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss)
    np.random.set_state(np_state)  # noqa: NPY002
    version, py_state, py_gauss = state["python"]
    random.setstate((version, tuple(py_state.tolist()), py_gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    run_dir: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    progress: Progress,
    rng: list[dict[str, Any]],
    metadata: dict[str, str] | None = None,
    keep_last: int = 0,
) -> Path:
    """Write RUN/checkpoints/step_N (manifest last), point ``latest`` at it, keep the last K.

    ``rng`` holds the RNG state of every rank (index = rank). Returns the directory. A full
    disk is ``storage.DiskFull``; the earlier checkpoints are untouched either way.
    """
    root = Path(run_dir) / CHECKPOINTS
    final = root / step_name(progress.step)
    # The same step again (after skipped updates) replaces the directory.
    with storage.atomic_directory(final, replace=True) as tmp:
        meta = {**(metadata or {}), "step": str(progress.step)}
        save_model(tmp / MODEL_FILE, model, metadata=meta)  # type: ignore[arg-type]
        storage.fault_point("checkpoint.model")
        trainer = {"optimizer": optimizer.state_dict(), "progress": asdict(progress), "rng": rng}
        storage.atomic_write(tmp / TRAINER_FILE, lambda p: torch.save(trainer, p))
        storage.fault_point("checkpoint.trainer")
        info = {**asdict(progress), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        storage.write_text(tmp / META_FILE, json.dumps(info, indent=1) + "\n")
        storage.write_manifest(tmp, {"format": FORMAT, "step": progress.step}, CHECKPOINT_FILES)
    storage.fault_point("checkpoint.latest")
    storage.write_text(root / LATEST, final.name + "\n")
    if keep_last > 0:  # older complete (or damaged) ones beyond the last K
        steps = [p for p in sorted_steps(run_dir) if has_files(p)]
        for old in steps[:-keep_last]:
            if old != final:
                prune(old)
    return final


def prune(ckpt_dir: Path) -> None:
    """Delete a checkpoint so that no moment of it looks complete: rename it away, then delete."""
    away = storage.temp_name(ckpt_dir, "pruned")
    os.replace(ckpt_dir, away)
    storage.fsync_dir(ckpt_dir.parent)
    storage.fault_point("prune.renamed")
    for f in sorted(away.iterdir()):
        f.unlink()
        storage.fault_point("prune.file")
    shutil.rmtree(away, ignore_errors=True)


def read_trainer_state(ckpt_dir: Path) -> dict[str, Any]:
    """trainer.pt, without code execution; a damaged or foreign file is a UserError naming it."""
    path = ckpt_dir / TRAINER_FILE
    if (ckpt_dir / storage.MANIFEST).is_file():
        storage.check_file(ckpt_dir, TRAINER_FILE, storage.read_manifest(ckpt_dir))
    if not path.is_file():
        raise UserError(f"{path}: missing; resume from another checkpoint or start a new run")
    try:
        trainer = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle and zip errors of every kind: never a traceback
        first = " ".join(str(e).split())[:200]
        raise UserError(f"{path}: not a trainer state aiayn can read safely ({first})") from None
    if not isinstance(trainer, dict) or not set(TRAINER_KEYS) <= set(trainer):
        raise UserError(f"{path}: not an aiayn trainer state ({', '.join(TRAINER_KEYS)})")
    return trainer


def check_trainer_state(ckpt_dir: str | Path) -> None:
    """trainer.pt is there and readable without pickle: the check before a resume loads anything.

    A missing, truncated or pickled (not torch.save's zip) file is one UserError naming it; it
    is opened with ``weights_only=True`` and memory-mapped, so nothing runs and little is read
    (``read_trainer_state`` reads it in full, verified, when the checkpoint is loaded).
    """
    import zipfile

    ckpt_dir = Path(ckpt_dir)
    path = ckpt_dir / TRAINER_FILE
    if not path.is_file():
        raise UserError(f"{path}: missing, so {ckpt_dir.name} cannot be resumed")
    if not zipfile.is_zipfile(path):  # torch.save writes a zip archive; its index is at the end
        raise UserError(
            f"{path}: not a trainer state written by aiayn train (not a complete torch.save "
            "archive: truncated, or pickled by something else)"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as e:  # torch raises RuntimeError, UnpicklingError, EOFError, ... here
        first = " ".join(str(e).split())[:160]
        raise UserError(f"{path}: not a readable trainer state ({first})") from None
    if not isinstance(state, dict) or any(k not in state for k in TRAINER_KEYS):
        raise UserError(
            f"{path}: not a trainer state of aiayn train (needs {', '.join(TRAINER_KEYS)})"
        )


def load_checkpoint(
    ckpt_dir: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rank: int = 0,
    world_size: int = 1,
) -> Progress:
    """Load weights, optimizer state and this rank's RNG state; return the Progress.

    Every file is checked against the checkpoint's manifest first (a UserError naming it).
    """
    ckpt_dir = Path(ckpt_dir)
    if (ckpt_dir / storage.MANIFEST).is_file():  # model and trainer files are checked as read
        storage.check_file(ckpt_dir, META_FILE, storage.read_manifest(ckpt_dir))
    state, config, _ = load_state(ckpt_dir / MODEL_FILE)
    check_same_architecture(config, model.config, f"{ckpt_dir}")  # type: ignore[arg-type]
    model.load_state_dict(state)
    trainer = read_trainer_state(ckpt_dir)
    try:
        optimizer.load_state_dict(trainer["optimizer"])
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{ckpt_dir / TRAINER_FILE}: optimizer state does not fit ({e})") from None
    rngs = trainer["rng"]
    if len(rngs) == world_size:
        set_rng_state(rngs[rank])
    else:
        log.warning(
            "%s was written by %d process(es), this run has %d: RNG states are not restored, "
            "so dropout masks will differ from an uninterrupted run",
            ckpt_dir,
            len(rngs),
            world_size,
        )
    try:
        return Progress(**trainer["progress"])
    except TypeError as e:
        raise UserError(f"{ckpt_dir / TRAINER_FILE}: unreadable progress record ({e})") from None
