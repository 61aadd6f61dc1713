"""Trained models shipped inside the package, addressed by name (docs/pretrained.md).

Each is one model file as ``aiayn average`` writes it (weights, config and tokenizer in one
``.safetensors``, section 6.1's averaged model) with a results JSON beside it, listed in this
directory's ``models.json``::

    {"en-zh": {"file": "en-zh.safetensors", "sha256": "...", "bytes": 11534336,
               "results": "en-zh.results.json", "description": "...", "data_licence": "...",
               "examples": [{"source": "I love you.", "reference": "..."}]}}

A name stands wherever a checkpoint is taken (``aiayn translate --checkpoint en-zh``,
``load_translator("en-zh")``): ``aiayn.run_dir.resolve_checkpoint`` asks ``resolve`` first. A
file or directory of that name in the working directory wins over the shipped model; a
shipped file is used only while its size and SHA-256 are the registry's; a name that is
neither is one line listing the shipped names. Nothing here prints: ``resolve`` returns the
line the CLI says, and nothing here imports torch until a model is loaded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiayn.errors import UserError
from aiayn.storage import sha256_file

if TYPE_CHECKING:
    import torch

    from aiayn.model import Ops, Transformer

DIR = Path(__file__).resolve().parent  # the shipped files: aiayn/pretrained/
REGISTRY = "models.json"
FIELDS = ("file", "sha256", "bytes", "results", "description", "data_licence", "examples")
NAME = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")  # en-zh, en-de-multi30k
MAX_BYTES = 12_000_000  # a shipped model file, so that the package stays small
_verified: set[tuple[Path, int, int]] = set()  # (file, size, mtime) whose SHA-256 matched


def registry() -> dict[str, dict[str, Any]]:
    """NAME -> its entry, from models.json (no file: nothing is shipped). Checked field by field."""
    path = DIR / REGISTRY
    if not path.is_file():
        return {}
    try:
        models = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable registry of shipped models ({e})") from None
    if not isinstance(models, dict):
        raise UserError(f"{path}: must be a JSON object of name -> entry")
    for name, entry in models.items():
        _check_entry(path, name, entry)
    return models


def _check_entry(path: Path, name: str, entry: Any) -> None:
    where = f"{path}: {name!r}"
    if not NAME.fullmatch(name):
        raise UserError(f"{where}: a name is lowercase letters and digits joined by - or .")
    if not isinstance(entry, dict) or not all(f in entry for f in FIELDS):
        raise UserError(f"{where}: an entry needs {', '.join(FIELDS)}")
    for key, suffix in (("file", ".safetensors"), ("results", ".json")):
        value = entry[key]
        if not isinstance(value, str) or "/" in value or not value.endswith(suffix):
            raise UserError(f"{where}: {key} must be a file name in {path.parent} ending {suffix}")
    if not isinstance(entry["bytes"], int) or entry["bytes"] < 1:
        raise UserError(f"{where}: bytes must be a positive integer")
    if not isinstance(entry["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
        raise UserError(f"{where}: sha256 must be 64 lowercase hex digits")
    examples = entry["examples"]
    pairs = isinstance(examples, list) and all(isinstance(e, dict) for e in examples)
    if not pairs or not examples or not all({"source", "reference"} <= set(e) for e in examples):
        raise UserError(f"{where}: examples must be a list of {{source, reference}}, not empty")


def names() -> list[str]:
    """The names of the shipped models."""
    return sorted(registry())


def entry(name: str) -> dict[str, Any]:
    """The registry entry of a shipped model; an unknown name is one line listing the names."""
    models = registry()
    if name not in models:
        raise UserError(f"{name}: not a shipped model ({_shipped(list(models))})")
    return models[name]


def _shipped(found: list[str]) -> str:
    return f"shipped: {', '.join(sorted(found))}" if found else "this aiayn ships no model"


def shown(name: str) -> str:
    """The shipped file as the CLI names it: aiayn/pretrained/FILE."""
    return f"{DIR.parent.name}/{DIR.name}/{entry(name)['file']}"


def shipped_file(name: str) -> Path:
    """The file of the shipped model NAME, used only while its size and SHA-256 match the
    registry's (checked once per process and file version: about 20 ms for 10 MB)."""
    want = entry(name)
    path = DIR / want["file"]
    if not path.is_file():
        raise UserError(f"{path}: the shipped model {name} is registered but not installed")
    stat = path.stat()
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _verified:
        if stat.st_size != want["bytes"] or sha256_file(path) != want["sha256"]:
            raise UserError(
                f"{path}: the shipped model {name} does not match the SHA-256 in {DIR / REGISTRY} "
                "(damaged or replaced): not used; reinstall aiayn"
            )
        _verified.add(key)
    return path


def resolve(name_or_path: str | Path) -> tuple[Path, str | None]:
    """(the path a checkpoint argument names, how: one line for the user, or None).

    A shipped model's name gives its verified file, how "using the shipped model NAME (...)";
    but a file or directory of that name in the working directory wins, how saying so. Any
    other argument is its own path (how None), for ``resolve_checkpoint`` to look into.
    """
    text, path = str(name_or_path), Path(name_or_path)
    if text not in registry():
        return path, None
    if path.exists():
        kind = "directory" if path.is_dir() else "file"
        return path, f"using ./{text}, a local {kind}; the shipped model of that name is not used"
    return shipped_file(text), f"using the shipped model {text} ({shown(text)})"


def not_a_name(text: str) -> str:
    """The end of the "checkpoint not found" line for a bare name: the names that are shipped."""
    if "/" in text or "\\" in text or "." in text:  # a path, or a file name: not meant as a name
        return ""
    return f", and no shipped model has that name ({_shipped(names())})"


def shipped_name(path: str | Path) -> str | None:
    """The name of the shipped model whose file PATH is, or None."""
    target = Path(path).resolve()
    for name, e in registry().items():
        if (DIR / e["file"]).resolve() == target:
            return name
    return None


def describe(path: str | Path) -> str:
    """A model file as the CLI names it: "the shipped model NAME (aiayn/pretrained/FILE)" or
    the path itself."""
    name = shipped_name(path)
    return str(path) if name is None else f"the shipped model {name} ({shown(name)})"


def examples(name: str) -> list[dict[str, str]]:
    """The sentences a page offers first for the shipped model NAME ({source, reference})."""
    return [dict(e) for e in entry(name)["examples"]]


def results(name: str) -> dict[str, Any]:
    """The results JSON shipped beside the model NAME (how it was scored: docs/pretrained.md)."""
    path = DIR / entry(name)["results"]
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(
            f"{path}: the results of the shipped model {name} are unreadable ({e})"
        ) from None


def load_pretrained(
    name: str, device: torch.device | str = "cpu", ops: Ops | None = None
) -> tuple[Transformer, dict[str, str]]:
    """The shipped model NAME and its metadata, as ``aiayn.weights.load_model`` returns them.

    Always the shipped file (asked for by name here; ``--checkpoint NAME`` and
    ``load_translator(NAME)`` look in the working directory first, ``resolve``).
    """
    from aiayn.weights import load_model

    path = shipped_file(name)
    return load_model(path, device) if ops is None else load_model(path, device, ops=ops)
