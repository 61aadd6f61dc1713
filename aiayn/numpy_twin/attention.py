"""The twin's attention: softmax, scaled dot-product attention, multi-head.  Section 3.2.

Shapes follow the package's key (B batch, H heads, Lq queries, Lk keys, D d_model, K d_k).
Masks are boolean, broadcastable to (B, H, Lq, Lk), True = may attend; a masked score is
-inf before the softmax, so its weight is exactly 0 (a row whose every key is masked gets all
zeros, as in ``aiayn.attention``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Array = np.ndarray
Cache = dict[str, Any]


def softmax_forward(scores: Array, keep: Array | None = None) -> Array:
    """A = softmax(S) row by row, A_ij = exp(S_ij) / sum_j' exp(S_ij').  Section 3.2.1.

    Masked entries (keep False) count as S = -inf: their weight is 0. The row maximum is
    subtracted first (softmax is unchanged by a constant per row, and exp cannot overflow).

    >>> softmax_forward(np.array([[0.0, np.log(3.0)]])).round(6).tolist()
    [[0.25, 0.75]]
    """
    if keep is None:
        keep = np.ones(scores.shape, dtype=bool)
    keep = np.broadcast_to(keep, scores.shape)
    masked = np.where(keep, scores, -np.inf)  # (..., Lq, Lk)
    top = masked.max(axis=-1, keepdims=True)  # (..., Lq, 1)
    top = np.where(np.isfinite(top), top, 0.0)  # an all-masked row: any shift will do
    e = np.where(keep, np.exp(np.where(keep, scores, 0.0) - top), 0.0)  # (..., Lq, Lk)
    total = e.sum(axis=-1, keepdims=True)  # (..., Lq, 1)
    return e / np.where(total > 0, total, 1.0)  # (..., Lq, Lk)


def softmax_backward(d_weights: Array, weights: Array) -> Array:
    """dS = A * (dA - rowsum(dA * A)).  Section 3.2.1 (the softmax's Jacobian).

    With A_j = exp(S_j) / Z: dA_j / dS_k = A_j (delta_jk - A_k), so
    dS_k = sum_j dA_j A_j (delta_jk - A_k) = A_k (dA_k - sum_j dA_j A_j).
    A masked entry has A = 0 and so receives no gradient, as -inf receives none.
    """
    return weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))


def attention_forward(
    q: Array, k: Array, v: Array, keep: Array | None = None
) -> tuple[Array, Cache]:
    """O = softmax(Q K^T / sqrt(d_k)) V.  Section 3.2.1, Eq. (1).

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K); keep broadcastable to (B, H, Lq, Lk).
    Returns O (B, H, Lq, K) and a cache with the scores and the weights.
    """
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (B, H, Lq, Lk)
    weights = softmax_forward(scores, keep)  # (B, H, Lq, Lk)
    out = weights @ v  # (B, H, Lq, K)
    return out, {"q": q, "k": k, "v": v, "scores": scores, "weights": weights, "scale": scale}


def attention_backward(d_out: Array, cache: Cache) -> tuple[Array, Array, Array]:
    """dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k), dV = A^T dO.  Section 3.2.1, Eq. (1).

    From O = A V: dA = dO V^T and dV = A^T dO; then dS = softmax'(dA). From S = Q K^T c with
    c = 1 / sqrt(d_k): dQ = c dS K and dK = c dS^T Q. Masked entries have dS = 0.

    Shapes: d_out (B, H, Lq, K) -> dq (B, H, Lq, K), dk (B, H, Lk, K), dv (B, H, Lk, K).
    """
    q, k, v, a, c = cache["q"], cache["k"], cache["v"], cache["weights"], cache["scale"]
    dv = np.swapaxes(a, -1, -2) @ d_out  # (B, H, Lk, K)
    da = d_out @ np.swapaxes(v, -1, -2)  # (B, H, Lq, Lk)
    ds = softmax_backward(da, a)  # (B, H, Lq, Lk)
    dq = c * ds @ k  # (B, H, Lq, K)
    dk = c * np.swapaxes(ds, -1, -2) @ q  # (B, H, Lk, K)
    return dq, dk, dv


def _heads(x: Array, n_heads: int) -> Array:
    """Split the last dimension into heads.  Shapes: (B, L, H K) -> (B, H, L, K)."""
    B, L, HK = x.shape
    return x.reshape(B, L, n_heads, HK // n_heads).transpose(0, 2, 1, 3)  # (B, H, L, K)


def _merge(x: Array) -> Array:
    """Concat(head_1..head_h).  Shapes: (B, H, L, K) -> (B, L, H K)."""
    B, H, L, K = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * K)  # (B, L, H K)


def mha_forward(
    x: Array,
    memory: Array | None,
    w_qkv: Array,
    w_o: Array,
    n_heads: int,
    d_k: int,
    keep: Array | None = None,
) -> tuple[Array, Cache]:
    """Concat(head_1..head_h) W^O, head_i = Attention(x W_i^Q, m W_i^K, m W_i^V).  3.2.2.

    m = x for self-attention (memory None), the encoder output for cross-attention.
    w_qkv (D, 2 H K + H d_v) = [W^Q | W^K | W^V] with head i of each block in columns
    i K .. (i + 1) K; w_o (H d_v, D). ``keep`` includes the causal mask when one applies.

    Shapes: x (B, Lq, D), memory (B, Lk, D) or None -> (B, Lq, D).
    """
    m = x if memory is None else memory
    hk = n_heads * d_k
    q = _heads(x @ w_qkv[:, :hk], n_heads)  # (B, H, Lq, K)
    k = _heads(m @ w_qkv[:, hk : 2 * hk], n_heads)  # (B, H, Lk, K)
    v = _heads(m @ w_qkv[:, 2 * hk :], n_heads)  # (B, H, Lk, d_v)
    out, att = attention_forward(q, k, v, keep)  # (B, H, Lq, d_v)
    concat = _merge(out)  # (B, Lq, H d_v)
    result = concat @ w_o  # (B, Lq, D)
    cache = {"x": x, "memory": memory, "w_qkv": w_qkv, "w_o": w_o, "n_heads": n_heads}
    cache.update(att=att, concat=concat, hk=hk)
    return result, cache


def mha_backward(d_out: Array, cache: Cache) -> tuple[Array, Array | None, Array, Array]:
    """dW^O = Concat^T dY; each head's attention backward; dW = x^T dP, dx = dP W^T.  3.2.2.

    dConcat = dY W^O^T is split into the heads' dO. With P = x W (one of the projections):
    dW = sum_b x_b^T dP_b and dx = dP W^T. For self-attention Q, K and V all come from x, so
    their three dx add up; for cross-attention dx comes from Q only and dmemory from K and V.

    Shapes: d_out (B, Lq, D) -> dx (B, Lq, D), dmemory (B, Lk, D) or None, dw_qkv, dw_o.
    """
    x, memory, w_qkv, w_o = cache["x"], cache["memory"], cache["w_qkv"], cache["w_o"]
    n_heads, hk = cache["n_heads"], cache["hk"]
    concat = cache["concat"]  # (B, Lq, H d_v)
    dw_o = np.einsum("bli,blj->ij", concat, d_out)  # (H d_v, D)
    d_concat = d_out @ w_o.T  # (B, Lq, H d_v)
    B, Lq, HV = d_concat.shape
    d_heads = d_concat.reshape(B, Lq, n_heads, HV // n_heads).transpose(0, 2, 1, 3)
    dq, dk, dv = attention_backward(d_heads, cache["att"])  # (B, H, L, K) each
    dq, dk, dv = _merge(dq), _merge(dk), _merge(dv)  # (B, L, H K) each
    m = x if memory is None else memory
    dw_qkv = np.concatenate(
        [
            np.einsum("bli,blj->ij", x, dq),
            np.einsum("bli,blj->ij", m, dk),
            np.einsum("bli,blj->ij", m, dv),
        ],
        axis=1,
    )  # (D, 3 H K)
    dx = dq @ w_qkv[:, :hk].T  # (B, Lq, D)
    dm = dk @ w_qkv[:, hk : 2 * hk].T + dv @ w_qkv[:, 2 * hk :].T  # (B, Lk, D)
    if memory is None:
        return dx + dm, None, dw_qkv, dw_o
    return dx, dm, dw_qkv, dw_o
