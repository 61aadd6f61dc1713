"""A Marian directory checked whole before any weight is read (``aiayn import-hf``).  Sec. 3.

``check_marian_dir`` is the one door of a Hugging Face directory into aiayn: config.json (the
type and range of every field aiayn or Transformers' loader reads, and ``check_importable``:
what aiayn cannot represent exactly), the tokenizer files (vocab.json, source.spm and
target.spm loadable and not empty; or an aiayn export's tokenizer.json) and the weights'
headers (safetensors headers read without loading a tensor; ``pytorch_model.bin`` only as
``torch.save``'s zip, memory-mapped with ``weights_only=True``, so no pickled code runs), whose
shapes must be the ones config.json gives (sections 3.1-3.4: V x D embeddings, D x D
projections, F x D and D x F feed-forward layers, the layer counts of both stacks). What is
wrong is one UserError naming the file, the field and the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiayn.errors import UserError
from aiayn.export import json_value_problem, read_json

MARIAN_ACTIVATIONS = {"relu": "relu", "swish": "silu", "silu": "silu"}
# config.json's fields that set the architecture (section 3): integers >= 1, all required.
SIZES = (
    "vocab_size",
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
)
# The other fields read (by aiayn, or by Transformers' loader): type, and whether required.
FIELDS: dict[str, Any] = {
    "model_type": str,
    "decoder_vocab_size": int | None,
    "max_position_embeddings": int | None,
    "pad_token_id": int,
    "decoder_start_token_id": int | None,
    "activation_function": str,
    "dropout": float,
    "attention_dropout": float,
    "activation_dropout": float,
    "normalize_before": bool,
    "add_final_layer_norm": bool,
    "normalize_embedding": bool,
    "static_position_embeddings": bool,
    "scale_embedding": bool,
    "share_encoder_decoder_embeddings": bool,
    "tie_word_embeddings": bool,
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")  # safetensors' names of the floating-point types


@dataclass(frozen=True)
class MarianDir:
    """What ``check_marian_dir`` read: config.json, the vocabulary (piece -> Marian id) and
    either the SentencePiece pair (bytes) or an aiayn export's tokenizer.json (as a dict)."""

    path: Path
    config: dict[str, Any]
    vocab: dict[str, int]
    source_spm: bytes | None = None
    target_spm: bytes | None = None
    tokenizer_json: dict[str, Any] | None = None


def check_importable(config: dict[str, Any], where: str) -> None:
    """A one-line UserError naming the first Marian setting aiayn cannot represent exactly.

    ``config`` is config.json as a dict (older files carry BART's switches, checked too).
    """

    def refuse(setting: str, why: str) -> None:
        raise UserError(f"{where}: {setting}: {why}; aiayn cannot represent it exactly")

    kind = config.get("model_type")
    if kind != "marian":
        refuse(f"model_type={kind!r}", "only Marian (MarianMTModel) checkpoints convert")
    if config.get("normalize_before", False):
        refuse("normalize_before=True", "pre-LN (aiayn converts the post-LN of section 3.1)")
    if config.get("add_final_layer_norm", False):
        refuse("add_final_layer_norm=True", "a final LayerNorm belongs to pre-LN")
    if config.get("normalize_embedding", False):
        refuse("normalize_embedding=True", "a LayerNorm on the embeddings is not in 3.4")
    if not config.get("static_position_embeddings", True):
        refuse("static_position_embeddings=False", "learned positions beyond the sinusoids")
    if not config.get("scale_embedding", False):
        refuse("scale_embedding=False", "3.4 multiplies the embeddings by sqrt(d_model)")
    if not config.get("share_encoder_decoder_embeddings", True):
        refuse("share_encoder_decoder_embeddings=False", "3.4 shares one embedding matrix")
    v, dv = config.get("vocab_size"), config.get("decoder_vocab_size") or config.get("vocab_size")
    if dv != v:
        refuse(f"decoder_vocab_size={dv}", f"differs from vocab_size={v}")
    act = config.get("activation_function", "gelu")
    if act not in MARIAN_ACTIVATIONS:
        refuse(f"activation_function={act!r}", "aiayn's FFN has relu or swish (silu)")
    for a, b in (
        ("encoder_attention_heads", "decoder_attention_heads"),
        ("encoder_ffn_dim", "decoder_ffn_dim"),
    ):
        if config.get(a) != config.get(b):
            refuse(f"{b}={config.get(b)}", f"differs from {a}={config.get(a)}")
    d, h = int(config.get("d_model", 0)), int(config.get("encoder_attention_heads", 1))
    if d % 2 or d % h:
        refuse(f"d_model={d}", f"must be even and divisible by the {h} heads")


def check_config_fields(config: dict[str, Any], where: str) -> None:
    """The type and range of each field of config.json that is read (SIZES, FIELDS).

    ``where`` names the file. Sizes are integers >= 1, ids integers >= 0, dropout rates
    numbers in [0, 1), switches true or false; EOS is an id or a list of one.
    """

    def refuse(name: str, rule: str) -> None:
        raise UserError(f"{where}: {name}: {rule}, got {config[name]!r:.60}")

    for name in SIZES:
        if name not in config:
            raise UserError(f"{where}: {name}: missing (the size of the architecture)")
        value = config[name]
        if json_value_problem(int, value) or value < 1:
            refuse(name, "must be an integer >= 1")
    for name, hint in FIELDS.items():
        if name not in config:
            if name == "pad_token_id":
                raise UserError(f"{where}: pad_token_id: missing")
            continue
        value = config[name]
        problem = json_value_problem(hint, value)
        if problem:
            refuse(name, problem)
        if hint is float and not 0 <= value < 1:
            refuse(name, "must be a dropout rate in [0, 1)")
        if hint in (int, int | None) and value is not None:
            least = 1 if name in ("decoder_vocab_size", "max_position_embeddings") else 0
            if value < least:
                refuse(name, f"must be an integer >= {least}")
    eos = config.get("eos_token_id")
    one = eos[0] if isinstance(eos, list) and len(eos) == 1 else eos
    if json_value_problem(int, one) or one < 0:
        raise UserError(f"{where}: eos_token_id: must be an id (an integer >= 0), got {eos!r:.60}")


def _read_config(d: Path) -> dict[str, Any]:
    f = d / "config.json"
    if not f.exists():
        raise UserError(f"{d}: no config.json; not a Hugging Face model directory")
    config = read_json(f, "a Hugging Face config.json")
    if not isinstance(config, dict):
        raise UserError(f"{f}: must be a JSON object, got {type(config).__name__}")
    return config


def _spm(f: Path) -> bytes:
    """The bytes of a SentencePiece model, refused unless sentencepiece loads it (not empty)."""
    import sentencepiece

    if f.is_dir():
        raise UserError(f"{f}: is a directory, not a SentencePiece model")
    try:
        data = f.read_bytes()
    except OSError as e:
        raise UserError(f"{f}: cannot read ({e.strerror or e})") from None
    if not data:
        raise UserError(f"{f}: empty file, not a SentencePiece model")
    try:
        sp = sentencepiece.SentencePieceProcessor(model_proto=data)
    except Exception:  # sentencepiece raises RuntimeError (or OSError) with a C++ location
        raise UserError(f"{f}: not a SentencePiece model (corrupt or truncated)") from None
    if sp.get_piece_size() < 1:
        raise UserError(f"{f}: a SentencePiece model without pieces")
    return data


def _vocab_ids(vocab: Any, f: Path, size: int) -> dict[str, int]:
    """piece -> id, each id an integer in [0, size) of one piece only."""
    if not isinstance(vocab, dict):
        raise UserError(f"{f}: must be a JSON object of piece: id, got {type(vocab).__name__}")
    seen: dict[int, str] = {}
    for piece, i in vocab.items():
        if json_value_problem(int, i) or not 0 <= i < size:
            raise UserError(
                f"{f}: {piece!r:.40}: id {i!r:.20} is not an id of the {size}-token vocabulary "
                "(config.json's vocab_size)"
            )
        if i in seen:
            raise UserError(f"{f}: {seen[i]!r:.40} and {piece!r:.40} have the same id {i}")
        seen[i] = piece
    return vocab


def _tokenizer(d: Path, size: int) -> dict[str, Any]:
    """The vocabulary and tokenizer files: MarianDir's fields vocab, *_spm, tokenizer_json."""
    if (d / "source.spm").exists() or (d / "vocab.json").exists():
        for name in ("source.spm", "vocab.json"):
            if not (d / name).exists():
                raise UserError(
                    f"{d / name}: missing (Marian's tokenizer is source.spm, an optional "
                    "target.spm, and vocab.json)"
                )
        if (d / "target_vocab.json").exists():
            raise UserError(f"{d}: separate source and target vocabularies; 3.4 shares one")
        f = d / "vocab.json"
        vocab = _vocab_ids(read_json(f, "Marian's vocab.json"), f, size)
        source = _spm(d / "source.spm")
        target = _spm(d / "target.spm") if (d / "target.spm").exists() else source
        return {"vocab": vocab, "source_spm": source, "target_spm": target}
    f = d / "tokenizer.json"
    if f.exists():  # an aiayn export (aiayn export --format hf): its own BPE
        data = read_json(f, "a tokenizer JSON")
        model = data.get("model") if isinstance(data, dict) else None
        added = data.get("added_tokens", []) if isinstance(data, dict) else None
        if not isinstance(model, dict) or not isinstance(model.get("vocab"), dict):
            raise UserError(f"{f}: not a tokenizer JSON with a vocabulary (model.vocab)")
        if not isinstance(added, list) or not all(
            isinstance(t, dict) and isinstance(t.get("content"), str) for t in added
        ):
            raise UserError(f"{f}: added_tokens must be a list of {{content, id}}")
        vocab = dict(model["vocab"])
        vocab.update({t["content"]: t.get("id") for t in added})
        return {"vocab": _vocab_ids(vocab, f, size), "tokenizer_json": data}
    raise UserError(f"{d}: no tokenizer (source.spm and vocab.json, or tokenizer.json)")


# The weights ---------------------------------------------------------------------------------


def _header_shapes(f: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of a safetensors file, from its header alone."""
    from safetensors import safe_open

    if f.is_dir():
        raise UserError(f"{f}: is a directory, not a safetensors file")
    try:
        with safe_open(str(f), framework="pt") as st:
            return {
                k: (tuple(st.get_slice(k).get_shape()), st.get_slice(k).get_dtype())
                for k in st.keys()  # noqa: SIM118 (safe_open is no dict)
            }
    except Exception as e:  # safetensors raises its own error types for corrupt files
        first = " ".join(str(e).split())[:160]
        raise UserError(f"{f}: not a readable safetensors file ({first})") from None


def _bin_shapes(f: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of a pytorch_model.bin: torch.save's zip, never a pickle's code.

    Memory-mapped with ``weights_only=True``: tensors and containers only, nothing run.
    """
    import zipfile

    import torch

    if f.is_dir():
        raise UserError(f"{f}: is a directory, not a weights file")
    if not zipfile.is_zipfile(f):  # torch.save writes a zip; a bare pickle is never unpickled
        raise UserError(
            f"{f}: not a torch.save archive (truncated, or a bare pickle, which aiayn never "
            "loads); convert it to model.safetensors"
        )
    try:
        state = torch.load(f, map_location="cpu", weights_only=True, mmap=True)
    except Exception as e:  # UnpicklingError, RuntimeError, EOFError, ...: never a traceback
        first = " ".join(str(e).split())[:160]
        raise UserError(f"{f}: not a weights file aiayn can read safely ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UserError(f"{f}: not a state dict (names to tensors)")
    names = {
        torch.float64: "F64",
        torch.float32: "F32",
        torch.float16: "F16",
        torch.bfloat16: "BF16",
    }
    return {k: (tuple(v.shape), names.get(v.dtype, str(v.dtype))) for k, v in state.items()}


def _weights(d: Path) -> tuple[Path, dict[str, tuple[tuple[int, ...], str]]]:
    """(the file named in messages, name -> (shape, dtype)) of the weights Transformers loads:
    model.safetensors, its sharded index, or pytorch_model.bin, in that order."""
    from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME, WEIGHTS_NAME

    if (d / SAFE_WEIGHTS_NAME).exists():
        return d / SAFE_WEIGHTS_NAME, _header_shapes(d / SAFE_WEIGHTS_NAME)
    index = d / SAFE_WEIGHTS_INDEX_NAME
    if index.exists():
        data = read_json(index, "a safetensors index")
        shards = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(shards, dict) or not all(
            isinstance(s, str) and s and Path(s).name == s for s in shards.values()
        ):
            raise UserError(f"{index}: weight_map must map names to shard files of {d}")
        shapes: dict[str, tuple[tuple[int, ...], str]] = {}
        for shard in sorted(set(shards.values())):
            if not (d / shard).exists():
                raise UserError(f"{d / shard}: missing (a shard named in {index.name})")
            shapes.update(_header_shapes(d / shard))
        return index, shapes
    if (d / WEIGHTS_NAME).exists():
        return d / WEIGHTS_NAME, _bin_shapes(d / WEIGHTS_NAME)
    raise UserError(f"{d}: no weights ({SAFE_WEIGHTS_NAME} or {WEIGHTS_NAME})")


def expected_shapes(config: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    """Marian's tensor names (without "model.") -> (shape, the config fields that set it).

    Sections 3.1-3.4: the layer stacks; the embedding's shape is checked apart (any of its
    tied names will do).
    """
    D, F = config["d_model"], config["encoder_ffn_dim"]
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}
    stacks = (("encoder", ("self_attn",)), ("decoder", ("self_attn", "encoder_attn")))
    for stack, attns in stacks:
        for i in range(config[f"{stack}_layers"]):
            p = f"{stack}.layers.{i}."
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    shapes[f"{p}{a}.{proj}.weight"] = ((D, D), "d_model x d_model")
                    shapes[f"{p}{a}.{proj}.bias"] = ((D,), "d_model")
            for norm in (*(f"{a}_layer_norm" for a in attns), "final_layer_norm"):
                shapes[f"{p}{norm}.weight"] = shapes[f"{p}{norm}.bias"] = ((D,), "d_model")
            shapes[f"{p}fc1.weight"] = ((F, D), f"{stack}_ffn_dim x d_model")
            shapes[f"{p}fc1.bias"] = ((F,), f"{stack}_ffn_dim")
            shapes[f"{p}fc2.weight"] = ((D, F), f"d_model x {stack}_ffn_dim")
            shapes[f"{p}fc2.bias"] = ((D,), "d_model")
    return shapes


def _dims(shape: tuple[int, ...]) -> str:
    return " x ".join(map(str, shape)) or "a scalar"


def check_weight_shapes(
    found: dict[str, tuple[tuple[int, ...], str]], config: dict[str, Any], f: Path
) -> None:
    """Every tensor config.json implies is in the weights with its shape and a float type."""
    V, D = config["vocab_size"], config["d_model"]
    by_name = {k.removeprefix("model."): k for k in found}
    want = expected_shapes(config)
    embeddings = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
    for name in (*embeddings, "lm_head.weight"):
        want[name] = ((V, D), "vocab_size x d_model")
    want["final_logits_bias"] = ((1, V), "1 x vocab_size")
    if not any(e in by_name for e in embeddings):
        raise UserError(f"{f}: no embedding (model.shared.weight, vocab_size x d_model)")
    for name, (shape, fields) in want.items():
        if name not in by_name:
            if name.startswith(("encoder.layers", "decoder.layers")):
                stack = name.split(".")[0]
                raise UserError(
                    f"{f}: no tensor {name}, though config.json's {stack}_layers is "
                    f"{config[f'{stack}_layers']}"
                )
            continue  # a tied embedding or the logits bias, made by the loader
        key = by_name[name]
        got, dtype = found[key]
        if got != shape:
            values = " x ".join(str(config.get(x, 1)) for x in fields.split(" x "))
            raise UserError(f"{f}: {key} is {_dims(got)}, but config.json's {fields} is {values}")
        if dtype not in FLOAT_DTYPES:
            raise UserError(f"{f}: {key} is of type {dtype}, not floating point")
    for key in found:
        m = re.match(r"(?:model\.)?(encoder|decoder)\.layers\.(\d+)\.", key)
        if m and int(m.group(2)) >= config[f"{m.group(1)}_layers"]:
            raise UserError(
                f"{f}: {key} is beyond config.json's {m.group(1)}_layers="
                f"{config[f'{m.group(1)}_layers']}"
            )


def check_marian_dir(d: Path) -> MarianDir:
    """config.json, the tokenizer files and the weights' headers of d, checked together.

    Nothing is loaded but config.json, the vocabulary and the SentencePiece models (small);
    the weights are known by their headers only. See the module doc.
    """
    config = _read_config(d)
    where = str(d / "config.json")
    if config.get("model_type") != "marian":  # another architecture: say so before its fields
        check_importable(config, str(d))
    check_config_fields(config, where)
    check_importable(config, str(d))
    files = _tokenizer(d, config["vocab_size"])
    f, found = _weights(d)
    check_weight_shapes(found, config, f)
    return MarianDir(path=d, config=config, **files)
