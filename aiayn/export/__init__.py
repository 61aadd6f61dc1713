"""Serving a trained model on other inference engines: CTranslate2 and ONNX Runtime.  Section 6.1.

``export_ctranslate2`` writes a CTranslate2 model directory (a ``TransformerSpec`` built with its
Python spec API); ``export_onnx`` writes the encoder and one cached decoder step as ONNX graphs.
Both directories carry the shared BPE tokenizer and a manifest (``aiayn_export.json``), and
``load_engine`` turns either back into a translator with the interface of
``aiayn.translator.Translator`` (``encode``, ``translate_ids``, ``translate``, ``perplexity``).

The engines are optional (``pip install 'aiayn[serve]'``): they are imported inside functions,
and a missing one is a one-line ``UserError`` naming that command. What cannot be exported is
refused before anything is written, in one line naming the setting (``check_exportable``).
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from aiayn import errors
from aiayn.config import DecodeConfig, ModelConfig
from aiayn.errors import UserError

FORMATS = ("ctranslate2", "onnx")
ENGINES = ("torch", "ctranslate2", "onnx")
EXTRA = "serve"  # pyproject.toml's extra of the engines: pip install 'aiayn[serve]'
MANIFEST = "aiayn_export.json"  # what aiayn needs to run an export: format, config, table size
TOKENIZER_FILE = "tokenizer.json"
DEFAULT_MAX_POSITIONS = 1024  # rows of the exported sinusoid table (sources and outputs)


@dataclass
class EngineTranslator:
    """What the engines' translators share: text in, (text, hypothesis) n-best lists out.

    The export directory, its tokenizer, the search settings, the rows of the exported position
    table and the batch budgets of ``aiayn.translator.Translator``; a subclass adds its engine's
    settings and provides ``translate_ids``.
    """

    path: Path
    tokenizer: Any
    config: DecodeConfig
    max_positions: int
    max_tokens: int = 6000
    max_sentences: int = 128

    def encode(self, lines: Sequence[str], first_line: int = 1) -> list[list[int]]:
        """Token ids of each line; a line beyond the exported position table is refused.

        A line of only whitespace is the empty line (as in ``aiayn.translator.Translator``).
        """
        ids = self.tokenizer.encode_batch([x if x.strip() else "" for x in lines])
        for n, x in enumerate(ids):
            if len(x) + 1 > self.max_positions:
                raise UserError(
                    f"line {first_line + n}: {len(x) + 1} tokens, more than the "
                    f"{self.max_positions} positions of the exported table (export again with "
                    "a larger --max-positions)"
                )
        return ids

    def translate(
        self, lines: Any, first_line: int = 1, on_skip: Any = None, on_long: Any = None
    ) -> list[list[Any]]:
        """(detokenized text, hypothesis) n-best lists of each line, in input order.

        ``on_skip`` and ``on_long`` are accepted for aiayn's Translator interface; a line
        longer than the exported position table is refused by ``encode`` instead of skipped.
        """
        hyps = self.translate_ids(self.encode(lines, first_line))  # type: ignore[attr-defined]
        decode = self.tokenizer.decode
        return [[(decode(h.tokens), h) for h in hs] for hs in hyps]


def require(name: str) -> ModuleType:
    """Import an optional engine, or a UserError naming the command that installs it."""
    return errors.require(name, EXTRA)


# What each format needs installed to export (``aiayn export``) and to run (``--engine``).
EXPORT_NEEDS = {
    "ctranslate2": ("ctranslate2",),
    "onnx": ("onnx", "onnxruntime"),
    "hf": (),  # its own extra, aiayn[hf]: aiayn.export.hf.require_hf
}
ENGINE_NEEDS = {"torch": (), "ctranslate2": ("ctranslate2",), "onnx": ("onnxruntime",)}


def check_exportable(cfg: ModelConfig, fmt: str) -> None:
    """Raise a one-line UserError naming the first setting the format cannot represent.

    CTranslate2's TransformerSpec represents post-LN and pre-LN (with its final LayerNorm),
    attention biases, any positions given as a table, and d_k = d_v (its ``head_dim``, from
    ``cfg.d_k``); it has no d_v != d_k and one layer count per stack. The ONNX export runs
    aiayn's own layers, so it takes every config but PAD as the decoder's start; a learned table
    bounds the positions of both. The Marian EXTENSIONs (activation, logits_bias,
    decoder_start) go to --format hf.
    """
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    marian = {"activation": "relu", "logits_bias": False, "decoder_start": "bos"}  # EXTENSIONs
    for name, plain in marian.items():
        value = getattr(cfg, name)
        if value != plain and (fmt == "ctranslate2" or name == "decoder_start"):
            raise UserError(
                f"{name}={value!r} (an imported Marian model's EXTENSION): not exported to "
                f"{fmt}; export it with --format hf"
            )
    if fmt == "ctranslate2" and cfg.d_k != cfg.d_v:
        raise UserError(
            f"d_v={cfg.d_v} != d_k={cfg.d_k}: CTranslate2's attention has one head "
            "size for queries, keys and values; this checkpoint cannot be exported to it"
        )


def write_manifest(out: Path, fmt: str, cfg: ModelConfig, **extra: Any) -> None:
    """The manifest of an export directory: format, the model config, table size, origin."""
    from aiayn.config import to_dict

    data = {"format": fmt, "model_config": to_dict(cfg), **extra}
    (out / MANIFEST).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_json(f: Path, what: str) -> Any:
    """The JSON value in file f, or a one-line UserError naming it: missing, a directory,
    unreadable, not UTF-8 or not JSON. ``what`` says what the file should be."""
    if f.is_dir():
        raise UserError(f"{f}: is a directory, not {what}")
    try:
        text = f.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{f}: missing ({what})") from None
    except UnicodeDecodeError:
        raise UserError(f"{f}: not UTF-8 text, so not {what}") from None
    except OSError as e:
        raise UserError(f"{f}: cannot read ({e.strerror or e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{f}: not valid JSON ({e}), so not {what}") from None


def json_value_problem(hint: Any, value: Any) -> str | None:
    """What is wrong with a JSON value for a field of type hint (None: nothing).

    int and float refuse booleans; a float is a finite number (an integer will do); an
    optional field takes null; a Literal one of its values.

    >>> json_value_problem(int, "sixteen"), json_value_problem(int | None, None)
    ('must be an integer', None)
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = next(a for a in args if a is not type(None))
        problem = json_value_problem(inner, value)
        return problem and f"{problem} (or null)"
    if origin is typing.Literal:
        return None if value in args else f"must be one of {', '.join(map(str, args))}"
    if hint is bool:
        return None if isinstance(value, bool) else "must be true or false"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return None if number and isinstance(value, int) else "must be an integer"
    if hint is float:
        return None if number and math.isfinite(value) else "must be a finite number"
    if hint is str:
        return None if isinstance(value, str) else "must be a string"
    return None


def manifest_config(data: Any, where: str) -> ModelConfig:
    """The ModelConfig of a manifest's model_config, each field's type checked first."""
    from aiayn.config import from_dict

    if not isinstance(data, dict):
        raise UserError(f"{where}: model_config must be an object, got {data!r:.60}")
    hints = typing.get_type_hints(ModelConfig)
    for name, value in data.items():
        problem = json_value_problem(hints[name], value) if name in hints else None
        if problem:
            raise UserError(f"{where}: model_config: {name}: {problem}, got {value!r:.60}")
    try:
        return from_dict(ModelConfig, data)
    except (ValueError, TypeError) as e:
        raise UserError(f"{where}: model_config: {e}") from None


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of an export directory, every field the engines read checked.

    ``format`` (ctranslate2 or onnx), ``model_config`` (a valid ModelConfig, types checked)
    and ``max_positions`` (an integer >= 2, the rows of the exported table; at most the
    config's own for a learned table). Anything else is a one-line UserError naming the file
    and the field.
    """
    p = Path(path)
    f = p / MANIFEST
    if not f.exists():
        raise UserError(
            f"{p}: not an aiayn export directory (no {MANIFEST}); create one with aiayn export"
        )
    data = read_json(f, "an aiayn export manifest")
    if not isinstance(data, dict):
        raise UserError(f"{f}: must be a JSON object, got {type(data).__name__}")
    fmt = data.get("format")
    if fmt == "hf":
        raise UserError(
            f"{f}: a Hugging Face export (format 'hf'): load it with transformers, or turn it "
            "back into an aiayn model with aiayn import-hf"
        )
    if fmt not in FORMATS:
        raise UserError(f"{f}: format: unknown export format {fmt!r}; {' or '.join(FORMATS)}")
    for key in ("model_config", "max_positions"):
        if key not in data:
            raise UserError(f"{f}: {key}: missing; export the model again with aiayn export")
    cfg = manifest_config(data["model_config"], str(f))
    rows = data["max_positions"]
    if json_value_problem(int, rows) or rows < 2:
        raise UserError(f"{f}: max_positions: must be an integer >= 2, got {rows!r:.60}")
    if cfg.positions == "learned" and rows > cfg.max_positions:
        raise UserError(
            f"{f}: max_positions: {rows} rows, more than the {cfg.max_positions} of the "
            "model's learned table"
        )
    return data


def prepare_out(out: str | Path, force: bool) -> Path:
    """The output directory, refused when it exists and holds files (unless force)."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise UserError(f"{p}: exists and is not a directory")
    if p.is_dir() and any(p.iterdir()) and not force:
        raise UserError(f"{p}: directory is not empty; choose another --out or give --force")
    return p


def publish(out: Path, force: bool, write: Any) -> None:
    """write(tmp) into a fresh directory beside out, then move it to out (old one replaced).

    An export that fails half-way leaves nothing under out, and never a mixed directory; the
    parent directories made for it are removed again.
    """
    import contextlib
    import shutil
    import tempfile

    made = [d for d in (out.parent, *out.parent.parents) if not d.exists()]  # deepest first
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    done = False
    try:
        write(tmp / "export")
        if out.exists() and force:
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        (tmp / "export").chmod(0o755)
        (tmp / "export").rename(out)
        done = True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in made if not done else ():  # the parents made for it go too: nothing is left
            with contextlib.suppress(OSError):
                d.rmdir()


def load_engine(
    path: str | Path,
    config: Any,
    tokenizer: Any = None,
    max_tokens: int = 6000,
    max_sentences: int = 128,
    threads: int = 0,
    compute_type: str = "default",
    engine: str | None = None,
) -> Any:
    """A translator for an export directory, run by the engine it was exported for.

    ``engine`` (if given) must match the directory's format. ``tokenizer`` overrides the one
    saved beside the model. Returns an object with the interface of
    ``aiayn.translator.Translator``.
    """
    from aiayn.data import Tokenizer

    p = Path(path)
    manifest = read_manifest(p)
    fmt = manifest["format"]
    if engine is not None and engine != fmt:
        raise UserError(f"{p}: a {fmt} export, not {engine}; give --engine {fmt}")
    if tokenizer is None:
        tokenizer = Tokenizer.load(p / TOKENIZER_FILE)
    elif isinstance(tokenizer, str | Path):
        tokenizer = Tokenizer.load(tokenizer)
    vocab = manifest["model_config"]["vocab_size"]  # checked by read_manifest
    if tokenizer.vocab_size != vocab:
        raise UserError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the exported model's "
            f"vocabulary has {vocab}: use the tokenizer saved with the export"
        )
    kw = {"max_tokens": max_tokens, "max_sentences": max_sentences, "threads": threads}
    if fmt == "ctranslate2":
        from aiayn.export.ct2 import CTranslate2Translator

        return CTranslate2Translator(
            p, tokenizer, config, int(manifest["max_positions"]), compute_type=compute_type, **kw
        )
    from aiayn.export.ort import OnnxTranslator

    return OnnxTranslator(p, tokenizer, config, int(manifest["max_positions"]), **kw)
