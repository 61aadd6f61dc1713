"""Checkpoints of a run, resuming, and checkpoint averaging.  Sections 5.2 and 6.1.

"For the base models, we used a single model obtained by averaging the last 5 checkpoints,
which were written at 10-minute intervals. For the big models, we averaged the last 20
checkpoints." (6.1)

Layout of a run directory (``aiayn train --run RUN``)::

    RUN/config.json                       the full model and train configs
    RUN/metrics.jsonl                     one JSON object per event (metrics.py)
    RUN/checkpoints/step_00001000/        one complete checkpoint:
        model.safetensors                 weights + model config + tokenizer + step
        trainer.pt                        optimizer, step, data position, RNG states
        meta.json                         step, epoch, batch index, tokens, time (human-readable)
    RUN/checkpoints/latest                text file naming the latest complete checkpoint

A checkpoint is written into a hidden temporary directory and renamed into place once
complete; ``latest`` is then replaced by an atomic rename. A crash at any moment leaves the
previous checkpoints and a ``latest`` that names a complete one (or, if a rename was cut
short, ``latest_checkpoint`` falls back to the newest complete directory).
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
from torch import Tensor

from aiayn.checkpoint import atomic_write, check_same_architecture, load_state, save_model
from aiayn.config import ModelConfig
from aiayn.errors import UserError

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest"
MODEL_FILE = "model.safetensors"
TRAINER_FILE = "trainer.pt"
META_FILE = "meta.json"
CONFIG_FILE = "config.json"


@dataclass
class Progress:
    """Where training stands: updates done, data position, counters."""

    step: int = 0  # optimizer updates done (Eq. (3) uses step + 1 for the next one)
    epoch: int = 0  # the data epoch being read
    batch_index: int = 0  # batches of that epoch already consumed by this rank
    tokens: int = 0  # target tokens trained on (all ranks)
    bad_steps: int = 0  # consecutive skipped updates
    elapsed_s: float = 0.0  # training time over all sessions of the run


def step_name(step: int) -> str:
    return f"step_{step:08d}"


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoint directories of a run (those with meta.json), oldest step first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [p for p in root.glob("step_*") if (p / META_FILE).is_file() and p.is_dir()]
    return sorted(found, key=lambda p: int(p.name.split("_")[1]))


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The directory ``latest`` names, or the newest complete one if that name is broken."""
    root = Path(run_dir) / CHECKPOINTS
    pointer = root / LATEST
    if pointer.is_file():
        target = root / pointer.read_text(encoding="utf-8").strip()
        if (target / META_FILE).is_file():
            return target
        log.warning("%s names %s, which is not complete; using the newest one", pointer, target)
    complete = list_checkpoints(run_dir)
    return complete[-1] if complete else None


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
    """Write RUN/checkpoints/step_N atomically, point ``latest`` at it, keep the last K.

    ``rng`` holds the RNG state of every rank (index = rank). Returns the directory.
    """
    root = Path(run_dir) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / step_name(progress.step)
    tmp = root / f".{final.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    meta = {**(metadata or {}), "step": str(progress.step)}
    save_model(tmp / MODEL_FILE, model, metadata=meta)  # type: ignore[arg-type]
    trainer = {"optimizer": optimizer.state_dict(), "progress": asdict(progress), "rng": rng}
    torch.save(trainer, tmp / TRAINER_FILE)
    info = {**asdict(progress), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (tmp / META_FILE).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    if final.exists():  # the same step again (after skipped updates): replace it
        trash = root / f".{final.name}.old-{os.getpid()}"
        os.replace(final, trash)
        os.replace(tmp, final)
        shutil.rmtree(trash)
    else:
        os.replace(tmp, final)
    atomic_write(root / LATEST, lambda p: p.write_text(final.name + "\n", encoding="utf-8"))
    if keep_last > 0:
        for old in list_checkpoints(run_dir)[:-keep_last]:
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(
    ckpt_dir: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rank: int = 0,
    world_size: int = 1,
) -> Progress:
    """Load weights, optimizer state and this rank's RNG state; return the Progress."""
    ckpt_dir = Path(ckpt_dir)
    state, config, _ = load_state(ckpt_dir / MODEL_FILE)
    check_same_architecture(config, model.config, f"{ckpt_dir}")  # type: ignore[arg-type]
    model.load_state_dict(state)
    trainer = torch.load(ckpt_dir / TRAINER_FILE, map_location="cpu", weights_only=True)
    optimizer.load_state_dict(trainer["optimizer"])
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
    return Progress(**trainer["progress"])


# Averaging (section 6.1) -------------------------------------------------------------------


def resolve_model_files(paths: list[str | Path]) -> list[Path]:
    """Expand run directories, checkpoint directories and files into model files, in order.

    A run directory (or its checkpoints/ folder) gives its complete checkpoints by step.
    """
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            files.append(p)
        elif (p / MODEL_FILE).is_file():
            files.append(p / MODEL_FILE)
        elif (p / CHECKPOINTS).is_dir() or p.name == CHECKPOINTS:
            run = p if (p / CHECKPOINTS).is_dir() else p.parent
            found = [c / MODEL_FILE for c in list_checkpoints(run)]
            if not found:
                raise UserError(f"{p}: no complete checkpoint in {run / CHECKPOINTS}")
            files.extend(found)
        else:
            raise UserError(f"{p}: neither a run directory, a checkpoint directory nor a file")
    return files


def average_checkpoints(files: list[Path]) -> tuple[dict[str, Tensor], ModelConfig, dict[str, str]]:
    """theta = (1/n) sum_i theta_i over checkpoints of one architecture.  Section 6.1.

    Sums in float64, then casts back to each tensor's dtype. The metadata (tokenizer included)
    is the newest checkpoint's, with the averaged files named under "averaged_from". Mixed
    architectures or tokenizers are a UserError naming the file.
    """
    if not files:
        raise UserError("average: no checkpoints given")
    first, config, _ = load_state(files[0])
    sums = {k: v.to(torch.float64) for k, v in first.items()}
    meta: dict[str, str] = {}
    tokenizers = set()
    for f in files:
        state, cfg, meta = load_state(f)
        check_same_architecture(cfg, config, f"{f} (compared with {files[0]})")
        tokenizers.add(meta.get("tokenizer"))
        if len(tokenizers) > 1:
            raise UserError(f"{f}: its tokenizer differs from that of {files[0]}")
        if f is files[0]:
            continue
        if set(state) != set(sums):
            raise UserError(f"{f}: its tensors differ from those of {files[0]}")
        for k, v in state.items():
            sums[k] += v.to(torch.float64)
    n = len(files)
    averaged = {k: (v / n).to(first[k].dtype) for k, v in sums.items()}
    meta = {**meta, "averaged_from": json.dumps([str(f) for f in files])}
    return averaged, config, meta


def average_to_file(files: list[Path], out: str | Path) -> dict[str, str]:
    """Average ``files`` and write the result to ``out`` (safetensors, atomically)."""
    state, config, meta = average_checkpoints(files)
    save_model(out, state, config, metadata=meta)
    return meta
