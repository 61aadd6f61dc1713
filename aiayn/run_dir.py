"""The layout of a run directory, and finding what is in it, for readers and writers alike.

One home for the names of a run's files: training writes them (``aiayn.train.checkpoints``),
inference, averaging and the explorer read them through this module, which imports nothing
from training.

Layout of a run directory (``aiayn train --run RUN``)::

    RUN/config.json                       the full model and train configs
    RUN/metrics.jsonl                     one JSON object per event (metrics.py)
    RUN/train.lock                        held (flock) by the training that owns the run
    RUN/checkpoints/step_00001000/        one complete checkpoint:
        model.safetensors                 weights + model config + tokenizer + step
        trainer.pt                        optimizer, step, data position, RNG states
        meta.json                         step, epoch, batch index, tokens, time (human-readable)
        manifest.json                     written last: every file's name, size and SHA-256
    RUN/checkpoints/latest                text file naming the latest complete checkpoint

A checkpoint is *complete* only with a manifest whose files are all there with their recorded
sizes; every reader here (``latest_checkpoint``, ``list_checkpoints``, so ``--resume``,
``translate --checkpoint RUN`` and ``average --last N``) sees complete ones only. How they are
written, pruned and cleaned up so that no moment of a write looks complete is
``aiayn.train.checkpoints``; checkpoints of an older aiayn (no manifest, but all three files)
are accepted with a warning and without verification (docs/reliability.md).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from aiayn import pretrained, storage
from aiayn.errors import UserError

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"  # RUN/config.json
METRICS_FILE = "metrics.jsonl"  # RUN/metrics.jsonl
LOCK_FILE = "train.lock"  # RUN/train.lock
CHECKPOINTS = "checkpoints"  # RUN/checkpoints/
LATEST = "latest"  # RUN/checkpoints/latest
MODEL_FILE = "model.safetensors"  # in a checkpoint directory
TRAINER_FILE = "trainer.pt"
META_FILE = "meta.json"
CHECKPOINT_FILES = (MODEL_FILE, TRAINER_FILE, META_FILE)
_warned_legacy: set[Path] = set()


def step_name(step: int) -> str:
    """The directory name of step N's checkpoint: step_0000000N."""
    return f"step_{step:08d}"


def is_complete(ckpt_dir: str | Path) -> bool:
    """Whether a checkpoint directory is complete: its manifest is there (written last).

    A directory without one is a write or a prune cut short: not complete, skipped. A manifest
    that is damaged, or files that are missing or of another size than it records, are a
    UserError naming the file: that checkpoint was complete and is now corrupt, which must not
    pass unnoticed (hashes are checked on load, not here). An older aiayn wrote no manifest:
    such a directory counts, with a warning, when all three files are there.
    """
    d = Path(ckpt_dir)
    if not d.is_dir():
        return False
    if not (d / storage.MANIFEST).is_file():
        legacy = all((d / f).is_file() for f in CHECKPOINT_FILES)
        if legacy and d not in _warned_legacy:
            _warned_legacy.add(d)
            log.warning("%s has no manifest (an older aiayn wrote it): loaded unverified", d)
        return legacy
    manifest = storage.read_manifest(d)
    for rel in CHECKPOINT_FILES:
        storage.check_file(d, rel, manifest, hashes=False)
    return True


def has_files(ckpt_dir: Path) -> bool:
    """A manifest, or the three files of an older aiayn: a checkpoint, complete or damaged."""
    return (ckpt_dir / storage.MANIFEST).is_file() or all(
        (ckpt_dir / f).is_file() for f in CHECKPOINT_FILES
    )


def complete_or_not(ckpt_dir: Path) -> bool:
    try:
        return is_complete(ckpt_dir)
    except UserError:
        return False


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoint directories of a run, oldest step first."""
    return [p for p in sorted_steps(run_dir) if is_complete(p)]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint (None when there is none).

    ``latest`` names it too, for people and scripts; it is written after the checkpoint, so a
    kill in between leaves it one behind: the newest complete directory wins, and ``clean_run``
    rewrites the pointer.
    """
    complete = list_checkpoints(run_dir)
    if not complete:
        return None
    pointer = Path(run_dir) / CHECKPOINTS / LATEST
    named = (
        pointer.read_text(encoding="utf-8", errors="replace").strip() if pointer.is_file() else ""
    )
    if named != complete[-1].name:
        log.info("%s names %r; the newest complete checkpoint is %s", pointer, named, complete[-1])
    return complete[-1]


def sorted_steps(run_dir: str | Path) -> list[Path]:
    """Every step_N directory of a run, complete or not, oldest step first."""
    root = Path(run_dir) / CHECKPOINTS
    found = [p for p in root.glob("step_*") if p.name[5:].isdigit()] if root.is_dir() else []
    return sorted(found, key=lambda p: int(p.name[5:]))


def read_pointer(pointer: Path) -> str:
    return (
        pointer.read_text(encoding="utf-8", errors="replace").strip() if pointer.is_file() else ""
    )


def resolve_checkpoint(path: str | Path) -> Path:
    """The model file PATH means: itself, DIR/model.safetensors, or a run's latest complete
    checkpoint (``latest_checkpoint``); PATH may be the run or its checkpoints/ directory, or
    the name of a model shipped with aiayn when nothing here has it (``aiayn.pretrained``)."""
    p, _ = pretrained.resolve(path)  # a shipped model's verified file, or PATH itself
    if p.is_file():
        return p
    if (p / MODEL_FILE).is_file():
        return p / MODEL_FILE
    run = p if (p / CHECKPOINTS).is_dir() else p.parent  # a run directory or its checkpoints/
    latest = latest_checkpoint(run) if (run / CHECKPOINTS).is_dir() else None  # complete only
    if latest is not None:
        return latest / MODEL_FILE
    if not p.exists():
        raise UserError(f"{p}: checkpoint not found{pretrained.not_a_name(str(path))}")
    raise UserError(f"{p}: no {MODEL_FILE}, checkpoints/latest or step_* checkpoint in it")


def find_run_dir(model_file: Path) -> Path | None:
    """The run directory a model file belongs to (config.json and checkpoints/), if any.

    Looked for up to three levels up: RUN/checkpoints/step_N/model.safetensors.
    """
    for d in list(model_file.resolve().parents)[:3]:
        if (d / CONFIG_FILE).is_file() and (d / CHECKPOINTS).is_dir():
            return d
    return None


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The events of a metrics file (or of RUN/metrics.jsonl when given a run directory).

    Written by training (``aiayn.train.metrics``), read here so that inference (the explorer)
    can read what a run recorded without importing training.
    """
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    if not path.is_file():
        raise UserError(f"{path}: no metrics file (is this a run directory of aiayn train?)")
    events = []
    data = path.read_bytes()
    lines = data.splitlines()
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise UserError(f"{path}:{n}: not UTF-8 text ({e.reason})") from None
        except json.JSONDecodeError as e:
            if n == len(lines) and not data.endswith(b"\n"):
                break  # the last line of a process that died while writing it
            raise UserError(f"{path}:{n}: not a JSON object: {e}") from None
        if not isinstance(event, dict) or not isinstance(event.get("step", 0), int):
            raise UserError(f"{path}:{n}: not an event of aiayn train: {raw[:80]!r}")
        events.append(event)
    return events
