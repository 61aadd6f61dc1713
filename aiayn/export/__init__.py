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


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of an export directory; anything else is a UserError naming the path."""
    p = Path(path)
    f = p / MANIFEST
    if not f.is_file():
        raise UserError(
            f"{p}: not an aiayn export directory (no {MANIFEST}); create one with aiayn export"
        )
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{f}: unreadable manifest ({e})") from None
    if data.get("format") not in FORMATS:
        raise UserError(f"{f}: unknown export format {data.get('format')!r}")
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

    An export that fails half-way leaves nothing under out, and never a mixed directory.
    """
    import shutil
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write(tmp / "export")
        if out.exists() and force:
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        (tmp / "export").chmod(0o755)
        (tmp / "export").rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    vocab = manifest["model_config"]["vocab_size"]
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
