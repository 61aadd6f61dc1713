"""Hugging Face Transformers both ways: an aiayn model as a MarianMT checkpoint, and back.

Marian (``transformers.MarianMTModel``, the OPUS-MT translators) is the paper's post-LN
encoder-decoder with sinusoidal positions, embeddings scaled by sqrt(d_model) and the output
layer tied to the shared embedding (sections 3.1, 3.4, 3.5), so one conversion serves both
directions. What differs is written out in docs/huggingface.md:

- Positions (3.5). aiayn's table is the paper's, interleaved: PE[2i] = sin(w_i pos),
  PE[2i+1] = cos(w_i pos), w_i = 10000^(-2i/d_model). Marian's has the same frequencies but
  puts all sines first: PE_hf[i] = sin(w_i pos), PE_hf[d/2 + i] = cos(w_i pos). So
  PE_hf = PE[:, pi] with pi = (0, 2, 4, ..., d-2, 1, 3, ..., d-1). Relabelling the d_model
  coordinates of the residual stream by pi changes nothing else: every weight that reads the
  stream has its input rows permuted, every weight that writes it its output columns, and
  LayerNorm, being per-coordinate after the mean and variance (which a permutation keeps),
  permutes with its gain and bias. The two networks are then equal, not just close.
- Marian always has biases on W^Q, W^K, W^V, W^O (aiayn's ``attn_bias``: zeros on export),
  a final logits bias (``logits_bias``), swish in the FFN for OPUS-MT (``activation="silu"``),
  and starts decoding with the pad token (``decoder_start="pad"``): named EXTENSIONs of
  ``ModelConfig``, off by default.
- Vocabulary. aiayn's ids 0-3 are PAD, BOS, EOS, UNK; Marian's specials sit anywhere (OPUS-MT:
  EOS 0, UNK 1, PAD last) and it has no BOS. The importer reorders the vocabulary so that
  Marian's PAD, EOS and UNK become 0, 2, 3; BOS (1) is Marian's "<s>" where its vocabulary has
  one, else an added row that is never read (the decoder starts with PAD) and never predicted
  (its logit bias is -1e9: probability exactly 0 in float32). Exports keep aiayn's ids and
  start decoding with BOS.

What cannot be represented exactly is refused in one line naming the setting
(``check_exportable_hf``, ``check_importable``); a damaged Marian directory is refused, naming
the file and field, before any weight is read (``aiayn.export.marian_dir``). Transformers and
SentencePiece are optional: ``pip install 'aiayn[hf]'``; they are imported inside the functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn.config import ModelConfig
from aiayn.data.specials import BOS, EOS, PAD, SPECIAL_TOKENS, UNK
from aiayn.errors import UserError, require
from aiayn.export.marian_dir import (
    MARIAN_ACTIVATIONS,
    MarianDir,
    check_importable,  # noqa: F401 (re-exported: its home before marian_dir)
    check_marian_dir,
)

EXTRA = "hf"  # pyproject.toml's extra: pip install 'aiayn[hf]'
NEVER = -1e9  # the logit bias of a token that is never predicted: exp(-1e9) is 0 in float32
ORIGIN_KEY = "origin"  # checkpoint metadata: where an imported model came from
ACTIVATIONS = {"relu": "relu", "silu": "swish"}  # aiayn's name -> Marian's
HF_LAYER_NORM_EPS = 1e-5  # Marian's nn.LayerNorm(d_model) keeps PyTorch's default


def require_hf() -> Any:
    """``transformers`` (and sentencepiece), or a one-line UserError naming the missing one and
    the install command (``pip install 'aiayn[hf]'``)."""
    require("sentencepiece", EXTRA)
    transformers = require("transformers", EXTRA)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def residual_permutation(d_model: int) -> Tensor:
    """x_hf = x[pi], pi = (0, 2, ..., d-2, 1, 3, ..., d-1).  Section 3.5 (see the module doc).

    >>> residual_permutation(6).tolist()
    [0, 2, 4, 1, 3, 5]

    Shapes: -> (D,).
    """
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])  # (D,)


# The layer names of both models ------------------------------------------------------------

_ENC = {"self_attn": "self_attn", "norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}
_DEC = {
    "self_attn": "self_attn",
    "cross_attn": "encoder_attn",
    "norm1": "self_attn_layer_norm",
    "norm2": "encoder_attn_layer_norm",
    "norm3": "final_layer_norm",
}


def _layers(cfg: ModelConfig) -> list[tuple[str, str, dict[str, str]]]:
    """(aiayn prefix, Marian prefix, sub-layer names) of every layer."""
    out = [(f"encoder.{i}.", f"model.encoder.layers.{i}.", _ENC) for i in range(cfg.n_layers)]
    out += [
        (f"decoder.{i}.", f"model.decoder.layers.{i}.", _DEC) for i in range(cfg.decoder_layers)
    ]
    return out


def to_marian_state(
    state: dict[str, Tensor], cfg: ModelConfig, permute: bool = True
) -> dict[str, Tensor]:
    """W_hf = (W[pi, :])^T for weights reading the stream, (W[:, pi])^T writing it.  Sec. 3.1-3.5.

    Marian's state dict of an aiayn model: (out, in) matrices, d_model relabelled by pi
    (embedding columns, LayerNorm gains and biases, W^O and W_2 outputs with their biases).
    ``permute=False`` skips the relabelling by pi (only for the tests that prove it needed).
    """
    D = cfg.d_model
    pi = residual_permutation(D) if permute else torch.arange(D)  # (D,)

    def p(x: Tensor, dim: int) -> Tensor:  # the residual-stream dimension relabelled
        return x.index_select(dim, pi).contiguous()

    out: dict[str, Tensor] = {}
    E = p(state["embedding"], 1)  # (V, D)
    out["model.shared.weight"] = E
    out["model.encoder.embed_tokens.weight"] = E
    out["model.decoder.embed_tokens.weight"] = E
    out["lm_head.weight"] = E
    bias = state.get("logits_bias", torch.zeros(cfg.vocab_size))  # (V,)
    out["final_logits_bias"] = bias[None, :].clone()  # (1, V)
    HK, HV = cfg.n_heads * cfg.d_k, cfg.n_heads * cfg.d_v
    for a, m, names in _layers(cfg):
        for ours, theirs in names.items():
            if ours.startswith("norm"):
                for w in ("weight", "bias"):
                    out[f"{m}{theirs}.{w}"] = p(state[f"{a}{ours}.{w}"], 0)
                continue
            w_qkv = state[f"{a}{ours}.w_qkv"]  # (D, 3 H K)
            b_qkv = state.get(f"{a}{ours}.b_qkv", torch.zeros(w_qkv.size(1)))  # (3 H K,)
            for name, w, b in zip(
                ("q", "k", "v"),
                w_qkv.split([HK, HK, HV], 1),
                b_qkv.split([HK, HK, HV]),
                strict=True,
            ):
                out[f"{m}{theirs}.{name}_proj.weight"] = p(w, 0).t().contiguous()  # (H K, D)
                out[f"{m}{theirs}.{name}_proj.bias"] = b.clone()
            w_o = state[f"{a}{ours}.w_o"]  # (H K, D)
            out[f"{m}{theirs}.out_proj.weight"] = p(w_o, 1).t().contiguous()  # (D, H K)
            out[f"{m}{theirs}.out_proj.bias"] = p(state.get(f"{a}{ours}.b_o", torch.zeros(D)), 0)
        out[f"{m}fc1.weight"] = p(state[f"{a}ffn.w_1"], 0).t().contiguous()  # (F, D)
        out[f"{m}fc1.bias"] = state[f"{a}ffn.b_1"].clone()
        out[f"{m}fc2.weight"] = p(state[f"{a}ffn.w_2"], 1).t().contiguous()  # (D, F)
        out[f"{m}fc2.bias"] = p(state[f"{a}ffn.b_2"], 0)
    return out


def from_marian_state(
    marian: dict[str, Tensor], cfg: ModelConfig, order: list[int]
) -> dict[str, Tensor]:
    """W = (W_hf^T)[pi^-1, :] or [:, pi^-1]: the inverse of ``to_marian_state``.  Sec. 3.1-3.5.

    ``order[a]`` is the Marian id of aiayn's id a, or -1 for a row Marian lacks (BOS): its
    embedding is zero and its logit bias ``NEVER``.
    """
    D = cfg.d_model
    inv = torch.argsort(residual_permutation(D))  # (D,): x = x_hf[inv]

    def u(x: Tensor, dim: int) -> Tensor:  # back to aiayn's interleaved layout
        return x.index_select(dim, inv).contiguous()

    rows = torch.tensor([max(i, 0) for i in order])  # (V,)
    new = torch.tensor([i < 0 for i in order])  # (V,)
    E = u(marian["model.shared.weight"], 1).index_select(0, rows)  # (V, D)
    E[new] = 0.0
    bias = marian["final_logits_bias"].reshape(-1).index_select(0, rows).clone()  # (V,)
    bias[new] = NEVER
    state: dict[str, Tensor] = {"embedding": E, "logits_bias": bias}
    for a, m, names in _layers(cfg):
        for ours, theirs in names.items():
            if ours.startswith("norm"):
                for w in ("weight", "bias"):
                    state[f"{a}{ours}.{w}"] = u(marian[f"{m}{theirs}.{w}"], 0)
                continue
            ws = [u(marian[f"{m}{theirs}.{n}_proj.weight"].t(), 0) for n in "qkv"]  # (D, H K)
            state[f"{a}{ours}.w_qkv"] = torch.cat(ws, dim=1)  # (D, 3 H K)
            state[f"{a}{ours}.b_qkv"] = torch.cat(
                [marian[f"{m}{theirs}.{n}_proj.bias"] for n in "qkv"]
            )
            state[f"{a}{ours}.w_o"] = u(marian[f"{m}{theirs}.out_proj.weight"].t(), 1)  # (H K, D)
            state[f"{a}{ours}.b_o"] = u(marian[f"{m}{theirs}.out_proj.bias"], 0)
        state[f"{a}ffn.w_1"] = u(marian[f"{m}fc1.weight"].t(), 0)  # (D, F)
        state[f"{a}ffn.b_1"] = marian[f"{m}fc1.bias"].clone()
        state[f"{a}ffn.w_2"] = u(marian[f"{m}fc2.weight"].t(), 1)  # (F, D)
        state[f"{a}ffn.b_2"] = u(marian[f"{m}fc2.bias"], 0)
    return state


# Export: aiayn -> Marian ---------------------------------------------------------------------


def check_exportable_hf(cfg: ModelConfig) -> None:
    """A one-line UserError naming the first setting Marian cannot represent exactly."""
    if cfg.norm_first:
        raise UserError("norm_first=True (pre-LN): Marian is post-LN; cannot export to hf")
    if cfg.positions != "sinusoidal":
        raise UserError(
            f"positions={cfg.positions!r}: Marian has only the sinusoids of section 3.5; "
            "cannot export to hf"
        )
    if cfg.d_k * cfg.n_heads != cfg.d_model or cfg.d_v != cfg.d_k:
        raise UserError(
            f"d_k={cfg.d_k}, d_v={cfg.d_v}: Marian's heads have d_model / h = "
            f"{cfg.d_model // cfg.n_heads} dimensions; cannot export to hf"
        )
    if cfg.layer_norm_eps != HF_LAYER_NORM_EPS:
        raise UserError(
            f"layer_norm_eps={cfg.layer_norm_eps}: Marian's LayerNorm has eps 1e-05; "
            "cannot export to hf"
        )


def marian_config(cfg: ModelConfig) -> dict[str, Any]:
    """The MarianConfig fields of an aiayn model (ids: aiayn's, decoding starts with BOS)."""
    start = PAD if cfg.decoder_start == "pad" else BOS
    return {
        "vocab_size": cfg.vocab_size,
        "decoder_vocab_size": cfg.vocab_size,
        "d_model": cfg.d_model,
        "encoder_layers": cfg.n_layers,
        "decoder_layers": cfg.decoder_layers,
        "encoder_attention_heads": cfg.n_heads,
        "decoder_attention_heads": cfg.n_heads,
        "encoder_ffn_dim": cfg.d_ff,
        "decoder_ffn_dim": cfg.d_ff,
        "activation_function": ACTIVATIONS[cfg.activation],
        "dropout": cfg.dropout,
        "attention_dropout": cfg.attn_dropout,
        "activation_dropout": cfg.ffn_dropout,
        "max_position_embeddings": 1024,
        "scale_embedding": True,  # 3.4: E[ids] * sqrt(d_model)
        "share_encoder_decoder_embeddings": True,  # 3.4: one matrix
        "tie_word_embeddings": True,
        "pad_token_id": PAD,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "forced_eos_token_id": EOS,
        "decoder_start_token_id": start,
    }


def generation_settings(cfg: ModelConfig) -> dict[str, Any]:
    """generate()'s defaults for an export: aiayn's bans, beam 4, |Y|^0.6 (see the docs)."""
    return {
        "decoder_start_token_id": PAD if cfg.decoder_start == "pad" else BOS,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "forced_eos_token_id": EOS,
        "bad_words_ids": [[PAD], [BOS]],  # aiayn never produces PAD or BOS (aiayn.decode)
        "num_beams": 4,  # 6.1
        "length_penalty": 0.6,  # 6.1's alpha, but as |Y|^alpha: HF has no GNMT penalty
        "max_length": 512,
    }


def hf_model(cfg: ModelConfig, state: dict[str, Tensor], permute: bool = True) -> Any:
    """A ``transformers.MarianMTModel`` equal to the aiayn model (state, cfg), in eval mode."""
    tf = require_hf()
    model = tf.MarianMTModel(tf.MarianConfig(**marian_config(cfg)))
    ours = to_marian_state(state, cfg, permute)
    theirs = model.state_dict()
    missing = sorted(k for k in theirs if k not in ours and "embed_positions" not in k)
    if missing:
        raise RuntimeError(f"hf export: no value for {missing[0]}")
    model.load_state_dict(ours, strict=False)
    return model.eval()


def hf_tokenizer(tokenizer: Any) -> Any:
    """The Transformers tokenizer of an aiayn tokenizer: EOS appended, specials mapped."""
    tf = require_hf()
    from aiayn.data.spm import SentencePiecePair

    if isinstance(tokenizer, SentencePiecePair):
        raise UserError(
            "the checkpoint's tokenizer is a SentencePiece pair (an imported Marian model); "
            "export to hf supports aiayn's BPE tokenizer only"
        )
    from tokenizers import Tokenizer as _Tok
    from tokenizers import processors

    backend = _Tok.from_str(tokenizer.to_str())
    eos = SPECIAL_TOKENS[EOS]
    # 5.1 / 3.2.3: every source ends with EOS, as in training.
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A $B {eos}", special_tokens=[(eos, EOS)]
    )
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=SPECIAL_TOKENS[PAD],
        bos_token=SPECIAL_TOKENS[BOS],
        eos_token=eos,
        unk_token=SPECIAL_TOKENS[UNK],
        clean_up_tokenization_spaces=False,  # byte-level BPE decodes to the exact text
        model_max_length=1024,
    )


def export_hf(
    model: Any, tokenizer: Any, out: Path, meta: dict[str, str] | None = None, permute: bool = True
) -> None:
    """Write a directory that ``MarianMTModel.from_pretrained`` and ``AutoTokenizer`` load.

    config.json, model.safetensors, generation_config.json, tokenizer.json and its config,
    and aiayn_export.json (the aiayn config, for the record). ``permute`` only for tests.
    """
    from aiayn.config import to_dict

    cfg = model.config
    check_exportable_hf(cfg)
    tf = require_hf()
    state = {k: v.detach().cpu().float() for k, v in model.state_dict().items()}
    hf = hf_model(cfg, state, permute)
    hf.generation_config = tf.GenerationConfig(**generation_settings(cfg))
    out.mkdir(parents=True, exist_ok=True)
    hf.save_pretrained(str(out), safe_serialization=True)
    hf_tokenizer(tokenizer).save_pretrained(str(out))
    data = {"format": "hf", "model_config": to_dict(cfg), **(meta or {})}
    (out / "aiayn_export.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


# Import: Marian -> aiayn ---------------------------------------------------------------------


def locate(name_or_dir: str) -> Path:
    """The local directory of a model: the path itself, or the Hub's download (where reachable)."""
    p = Path(name_or_dir)
    if p.is_dir():
        return p
    local = p.exists() or p.is_absolute() or name_or_dir.startswith((".", "~"))
    if local or name_or_dir.count("/") != 1:
        what = "not a directory" if p.exists() else "no such directory"
        raise UserError(f"{name_or_dir}: {what}, and not a Hub name (OWNER/NAME)")
    require_hf()
    from huggingface_hub import snapshot_download

    try:
        d = Path(
            snapshot_download(name_or_dir, allow_patterns=["*.json", "*.spm", "*.safetensors"])
        )
        if not any(d.glob("*.safetensors")):  # an older repository: Transformers loads its .bin
            # with torch.load(weights_only=True): tensors only, never pickled code
            d = Path(snapshot_download(name_or_dir, allow_patterns=["pytorch_model.bin"]))
    except Exception as e:  # no network, no such repository: the Hub's own message
        first = " ".join(str(e).split())[:200]
        raise UserError(
            f"{name_or_dir}: not a local directory, and not downloadable from the Hub ({first})"
        ) from None
    return d


def _tokenizer_builder(m: MarianDir) -> Callable[[list[str]], Any]:
    """A builder of the aiayn tokenizer over pieces (aiayn's ids) from the checked files."""
    from aiayn.data.spm import SentencePiecePair

    if m.source_spm is not None:
        source, target = m.source_spm, m.target_spm or m.source_spm

        def pair(pieces: list[str]) -> Any:
            return SentencePiecePair(source, target, pieces)

        return pair
    from aiayn.data import Tokenizer

    data = {**(m.tokenizer_json or {}), "post_processor": None}

    def bpe(pieces: list[str]) -> Any:  # an aiayn export: its own BPE
        if pieces[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS) or any(
            m.vocab.get(p) != i for i, p in enumerate(pieces)
        ):
            raise UserError(f"{m.path}/tokenizer.json: its ids are not aiayn's (0-3 specials)")
        return Tokenizer.from_str(json.dumps(data))

    return bpe


def vocabulary_order(vocab: dict[str, int], config: dict[str, Any], where: str) -> list[int]:
    """``order[a]``: the Marian id of aiayn id a (-1: a BOS row Marian lacks).

    aiayn's ids 0-3 are PAD, BOS, EOS, UNK; the other Marian ids follow in their order.
    """
    size = int(config["vocab_size"])
    pad, eos = config.get("pad_token_id"), config.get("eos_token_id")
    if isinstance(eos, list):
        eos = eos[0] if len(eos) == 1 else None
    start = config.get("decoder_start_token_id")
    start = pad if start is None else start
    unk = vocab.get(SPECIAL_TOKENS[UNK])
    ids = (("pad_token_id", pad), ("eos_token_id", eos), ("decoder_start_token_id", start))
    for name, i in (*ids, ("<unk>", unk)):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < size:
            raise UserError(f"{where}: {name}={i!r} is not an id of the {size}-token vocabulary")
    # BOS: the start token when it is not PAD; else Marian's "<s>" if its vocabulary has one
    # (a row it never predicts in practice), else a row of aiayn's own (-1).
    bos = start if start != pad else vocab.get(SPECIAL_TOKENS[BOS], -1)
    specials = [pad, bos, eos, unk]
    if len({i for i in specials if i >= 0}) != sum(i >= 0 for i in specials):
        raise UserError(f"{where}: pad, start, eos and unk must be four different ids")
    taken = set(specials)
    return specials + [i for i in range(size) if i not in taken]


def import_marian(name_or_dir: str) -> tuple[dict[str, Tensor], ModelConfig, Any, dict[str, str]]:
    """(aiayn state dict, config, tokenizer, metadata) of a Marian model.  See the module doc."""
    d = locate(name_or_dir)
    tf = require_hf()
    checked = check_marian_dir(d)  # every file, before any weight is read
    config, vocab = checked.config, checked.vocab
    make_tokenizer = _tokenizer_builder(checked)
    order = vocabulary_order(vocab, config, str(d))
    try:
        hf = tf.MarianMTModel.from_pretrained(str(d), use_safetensors=None)
    except Exception as e:  # what the checks above cannot foresee: Transformers' own checks
        first = " ".join(str(e).split())[:200]
        raise UserError(f"{d}: cannot load the Marian weights ({first})") from None
    marian = {k: v.detach().float().cpu() for k, v in hf.state_dict().items()}
    if not torch.equal(marian["lm_head.weight"], marian["model.shared.weight"]):
        raise UserError(f"{d}: lm_head differs from the shared embedding; 3.4 ties them")
    start = config.get("decoder_start_token_id")
    decoder_start = "pad" if start in (None, config["pad_token_id"]) else "bos"
    d_model, heads = int(config["d_model"]), int(config["encoder_attention_heads"])
    cfg = ModelConfig(
        vocab_size=len(order),
        d_model=d_model,
        n_heads=heads,
        d_ff=int(config["encoder_ffn_dim"]),
        n_layers=int(config["encoder_layers"]),
        n_dec_layers=(
            int(config["decoder_layers"])
            if config["decoder_layers"] != config["encoder_layers"]
            else None
        ),
        dropout=float(config.get("dropout", 0.1)),
        attn_dropout=float(config.get("attention_dropout", 0.0)),
        ffn_dropout=float(config.get("activation_dropout", 0.0)),
        attn_bias=True,
        activation=MARIAN_ACTIVATIONS[config.get("activation_function", "gelu")],
        logits_bias=True,
        decoder_start=decoder_start,
        pad_id=PAD,
    )
    state = from_marian_state(marian, cfg, order)
    inverse = {i: p for p, i in vocab.items()}
    pieces = [inverse.get(i, f"<id{i}>") if i >= 0 else "" for i in order]
    pieces[: len(SPECIAL_TOKENS)] = SPECIAL_TOKENS
    tokenizer = make_tokenizer(pieces)
    label = name_or_dir if not Path(name_or_dir).is_dir() else Path(name_or_dir).resolve().name
    meta = {ORIGIN_KEY: f"Hugging Face MarianMTModel {label} (aiayn import-hf)"}
    return state, cfg, tokenizer, meta


def marian_ids(order: list[int]) -> Callable[[list[int]], list[int]]:
    """aiayn ids -> Marian ids of an imported model (for comparisons)."""
    return lambda ids: [order[i] for i in ids]
