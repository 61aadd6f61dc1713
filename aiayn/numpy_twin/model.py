"""The twin's whole model: encoder and decoder stacks of N layers, forward and backward.

Sections 3.1-3.5 and 5.4. The same computation as ``aiayn.Transformer`` in evaluation mode
(dropout is a training-time mask: the twin leaves it out, as the tests run PyTorch with
dropout off). Backward walks the forward in reverse; where a value feeds two places (the
residual x into the sub-layer and into the sum; the memory into every cross-attention; E into
the source lookup, the target lookup and the output layer) the gradients of both uses add up.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiayn.config import ModelConfig
from aiayn.numpy_twin.attention import mha_backward, mha_forward
from aiayn.numpy_twin.blocks import (
    embed_backward,
    embed_forward,
    ffn_backward,
    ffn_forward,
    label_smoothed_backward,
    label_smoothed_forward,
    layer_norm_backward,
    layer_norm_forward,
    output_backward,
    output_forward,
)

Array = np.ndarray
Params = dict[str, Array]
Cache = dict[str, Any]


def check_config(cfg: ModelConfig) -> None:
    """The twin implements the paper's model: raise ValueError naming any other option."""
    for name, paper in (
        ("norm_first", False),
        ("positions", "sinusoidal"),
        ("attn_bias", False),
    ):
        if getattr(cfg, name) != paper:
            raise ValueError(f"{name}: the NumPy twin implements the paper only ({name}={paper!r})")


def params_from_torch(model: Any) -> Params:
    """The model's parameters as float64 NumPy arrays, named as in ``state_dict()``."""
    check_config(model.config)
    return {n: p.detach().double().cpu().numpy().copy() for n, p in model.named_parameters()}


def init_params(cfg: ModelConfig, rng: np.random.Generator) -> Params:
    """Random parameters with the names and shapes of ``Transformer(cfg)`` (for tests)."""
    check_config(cfg)
    D, F, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    qkv = 2 * cfg.n_heads * cfg.d_k + cfg.n_heads * cfg.d_v
    p: Params = {"embedding": rng.normal(0.0, D**-0.5, (V, D))}

    def attn(prefix: str) -> None:
        p[f"{prefix}.w_qkv"] = rng.normal(0.0, D**-0.5, (D, qkv))
        p[f"{prefix}.w_o"] = rng.normal(0.0, D**-0.5, (cfg.n_heads * cfg.d_v, D))

    def ffn_norms(prefix: str, norms: int) -> None:
        p[f"{prefix}.ffn.w_1"] = rng.normal(0.0, D**-0.5, (D, F))
        p[f"{prefix}.ffn.b_1"] = rng.normal(0.0, 0.1, F)
        p[f"{prefix}.ffn.w_2"] = rng.normal(0.0, F**-0.5, (F, D))
        p[f"{prefix}.ffn.b_2"] = rng.normal(0.0, 0.1, D)
        for i in range(1, norms + 1):
            p[f"{prefix}.norm{i}.weight"] = 1.0 + rng.normal(0.0, 0.1, D)
            p[f"{prefix}.norm{i}.bias"] = rng.normal(0.0, 0.1, D)

    for layer in range(cfg.n_layers):
        attn(f"encoder.{layer}.self_attn")
        ffn_norms(f"encoder.{layer}", 2)
    for layer in range(cfg.decoder_layers):
        attn(f"decoder.{layer}.self_attn")
        attn(f"decoder.{layer}.cross_attn")
        ffn_norms(f"decoder.{layer}", 3)
    return p


def _add_norm(p: Params, name: str, x: Array, sub: Array, eps: float) -> tuple[Array, Cache]:
    """LayerNorm(x + Sublayer(x)).  Section 3.1."""
    return layer_norm_forward(x + sub, p[f"{name}.weight"], p[f"{name}.bias"], eps)


def _norm_back(d: Array, cache: Cache, name: str, grads: Params) -> Array:
    """Backward of LayerNorm(x + s): the returned d(x + s) goes to both x and s."""
    dr, dg, db = layer_norm_backward(d, cache)
    grads[f"{name}.weight"] = grads.get(f"{name}.weight", 0.0) + dg
    grads[f"{name}.bias"] = grads.get(f"{name}.bias", 0.0) + db
    return dr


def _ffn(p: Params, prefix: str, x: Array) -> tuple[Array, Cache]:
    names = ("w_1", "b_1", "w_2", "b_2")
    return ffn_forward(x, *(p[f"{prefix}.ffn.{n}"] for n in names))


def _ffn_back(d: Array, cache: Cache, prefix: str, grads: Params) -> Array:
    dx, *dps = ffn_backward(d, cache)
    for n, g in zip(("w_1", "b_1", "w_2", "b_2"), dps, strict=True):
        grads[f"{prefix}.ffn.{n}"] = g
    return dx


def _mha(p: Params, name: str, cfg: ModelConfig, x: Array, mem: Array | None, keep: Array | None):
    return mha_forward(x, mem, p[f"{name}.w_qkv"], p[f"{name}.w_o"], cfg.n_heads, cfg.d_k, keep)


def _mha_back(d: Array, cache: Cache, name: str, grads: Params) -> tuple[Array, Array | None]:
    dx, dm, dw_qkv, dw_o = mha_backward(d, cache)
    grads[f"{name}.w_qkv"], grads[f"{name}.w_o"] = dw_qkv, dw_o
    return dx, dm


def encoder_layer_forward(
    p: Params, i: int, cfg: ModelConfig, x: Array, keep: Array
) -> tuple[Array, Cache]:
    """H = LN(X + MultiHead(X, X, X)); Z = LN(H + FFN(H)).  Section 3.1.

    Shapes: x (B, S, D), keep (B, 1, 1, S) -> (B, S, D).
    """
    pre = f"encoder.{i}"
    m, c_att = _mha(p, f"{pre}.self_attn", cfg, x, None, keep)  # (B, S, D): M_E
    h, c_n1 = _add_norm(p, f"{pre}.norm1", x, m, cfg.layer_norm_eps)  # (B, S, D): H_E
    f, c_ffn = _ffn(p, pre, h)  # (B, S, D): F_E
    z, c_n2 = _add_norm(p, f"{pre}.norm2", h, f, cfg.layer_norm_eps)  # (B, S, D): Z_E
    return z, {"att": c_att, "n1": c_n1, "ffn": c_ffn, "n2": c_n2, "i": i}


def encoder_layer_backward(d_z: Array, cache: Cache, grads: Params) -> Array:
    """dH = dR2 + FFN'(dR2), dX = dR1 + MultiHead'(dR1), dR = LN'(d).  Section 3.1.

    Each LN(x + s) passes the same dR to the residual x and to the sub-layer's output s; the
    sub-layer's backward then adds its own path to the input's gradient.
    """
    pre = f"encoder.{cache['i']}"
    dr2 = _norm_back(d_z, cache["n2"], f"{pre}.norm2", grads)  # (B, S, D)
    dh = dr2 + _ffn_back(dr2, cache["ffn"], pre, grads)  # (B, S, D)
    dr1 = _norm_back(dh, cache["n1"], f"{pre}.norm1", grads)  # (B, S, D)
    dx, _ = _mha_back(dr1, cache["att"], f"{pre}.self_attn", grads)  # (B, S, D)
    return dr1 + dx


def decoder_layer_forward(
    p: Params, i: int, cfg: ModelConfig, y: Array, memory: Array, src_keep: Array
) -> tuple[Array, Cache]:
    """H = LN(Y + MaskedMultiHead(Y)), H2 = LN(H + MultiHead(H, Z_E, Z_E)), Z = LN(H2 + FFN(H2)).

    Sections 3.1 and 3.2.3: the causal mask lets position i see positions j <= i only.
    Shapes: y (B, T, D), memory (B, S, D), src_keep (B, 1, 1, S) -> (B, T, D).
    """
    pre, eps, T = f"decoder.{i}", cfg.layer_norm_eps, y.shape[1]
    causal = np.tril(np.ones((T, T), dtype=bool))[None, None]  # (1, 1, T, T)
    m, c_self = _mha(p, f"{pre}.self_attn", cfg, y, None, causal)  # (B, T, D)
    h, c_n1 = _add_norm(p, f"{pre}.norm1", y, m, eps)  # (B, T, D): H_D
    mc, c_cross = _mha(p, f"{pre}.cross_attn", cfg, h, memory, src_keep)  # (B, T, D)
    h2, c_n2 = _add_norm(p, f"{pre}.norm2", h, mc, eps)  # (B, T, D)
    f, c_ffn = _ffn(p, pre, h2)  # (B, T, D): F_D
    z, c_n3 = _add_norm(p, f"{pre}.norm3", h2, f, eps)  # (B, T, D): Z_D
    cache = {"self": c_self, "n1": c_n1, "cross": c_cross, "n2": c_n2, "ffn": c_ffn}
    cache.update(n3=c_n3, i=i)
    return z, cache


def decoder_layer_backward(d_z: Array, cache: Cache, grads: Params) -> tuple[Array, Array]:
    """The encoder layer's backward with one more sub-layer; returns (dY, dMemory).  3.1.

    The cross-attention sends gradient to its queries' input (the decoder) and to its keys'
    and values' input (the encoder's output, the memory).
    """
    pre = f"decoder.{cache['i']}"
    dr3 = _norm_back(d_z, cache["n3"], f"{pre}.norm3", grads)  # (B, T, D)
    dh2 = dr3 + _ffn_back(dr3, cache["ffn"], pre, grads)  # (B, T, D)
    dr2 = _norm_back(dh2, cache["n2"], f"{pre}.norm2", grads)  # (B, T, D)
    dq, dmem = _mha_back(dr2, cache["cross"], f"{pre}.cross_attn", grads)
    dh = dr2 + dq  # (B, T, D)
    dr1 = _norm_back(dh, cache["n1"], f"{pre}.norm1", grads)  # (B, T, D)
    dy, _ = _mha_back(dr1, cache["self"], f"{pre}.self_attn", grads)  # (B, T, D)
    assert dmem is not None
    return dr1 + dy, dmem


def forward(p: Params, cfg: ModelConfig, src: Array, tgt_in: Array) -> tuple[Array, Cache]:
    """logits = Decoder(X_D, Encoder(X_E)) E^T.  Section 3, Figure 1.

    Source keys equal to ``cfg.pad_id`` are masked in every attention over the source.
    Shapes: src (B, S), tgt_in (B, T) int -> logits (B, T, V).
    """
    check_config(cfg)
    emb = p["embedding"]  # (V, D)
    src_keep = (src != cfg.pad_id)[:, None, None, :]  # (B, 1, 1, S)
    x, c_src = embed_forward(src, emb)  # (B, S, D): X_E
    enc = []
    for i in range(cfg.n_layers):
        x, c = encoder_layer_forward(p, i, cfg, x, src_keep)  # (B, S, D)
        enc.append(c)
    memory = x  # (B, S, D): Z_E
    y, c_tgt = embed_forward(tgt_in, emb)  # (B, T, D): X_D
    dec = []
    for i in range(cfg.decoder_layers):
        y, c = decoder_layer_forward(p, i, cfg, y, memory, src_keep)  # (B, T, D)
        dec.append(c)
    logits = output_forward(y, emb)  # (B, T, V)
    cache = {"src": c_src, "tgt": c_tgt, "enc": enc, "dec": dec, "z": y, "emb": emb}
    cache["memory"] = memory
    return logits, cache


def backward(d_logits: Array, cache: Cache) -> Params:
    """Every parameter's gradient from dloss/dlogits, by the chain rule in reverse.  Section 3.

    dE sums three uses of the shared matrix: the output layer (dL^T Z_D), the target lookup and
    the source lookup (each sqrt(d_model) times a scatter-add of dX).
    """
    grads: Params = {}
    dy, d_emb = output_backward(d_logits, cache["z"], cache["emb"])  # (B, T, D), (V, D)
    d_mem = np.zeros_like(cache["memory"])  # (B, S, D)
    for c in reversed(cache["dec"]):
        dy, dm = decoder_layer_backward(dy, c, grads)  # (B, T, D), (B, S, D)
        d_mem = d_mem + dm
    d_emb = d_emb + embed_backward(dy, cache["tgt"])
    dx = d_mem  # (B, S, D)
    for c in reversed(cache["enc"]):
        dx = encoder_layer_backward(dx, c, grads)  # (B, S, D)
    grads["embedding"] = d_emb + embed_backward(dx, cache["src"])
    return grads


def loss_and_grads(
    p: Params, cfg: ModelConfig, src: Array, tgt_in: Array, tgt_out: Array, eps: float
) -> tuple[float, Params]:
    """The label-smoothed loss (mean over non-pad target tokens) and its gradients.  5.4.

    Shapes: src (B, S), tgt_in (B, T), tgt_out (B, T) int.
    """
    logits, cache = forward(p, cfg, src, tgt_in)  # (B, T, V)
    loss, c_loss = label_smoothed_forward(logits, tgt_out, eps, cfg.pad_id)
    return loss, backward(label_smoothed_backward(c_loss), cache)
