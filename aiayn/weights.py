"""A model weights file: safetensors with the full ModelConfig in the metadata.

Never loaded with code execution: weights are safetensors; anything else a checkpoint carries
(optimizer state, RNG states) is loaded with ``torch.load(weights_only=True)``. Files are
written by the protocol of ``aiayn.storage`` (a file appears under its name complete, or not
at all) and checked on load: a file inside a checkpoint directory against that directory's
manifest, any other file (an average) against the SHA-256 of its tensors and metadata that
``save_model`` stores in the metadata under "weights_sha256".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn import storage
from aiayn.config import ModelConfig, from_dict, to_dict
from aiayn.errors import UserError
from aiayn.model import PLAIN, Ops, Transformer

CONFIG_KEY = "model_config"
DIGEST_KEY = "weights_sha256"


def weights_digest(tensors: dict[str, Tensor], metadata: dict[str, str]) -> str:
    """SHA-256 over the metadata (but this digest) and every tensor's name, dtype, shape, bytes."""
    h = hashlib.sha256()
    meta = {k: v for k, v in metadata.items() if k != DIGEST_KEY}
    h.update(json.dumps(meta, sort_keys=True).encode())
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        h.update(f"\0{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _check_written(path: Path, tensors: dict[str, Tensor]) -> None:
    """A safetensors file's size must be 8 + header + data: a short write is a full disk."""
    data = sum(t.numel() * t.element_size() for t in tensors.values())
    with path.open("rb") as fh:
        header = int.from_bytes(fh.read(8), "little")
    if path.stat().st_size != 8 + header + data:
        raise storage.no_space(path)


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
    meta[DIGEST_KEY] = weights_digest(tensors, meta)

    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp), metadata=meta)
        _check_written(tmp, tensors)

    storage.atomic_write(path, write)


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
    """(state dict, config, metadata) of a checkpoint, without building a model, verified.

    Inside a checkpoint directory with a manifest, the file is checked against it (size, and
    SHA-256 unless hash checks are off); elsewhere against its "weights_sha256". A file with
    neither (written by an older aiayn) loads unverified.
    """
    from safetensors.torch import load_file

    path = Path(path)
    manifest = None
    if (path.parent / storage.MANIFEST).is_file():
        manifest = storage.read_manifest(path.parent)
        if path.name in manifest["files"]:
            storage.check_file(path.parent, path.name, manifest)
    config = read_config(path)
    meta = read_metadata(path)
    try:
        state = load_file(str(path))
    except Exception as e:  # safetensors raises its own error types for corrupt files
        raise UserError(f"{path}: not a readable safetensors file ({e})") from None
    verified = manifest is not None and path.name in manifest["files"]
    check = not verified and DIGEST_KEY in meta and storage.hash_checks()
    if check and weights_digest(state, meta) != meta[DIGEST_KEY]:
        raise UserError(f"{path}: its weights do not match their SHA-256: the file is damaged")
    return state, config, meta


class _ShapesOnly(torch.overrides.TorchFunctionMode):
    """Tensor.normal_ draws nothing while a model is built on the meta device for its shapes.

    A draw on a meta tensor computes nothing, but its first use imports torch._dynamo (about
    1.3 s of every command's start-up); the shapes are the same either way. Modes are per
    thread, so a model built elsewhere at the same time is drawn as usual.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.normal_, torch.nn.init.normal_):
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def check_fits(path: str | Path, config: ModelConfig, found: dict[str, tuple[int, ...]]) -> None:
    """Raise one UserError naming path when the tensors' shapes do not fit the config."""
    with torch.device("meta"), _ShapesOnly():  # shapes only, nothing allocated or drawn
        expected = {k: tuple(v.shape) for k, v in Transformer(config).state_dict().items()}
    problems = [f"{k} missing" for k in expected if k not in found]
    problems += [f"{k} unexpected" for k in found if k not in expected]
    problems += [
        f"{k} has shape {found[k]}, the config needs {shape}"
        for k, shape in expected.items()
        if k in found and found[k] != shape
    ]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(
            f"{path}: weights do not match the architecture stored with them: {problems[0]}{more}"
        )


def check_file_fits(path: str | Path) -> None:
    """check_fits for a safetensors file, reading only its header (no tensor data)."""
    from safetensors import safe_open

    config = read_config(path)
    with safe_open(str(path), framework="pt") as f:
        found = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
    check_fits(path, config, found)


def load_model(
    path: str | Path,
    device: torch.device | str = "cpu",
    expect: ModelConfig | None = None,
    ops: Ops = PLAIN,
) -> tuple[Transformer, dict[str, str]]:
    """The model a checkpoint describes, its weights loaded, in eval mode; and its metadata.

    The one loader of a model file. ``ops`` are the operations to run it with (``PLAIN``, or
    ``aiayn.kernels.FAST``: a run-time choice, not stored). Weights that do not fit the stored
    config are one UserError naming the first misfit; with ``expect``, a checkpoint of another
    architecture is refused with a message that names the differing fields.
    """
    state, config, meta = load_state(path)
    check_fits(path, config, {k: tuple(v.shape) for k, v in state.items()})
    if expect is not None:
        check_same_architecture(config, expect, str(path))
    model = Transformer(config, ops)
    model.load_state_dict(state)
    return model.to(device).eval(), meta


ARCHITECTURE_FIELDS = (
    "vocab_size",
    "d_model",
    "n_heads",
    "d_k_override",
    "d_v_override",
    "d_ff",
    "n_layers",
    "n_dec_layers",
    "norm_first",
    "positions",
    "max_positions",
    "attn_bias",
    "pad_id",
    "activation",
    "logits_bias",
    "decoder_start",
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
