"""Checkpoint averaging.  Section 6.1.

"For the base models, we used a single model obtained by averaging the last 5 checkpoints,
which were written at 10-minute intervals. For the big models, we averaged the last 20
checkpoints." (6.1) Only complete checkpoints are averaged (``aiayn.run_dir.list_checkpoints``),
each verified on load; the result is written by the protocol of ``aiayn.storage``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import Tensor

from aiayn import storage
from aiayn.config import ModelConfig
from aiayn.errors import UserError
from aiayn.run_dir import CHECKPOINTS, MODEL_FILE, list_checkpoints
from aiayn.weights import check_same_architecture, load_state, save_model


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
    """Average ``files`` and write the result to ``out`` (safetensors, atomically).

    First removes the temporaries that a killed ``average`` left beside ``out``.
    """
    out = Path(out)
    storage.remove_leftovers(out.parent, names=[out.name])
    state, config, meta = average_checkpoints(files)
    save_model(out, state, config, metadata=meta)
    return meta
