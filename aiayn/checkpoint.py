"""Model weights on disk: safetensors with the full ModelConfig in the metadata.

Never loaded with code execution: weights are safetensors; anything else a checkpoint carries
(optimizer state, RNG states) is loaded with ``torch.load(weights_only=True)``. Writes are
atomic: a file appears under its name complete, or not at all.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn.config import ModelConfig, from_dict, to_dict
from aiayn.errors import UserError
from aiayn.model import Transformer

CONFIG_KEY = "model_config"


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call write(tmp) on a temporary file beside path, then rename it over path (atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the file from other users
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_model(
    path: str | Path,
    model: Transformer | dict[str, Tensor],
    config: ModelConfig | None = None,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write the weights (or a state dict with its config) to a safetensors file, atomically."""
    from safetensors.torch import save_file

    if isinstance(model, Transformer):
        config = model.config
        state = model.state_dict()
    else:
        state = model
    if config is None:
        raise ValueError("save_model: a state dict needs its config")
    tensors = {k: v.detach().contiguous().cpu() for k, v in state.items()}
    meta = {CONFIG_KEY: json.dumps(to_dict(config)), **(metadata or {})}
    atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=meta))


def read_metadata(path: str | Path) -> dict[str, str]:
    """The metadata of a safetensors checkpoint; a missing or broken file is a UserError."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: checkpoint not found")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
    except Exception as e:  # safetensors raises its own error types for corrupt files
        raise UserError(f"{path}: not a safetensors checkpoint ({e})") from None
    if CONFIG_KEY not in meta:
        raise UserError(f"{path}: checkpoint has no {CONFIG_KEY} in its metadata")
    return meta


def read_config(path: str | Path) -> ModelConfig:
    """The ModelConfig stored in a checkpoint."""
    meta = read_metadata(path)
    try:
        return from_dict(ModelConfig, json.loads(meta[CONFIG_KEY]))
    except (ValueError, TypeError) as e:
        raise UserError(f"{path}: invalid model config in checkpoint: {e}") from None


def load_state(path: str | Path) -> tuple[dict[str, Tensor], ModelConfig, dict[str, str]]:
    """(state dict, config, metadata) of a checkpoint, without building a model."""
    from safetensors.torch import load_file

    config = read_config(path)
    meta = read_metadata(path)
    return load_file(str(path)), config, meta


def load_model(
    path: str | Path, device: torch.device | str = "cpu", expect: ModelConfig | None = None
) -> tuple[Transformer, dict[str, str]]:
    """Build the model a checkpoint describes and load its weights.

    With ``expect``, a checkpoint of another architecture is refused with a message that names
    the differing fields.
    """
    state, config, meta = load_state(path)
    if expect is not None:
        check_same_architecture(config, expect, str(path))
    model = Transformer(config)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        first = " ".join(str(e).split())  # one line: torch lists every mismatching tensor
        raise UserError(f"{path}: weights do not match the stored config: {first[:300]}") from None
    return model.to(device), meta


ARCHITECTURE_FIELDS = (
    "vocab_size",
    "d_model",
    "n_heads",
    "d_k",
    "d_v",
    "d_ff",
    "n_layers",
    "n_dec_layers",
    "norm_first",
    "positions",
    "max_positions",
    "attn_bias",
    "pad_id",
)


def check_same_architecture(a: ModelConfig, b: ModelConfig, what: str) -> None:
    """Raise a UserError naming every architecture field where a and b differ."""
    diff = [
        f"{k} {getattr(a, k)!r} != {getattr(b, k)!r}"
        for k in ARCHITECTURE_FIELDS
        if getattr(a, k) != getattr(b, k)
    ]
    if diff:
        raise UserError(f"{what}: architecture differs: {'; '.join(diff)}")


def config_summary(config: ModelConfig) -> dict[str, Any]:
    """The config as a dict (for logs and JSON reports)."""
    return to_dict(config)
