"""The twin's other blocks: embedding, positions, LayerNorm, FFN, output layer, loss.

Sections 3.1 (residual and LayerNorm), 3.3 (FFN), 3.4 (shared embeddings), 3.5 (positions) and
5.4 (label smoothing). Each ``*_forward`` returns its output and what its backward needs; each
``*_backward`` maps the gradient of the output to the gradients of the inputs and parameters.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Array = np.ndarray
Cache = dict[str, Any]


def positions(length: int, d_model: int, offset: int = 0) -> Array:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).  3.5.

    >>> positions(2, 4)[1].round(6).tolist()
    [0.841471, 0.540302, 0.01, 0.99995]

    Shapes: -> (length, d_model).
    """
    pos = np.arange(offset, offset + length, dtype=np.float64)[:, None]  # (L, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]  # (1, D/2)
    angle = pos / 10000.0 ** (two_i / d_model)  # (L, D/2)
    pe = np.empty((length, d_model))  # (L, D)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def embed_forward(ids: Array, emb: Array) -> tuple[Array, Cache]:
    """X = sqrt(d_model) E[ids] + PE.  Sections 3.4 and 3.5.

    Shapes: ids (B, L) int, emb (V, D) -> X (B, L, D).
    """
    D = emb.shape[1]
    x = emb[ids] * math.sqrt(D) + positions(ids.shape[1], D)  # (B, L, D)
    return x, {"ids": ids, "shape": emb.shape}


def embed_backward(d_x: Array, cache: Cache) -> Array:
    """dE[v] = sqrt(d_model) * sum of dX[b, t] over the positions with ids[b, t] = v.  3.4, 3.5.

    PE is a constant and receives nothing; a row of E that several positions
    look up collects the sum of their gradients (a scatter-add); rows never looked up get 0.

    Shapes: d_x (B, L, D) -> dE (V, D).
    """
    d_emb = np.zeros(cache["shape"])  # (V, D)
    np.add.at(d_emb, cache["ids"].reshape(-1), d_x.reshape(-1, d_x.shape[-1]))
    return d_emb * math.sqrt(cache["shape"][1])


def layer_norm_forward(x: Array, gamma: Array, beta: Array, eps: float) -> tuple[Array, Cache]:
    """LN(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, row by row.  Section 3.1.

    mu and sigma^2 are the mean and the (biased) variance of each row over its D features; the
    cache keeps them (``mu``, ``var``) and xhat = (x - mu) / sqrt(sigma^2 + eps) for display.

    Shapes: x (..., D), gamma and beta (D,) -> (..., D).
    """
    mu = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)  # (..., 1)
    inv = 1.0 / np.sqrt(var + eps)  # (..., 1)
    xhat = (x - mu) * inv  # (..., D)
    return gamma * xhat + beta, {"xhat": xhat, "inv": inv, "gamma": gamma, "mu": mu, "var": var}


def layer_norm_backward(d_y: Array, cache: Cache) -> tuple[Array, Array, Array]:
    """dx = (dxh - mean(dxh) - xh * mean(dxh * xh)) / sqrt(sigma^2 + eps).  Section 3.1.

    dxh = dy * gamma; dgamma = sum over rows of dy * xh, dbeta = sum over rows of dy. For one row,
    xh = (x - mu) s with s = (sigma^2 + eps)^(-1/2); d mu / dx_j = 1/D and
    d sigma^2 / dx_j = 2 (x_j - mu) / D give dxh_i/dx_j = s (delta_ij - 1/D - xh_i xh_j / D),
    hence dx_j = s (dxh_j - mean_i dxh_i - xh_j mean_i dxh_i xh_i). eps is a constant, not a
    parameter: it has no gradient.

    Shapes: d_y (..., D) -> dx (..., D), dgamma (D,), dbeta (D,).
    """
    xhat, inv, gamma = cache["xhat"], cache["inv"], cache["gamma"]
    D = xhat.shape[-1]
    d_gamma = (d_y * xhat).reshape(-1, D).sum(axis=0)  # (D,)
    d_beta = d_y.reshape(-1, D).sum(axis=0)  # (D,)
    dxh = d_y * gamma  # (..., D)
    dx = inv * (
        dxh - dxh.mean(axis=-1, keepdims=True) - xhat * (dxh * xhat).mean(axis=-1, keepdims=True)
    )  # (..., D)
    return dx, d_gamma, d_beta


def ffn_forward(x: Array, w_1: Array, b_1: Array, w_2: Array, b_2: Array) -> tuple[Array, Cache]:
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2.  Section 3.3, Eq. (2).

    Shapes: x (..., D), w_1 (D, F), w_2 (F, D) -> (..., D).
    """
    pre = x @ w_1 + b_1  # (..., F)
    hidden = np.maximum(pre, 0.0)  # (..., F)
    return hidden @ w_2 + b_2, {"x": x, "pre": pre, "hidden": hidden, "w_1": w_1, "w_2": w_2}


def ffn_backward(d_y: Array, cache: Cache) -> tuple[Array, Array, Array, Array, Array]:
    """dh = dy W_2^T [pre > 0], dW_1 = x^T dh, dW_2 = h^T dy, dx = dh W_1^T.  Section 3.3.

    db_2 = sum of dy over the rows, db_1 = sum of dh. ReLU passes the gradient where its input
    was positive and blocks it elsewhere (at exactly 0 it blocks, as PyTorch does).

    Shapes: d_y (..., D) -> dx (..., D), dw_1 (D, F), db_1 (F,), dw_2 (F, D), db_2 (D,).
    """
    x, pre, hidden = cache["x"], cache["pre"], cache["hidden"]
    D, F = cache["w_1"].shape
    d_w2 = hidden.reshape(-1, F).T @ d_y.reshape(-1, D)  # (F, D)
    d_b2 = d_y.reshape(-1, D).sum(axis=0)  # (D,)
    d_h = (d_y @ cache["w_2"].T) * (pre > 0)  # (..., F)
    d_w1 = x.reshape(-1, D).T @ d_h.reshape(-1, F)  # (D, F)
    d_b1 = d_h.reshape(-1, F).sum(axis=0)  # (F,)
    return d_h @ cache["w_1"].T, d_w1, d_b1, d_w2, d_b2


def output_forward(z: Array, emb: Array) -> Array:
    """L = Z_D E^T: the pre-softmax linear layer shares E, unscaled.  Section 3.4.

    Shapes: z (B, T, D), emb (V, D) -> logits (B, T, V).
    """
    return z @ emb.T  # (B, T, V)


def output_backward(d_logits: Array, z: Array, emb: Array) -> tuple[Array, Array]:
    """dZ = dL E, dE = sum_b dL_b^T Z_b.  Section 3.4.

    Shapes: d_logits (B, T, V) -> dz (B, T, D), dE (V, D).
    """
    return d_logits @ emb, np.einsum("btv,btd->vd", d_logits, z)


def label_smoothed_forward(
    logits: Array, target: Array, eps: float, pad_id: int
) -> tuple[float, Cache]:
    """loss = mean over non-pad t of -sum_v q_tv log p_tv (label smoothing).  Section 5.4.

    q_t puts 1 - eps on y_t and eps / (V - 1) on every other token (eps_ls = 0.1 in the paper);
    p = softmax(logits) row by row. With eps = 0 this is the plain cross-entropy -log p(y_t),
    p(y_t) the probability of the correct token. Padding positions (target == pad_id) do not
    count. The training loop uses this convention. The cache keeps each position's loss
    (``rows``, padding included) and p.

    Shapes: logits (B, T, V), target (B, T) int -> a float and a cache.
    """
    V = logits.shape[-1]
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (B, T, V)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (B, T, V)
    q = np.full(logits.shape, eps / (V - 1) if V > 1 else 0.0)  # (B, T, V)
    np.put_along_axis(q, target[..., None], 1.0 - eps, axis=-1)
    keep = target != pad_id  # (B, T)
    n = max(int(keep.sum()), 1)
    rows = -(q * logp).sum(axis=-1)  # (B, T)
    loss = float((rows * keep).sum() / n)
    return loss, {"p": np.exp(logp), "q": q, "keep": keep, "n": n, "rows": rows}


def label_smoothed_backward(cache: Cache) -> Array:
    """dloss/dlogits_t = (p_t - q_t) / n for non-pad t, 0 for padding.  Section 5.4.

    For one row, -sum_v q_v log p_v with log p_v = l_v - logsumexp(l) has derivative
    -q_j + p_j sum_v q_v = p_j - q_j (q sums to 1); the mean over n tokens divides by n.

    Shapes: -> d_logits (B, T, V).
    """
    return (cache["p"] - cache["q"]) * cache["keep"][..., None] / cache["n"]
