"""The protocol of a Table 3 rerun and its results file: one JSON record a finished run.

``Protocol`` is what every run of one results directory shares (the small base, the budget,
the decoding of Table 3: beam 4, alpha 0.6, no checkpoint averaging). It is written once to
DIR/protocol.json; a later invocation with other settings is refused, so that every record of
a directory was trained with the same number of updates on the same batches. DIR/results.jsonl
gets one line per finished run, appended and flushed to disk when the run has been scored; a
run with a record is never trained again, and a half-written last line (a kill while
appending) is ignored, and cut off when the next record is appended.

Both files are read through one check (``check_directory``, ``read_protocol``,
``read_results``): protocol.json against ``Protocol``'s fields, every record against
``RECORD``, the keys the runner and the report read with their types. A damaged file is one
UserError naming it (and the line), before anything is run or written.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiayn.config import ModelConfig, from_dict
from aiayn.errors import UserError
from aiayn.table3.rows import SMALL_BASE, VARIATIONS, quantities

PROTOCOL_FILE = "protocol.json"
RESULTS_FILE = "results.jsonl"


@dataclass(frozen=True, kw_only=True)
class Protocol:
    """The settings every run of a results directory shares.  Sections 5, 6.1 and 6.2.

    The paper trained every row of Table 3 for 100K steps of about 25000 source and target
    tokens; here every row gets ``steps`` updates of ``max_tokens``-token batches, the same
    batches for the same seed (the token-budget batcher depends on the lengths and the seed
    only). The learning rate follows Eq. (3) with ``warmup`` and ``lr_scale`` for every row.
    """

    steps: int = 1000
    max_tokens: int = 2048  # DEVIATION(5.1): 2048 tokens a batch instead of about 25000
    warmup: int = 400  # DEVIATION(5.3): 400 warm-up steps for a budget of 1000 (paper: 4000)
    lr_scale: float = 0.5  # EXTENSION: Eq. (3) times 0.5, as chosen on valid for Multi30k
    vocab_size: int = 8000  # shared BPE of the corpus (paper: about 37000 for WMT EN-DE)
    corpus: str = "multi30k"  # "multi30k" (dev = its valid split) or "packaged" (a fallback)
    d_model: int = SMALL_BASE.d_model
    n_heads: int = SMALL_BASE.n_heads
    d_ff: int = SMALL_BASE.d_ff
    n_layers: int = SMALL_BASE.n_layers
    beam: int = 4  # Table 3: beam 4
    alpha: float = 0.6  # Table 3: length penalty 0.6
    averaging: int = 1  # Table 3: "no checkpoint averaging"
    tokenizer_sha256: str = ""  # the prepared BPE: a re-prepared corpus must give the same one
    dev_limit: int = 0  # EXTENSION: score the first dev_limit dev pairs only (a check); 0: all

    def __post_init__(self) -> None:
        for name in ("steps", "max_tokens", "warmup", "vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        if self.dev_limit < 0:
            raise ValueError(f"dev_limit: must be >= 0 (0: all), got {self.dev_limit}")
        if self.corpus not in ("multi30k", "packaged"):
            raise ValueError(f"corpus: must be multi30k or packaged, got {self.corpus!r}")


def run_id(name: str, seed: int) -> str:
    """The name of one run: the variation and the seed, "A-h1-s2"."""
    return f"{name}-s{seed}"


# Fields of Protocol added after directories were written: a protocol.json without one was run
# with this value (dev_limit: before it existed, every run scored the whole dev split).
ADDED_LATER = {"dev_limit": 0}

# Types, as a record or protocol.json must hold them (JSON: an int is a number, a bool is not).
INT, NUMBER, STRING, OBJECT = "an integer", "a finite number", "a string", "an object"
CORPORA = ("multi30k", "packaged")


def _is(value: Any, kind: str) -> bool:
    if kind == OBJECT:
        return isinstance(value, dict)
    if kind == STRING:
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) if kind == INT else math.isfinite(value)


# The keys of a record that the runner and the report read: (type, condition, its words).
RECORD: dict[str, tuple[str, Any, str]] = {
    "run": (STRING, None, ""),
    "name": (STRING, lambda v: v in {x.name for x in VARIATIONS}, "naming a row of Table 3"),
    "seed": (INT, lambda v: v >= 1, ">= 1"),
    "steps": (INT, lambda v: v >= 1, ">= 1"),
    "corpus": (STRING, lambda v: v in CORPORA, "naming a corpus, multi30k or packaged"),
    "model": (OBJECT, None, ""),
    "train_overrides": (OBJECT, None, ""),
    "values": (OBJECT, None, ""),
    "params": (INT, lambda v: v >= 1, ">= 1"),
    "train_flops": (NUMBER, lambda v: v > 0, "> 0"),
    "dev_ppl": (NUMBER, lambda v: v >= 1, ">= 1"),
    "dev_bleu": (NUMBER, lambda v: 0 <= v <= 100, "from 0 to 100"),
    "hyps": (STRING, None, ""),
    "refs": (STRING, None, ""),
    "commit": (STRING, None, ""),
    "threads": (INT, lambda v: v >= 1, ">= 1"),
    "matmul_peak_gflops": (NUMBER, lambda v: v >= 0, ">= 0"),
    "train_minutes": (NUMBER, lambda v: v >= 0, ">= 0"),
}
# What the report reads of a record's model config (the rest is checked by ModelConfig).
MODEL_KEYS = {"n_layers": INT, "d_model": INT, "d_ff": INT, "n_heads": INT, "dropout": NUMBER,
              "positions": STRING}  # fmt: skip


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _typed(key: str, value: Any, kind: str, test: Any = None, words: str = "") -> str:
    """What is wrong with value as key's (a kind, passing test), or ""."""
    if not _is(value, kind) or (test is not None and not test(value)):
        return f"{key}: must be {kind}{' ' + words if words else ''}, got {_shown(value)}"
    return ""


def record_problem(record: Any, out: Path) -> str:
    """What is wrong with one record of OUT/results.jsonl, or "" (RECORD, the model, paths)."""
    if not isinstance(record, dict):
        return f"not a record (a JSON object), got {_shown(record)}"
    missing = [k for k in RECORD if k not in record]
    if missing:
        return f"a record without {', '.join(missing)}"
    for key, (kind, test, words) in RECORD.items():
        if problem := _typed(key, record[key], kind, test, words):
            return problem
    if record["run"] != run_id(record["name"], record["seed"]):
        return f"run: {record['run']!r} is not {run_id(record['name'], record['seed'])!r}"
    model = record["model"]
    for key, kind in MODEL_KEYS.items():
        if key not in model:
            return f"model: no {key}"
        if problem := _typed(f"model.{key}", model[key], kind):
            return problem
    try:
        from_dict(ModelConfig, model)
    except (TypeError, ValueError) as e:
        return f"model: {e}"
    smoothing = record["train_overrides"].get("label_smoothing", 0.1)
    if problem := _typed("train_overrides.label_smoothing", smoothing, NUMBER):
        return problem
    wanted = quantities(SMALL_BASE, {})
    if missing := [k for k in wanted if k not in record["values"]]:
        return f"values: no {', '.join(missing)}"
    for key in wanted:
        value = record["values"][key]
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return f"values.{key}: must be a number or a string, got {_shown(value)}"
    for key in ("hyps", "refs"):
        if not (out / record[key]).is_file():
            return f"{key}: {record[key]!r} is not a file in {out}"
    return ""


def _not_a_file(path: Path) -> None:
    if path.exists() and not path.is_file():
        raise UserError(f"{path}: is a directory, not a file; remove it or choose another --out")


def read_protocol(out: Path) -> dict[str, Any] | None:
    """DIR/protocol.json checked against Protocol's fields (None when there is none)."""
    path = out / PROTOCOL_FILE
    _not_a_file(path)
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        problem = "not UTF-8 text"
    except ValueError as e:
        problem = f"not JSON ({e})"
    else:
        if isinstance(found, dict):
            found = {**ADDED_LATER, **found}
        problem = _protocol_problem(found)
    if problem:
        raise UserError(f"{path}: {problem}; fix it, or remove it, or choose another --out")
    return found


def _protocol_problem(found: Any) -> str:
    if not isinstance(found, dict):
        return f"not a protocol (a JSON object), got {_shown(found)}"
    hints = typing.get_type_hints(Protocol)
    names = [f.name for f in dataclasses.fields(Protocol)]
    if missing := [k for k in names if k not in found]:
        return f"a protocol without {', '.join(missing)}"
    if unknown := sorted(set(found) - set(names)):
        return f"unknown key(s) {', '.join(unknown)}"
    kinds = {int: INT, float: NUMBER, str: STRING}
    for name in names:
        if problem := _typed(name, found[name], kinds[hints[name]]):
            return problem
    try:
        Protocol(**found)
    except ValueError as e:
        return str(e)
    return ""


def check_directory(out: Path, protocol: Protocol | None = None) -> list[dict[str, Any]]:
    """Check a results directory before anything runs or is written there; its records.

    protocol.json and every line of results.jsonl are checked against their schema; with a
    protocol, the settings known before the corpus is prepared (all but the corpus and its
    tokenizer, ``check_protocol``'s) must be those of protocol.json.
    """
    found = read_protocol(out)
    if found is not None and protocol is not None:
        _refuse_other(out, found, protocol, skip=("corpus", "tokenizer_sha256"))
    return read_results(out)


def _refuse_other(out: Path, found: dict, protocol: Protocol, skip: tuple[str, ...] = ()) -> None:
    diffs = [
        f"{k} {found[k]!r} there, {v!r} now"
        for k, v in dataclasses.asdict(protocol).items()
        if k not in skip and found[k] != v
    ]
    if diffs:
        raise UserError(
            f"{out / PROTOCOL_FILE}: this results directory was run with other settings "
            f"({'; '.join(diffs)}); every run of a table must have the same budget: "
            "choose another --out"
        )


def check_protocol(out: Path, protocol: Protocol) -> None:
    """Write DIR/protocol.json, or refuse settings that differ from the ones found there."""
    found = read_protocol(out)
    if found is not None:
        _refuse_other(out, found, protocol)
        return
    out.mkdir(parents=True, exist_ok=True)
    path = out / PROTOCOL_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(protocol), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_results(out: Path) -> list[dict[str, Any]]:
    """The records of DIR/results.jsonl, each checked (a half-written last line is ignored).

    A line that is not UTF-8, not JSON or not a record (``record_problem``), and a run
    recorded twice, are a UserError naming the file and the line; the file is never written.
    """
    path = out / RESULTS_FILE
    _not_a_file(path)
    if not path.is_file():
        return []
    lines = path.read_bytes().split(b"\n")
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(lines, 1):
        last = i == len(lines)  # after the last newline: a line being appended when killed
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            if last:
                break
            raise UserError(f"{path}: line {i}: not UTF-8 text; fix or remove that line") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if last:
                break
            raise UserError(
                f"{path}: line {i}: not a JSON record; fix or remove that line"
            ) from None
        problem = record_problem(record, out)
        if not problem and record["run"] in seen:
            problem = f"run {record['run']!r} is recorded twice (line {seen[record['run']]} too)"
        if problem:
            raise UserError(f"{path}: line {i}: {problem}; fix or remove that line")
        seen[record["run"]] = i
        records.append(record)
    return records


def append_result(out: Path, record: dict[str, Any]) -> None:
    """Append one record to DIR/results.jsonl and flush it to disk.

    A half-written last line (a kill while appending) is cut off first.
    """
    path = out / RESULTS_FILE
    with path.open("a+b") as fh:
        fh.seek(0)
        text = fh.read()
        if text and not text.endswith(b"\n"):
            fh.truncate(text.rfind(b"\n") + 1)
        fh.write((json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
