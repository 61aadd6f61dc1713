"""Attention kernels: the same softmax(Q K^T / sqrt(d_k)) V in fewer, larger passes.  Section 3.2.1.

Each replaces ``aiayn.attention.attention`` (the plain path: explicit scores, masked_fill,
softmax, matmul) and is proven equal to it in ``tests/test_kernel_attention.py``. Why each
exists, with its measurements: docs/performance.md.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from aiayn.attention import with_causal

BATCHED_MAX_KEYS = 256  # on the CPU, up to this many keys batched_attention beats SDPA


def batched_attention(q: Tensor, k: Tensor, v: Tensor, keep: Tensor | None = None) -> Tensor:
    """softmax(Q K^T / sqrt(d_k) + M) V, M = 0 where keep, -inf elsewhere.  Section 3.2.1, Eq. (1).

    Replaces the plain masked_fill + softmax: the mask as the study note writes it (step 7),
    added to the scores in the same ``baddbmm`` that scales them, then one softmax and one
    ``bmm`` over all B x H heads. -inf is the dtype's lowest finite value (as in the plain path),
    and a row whose every key is masked gets zero output.

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K); keep broadcastable to (B, H, Lq, Lk)
    -> (B, H, Lq, K).
    """
    B, H, Lq, K = q.shape
    Lk = k.size(2)
    q3 = q.reshape(B * H, Lq, K)  # (B H, Lq, K)
    k3 = k.reshape(B * H, Lk, K)  # (B H, Lk, K)
    v3 = v.reshape(B * H, Lk, v.size(-1))  # (B H, Lk, K)
    if keep is None:
        m = q.new_zeros(())  # M = 0 everywhere
    else:
        m = torch.zeros(keep.shape, dtype=q.dtype, device=q.device)  # broadcastable M
        m.masked_fill_(~keep, torch.finfo(q.dtype).min)
        m = m.expand(B, H, Lq, Lk).reshape(B * H, Lq, Lk)  # (B H, Lq, Lk)
    scores = torch.baddbmm(m, q3, k3.transpose(1, 2), alpha=1.0 / math.sqrt(K))  # (B H, Lq, Lk)
    weights = scores.softmax(dim=-1)  # (B H, Lq, Lk)
    if keep is not None:
        empty = ~keep.any(dim=-1, keepdim=True)  # (B or 1, H or 1, Lq or 1, 1)
        if bool(empty.any()):  # an all-masked row attends to nothing
            weights = weights.view(B, H, Lq, Lk).masked_fill(empty, 0.0).view(B * H, Lq, Lk)
    return torch.bmm(weights, v3).view(B, H, Lq, -1)  # (B, H, Lq, K)


def sdpa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keep: Tensor | None = None,
    dropout_p: float = 0.0,
    causal: bool = False,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V by PyTorch's fused kernels.  Section 3.2.1, Eq. (1).

    Replaces the plain path with ``F.scaled_dot_product_attention`` (flash or memory-efficient
    kernels; the same mask polarity, True = may attend). With ``causal`` the kernel applies the
    causal mask itself (keep must then be None and Lq == Lk).

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K) -> (B, H, Lq, K).
    """
    if keep is not None:
        keep = keep.expand(q.size(0), q.size(1), q.size(2), k.size(2))  # (B, H, Lq, Lk)
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=keep, dropout_p=dropout_p, is_causal=causal
    )  # (B, H, Lq, K)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keep: Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V by the fastest kernel for the device.  Section 3.2.1, Eq. (1).

    The dispatch rule, replacing ``aiayn.attention.attention``: ``batched_attention`` on the
    CPU for up to ``BATCHED_MAX_KEYS`` keys without attention dropout; ``sdpa_attention``
    otherwise (the GPU included), with the kernel's own causal mask when there is no other
    mask and the queries are the keys (training), and no mask at all for a single new query
    (cached decoding: it may see every key).

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K); keep broadcastable to (B, H, Lq, Lk)
    -> (B, H, Lq, K).
    """
    Lq, Lk = q.size(2), k.size(2)
    if causal and Lq == 1:
        causal = False  # the newest position may attend to every key before it
    if q.device.type == "cpu" and dropout_p == 0.0 and Lk <= BATCHED_MAX_KEYS:
        if causal:
            keep = with_causal(keep, Lq, Lk, q.device)  # (B or 1, 1, Lq, Lk)
        return batched_attention(q, k, v, keep)  # (B, H, Lq, K)
    if causal and keep is None and Lq == Lk:
        return sdpa_attention(q, k, v, None, dropout_p, causal=True)  # (B, H, Lq, K)
    if causal:
        keep = with_causal(keep, Lq, Lk, q.device)  # (B or 1, 1, Lq, Lk)
    return sdpa_attention(q, k, v, keep, dropout_p)  # (B, H, Lq, K)
