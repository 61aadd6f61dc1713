"""Scaled dot-product attention, multi-head attention and masks.  Section 3.2.

Plain PyTorch, to be read next to the paper. Shape key, used in every shape comment:
    B batch, S source length, T target length, L any length (Lq queries, Lk keys),
    D d_model, H heads, K d_k = d_v, F d_ff, V vocabulary.

Masks are boolean, broadcastable to (B, H, Lq, Lk), and True means "may attend".
``MultiHeadAttention`` computes Eq. (1) with its ``attend`` argument, ``attention`` here unless
whoever builds it passes another function of the same signature.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Cache = dict[str, Tensor]


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """keep[b, 0, 0, j] = (ids[b, j] != pad).  Section 3.2.3 (keys that are padding are illegal).

    Shapes: ids (B, L) -> (B, 1, 1, L), broadcastable over heads and queries.
    """
    return (ids != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def causal_mask(
    length: int, device: torch.device | str | None = None, queries: int | None = None
) -> Tensor:
    """keep[i, j] = (j <= i).  Section 3.2.3: "masking out (setting to -inf)" illegal connections.

    The note's step 7: M is 0 on and below the diagonal and -inf above; as a boolean keep-mask,
    True on and below the diagonal. With ``queries`` = Lq < length, only the last Lq rows:
    query i sits at position length - Lq + i (decoding with a cache of earlier positions).

    >>> causal_mask(3).int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> causal_mask(3, queries=1).int().tolist()
    [[1, 1, 1]]

    Shapes: -> (Lq, length), Lq = queries or length.
    """
    keep = torch.ones(length, length, dtype=torch.bool, device=device).tril()  # (L, L)
    return keep if queries is None else keep[length - queries :]  # (Lq, L)


def with_causal(keep: Tensor | None, Lq: int, Lk: int, device: torch.device) -> Tensor:
    """keep AND causal: the decoder's self-attention mask.  Section 3.2.3.

    Shapes: keep broadcastable to (B, H, Lq, Lk) or None -> broadcastable to (B, H, Lq, Lk).
    """
    future = causal_mask(Lk, device, Lq)[None, None]  # (1, 1, Lq, Lk)
    return future if keep is None else keep & future


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keep: Tensor | None = None,
    dropout_p: float = 0.0,
    record: dict[str, Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V.  Section 3.2.1, Eq. (1).

    A row whose every key is masked gets all-zero weights (and output), never NaN. When
    ``record`` is a dict, the scores before and after masking go into it ("scores",
    "scores_masked", the latter with -inf where masked, as the paper writes it).

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K); keep broadcastable to (B, H, Lq, Lk).
    Returns the output (B, H, Lq, K) and the weights (B, H, Lq, Lk).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Lk)
    masked = scores
    if keep is not None:
        # 3.2.3: illegal connections set to -inf; the dtype's lowest finite value has the same
        # effect after the softmax (exp underflows to exactly 0) and keeps empty rows finite.
        masked = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)  # (B, H, Lq, Lk)
    weights = masked.softmax(dim=-1)  # (B, H, Lq, Lk)
    if keep is not None:
        weights = weights.masked_fill(~keep, 0.0)  # an all-masked row attends to nothing
    if record is not None:
        inf = scores.masked_fill(~keep, float("-inf")) if keep is not None else scores
        record.update(scores=scores, scores_masked=inf)  # (B, H, Lq, Lk) each
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)  # EXTENSION: attention dropout (off by default)
    return weights @ v, weights  # (B, H, Lq, K)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keep: Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V, with the causal mask when asked.  Sections 3.2.1, 3.2.3.

    The plain ``attend`` of ``MultiHeadAttention``: any other ``attend`` must be proven equal
    to it.

    Shapes: q (B, H, Lq, K); k, v (B, H, Lk, K) -> (B, H, Lq, K).
    """
    if causal:
        keep = with_causal(keep, q.size(2), k.size(2), q.device)  # (B or 1, 1, Lq, Lk)
    return scaled_dot_product_attention(q, k, v, keep, dropout_p)[0]  # (B, H, Lq, K)


Attend = Callable[..., Tensor]  # (q, k, v, keep, causal, dropout_p) -> output, as ``attention``
_BLOCKS = {"qkv": (0, 3), "q": (0, 1), "kv": (1, 3)}  # blocks of [W^Q | W^K | W^V], as slices


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O.  Section 3.2.2.

    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V). The projections of all heads live in one
    matrix, in the paper's orientation (x @ W): ``w_qkv`` is [W^Q | W^K | W^V] of shape
    (D, 3 H K), head i of W^Q in columns i K to (i + 1) K; ``w_o`` is W^O of shape (H K, D).
    (With d_v != d_k, Table 3 row B, the W^V block has H d_v columns.) Self-attention projects
    Q, K and V with one matmul; cross-attention projects K and V of the memory with one matmul.
    ``attend`` computes Eq. (1): ``attention`` unless the builder passes another.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_k: int,
        d_v: int | None = None,
        bias: bool = False,
        dropout: float = 0.0,
        attend: Attend = attention,
    ) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_k
        self.d_v = d_v = d_v if d_v is not None else d_k
        self.dropout, self.attend = dropout, attend
        self.sizes = [n_heads * d_k, n_heads * d_k, n_heads * d_v]  # columns of W^Q, W^K, W^V
        self.w_qkv = nn.Parameter(torch.empty(d_model, sum(self.sizes)))  # (D, 3 H K)
        self.w_o = nn.Parameter(torch.empty(n_heads * d_v, d_model))  # (H K, D)
        # EXTENSION: biases (3.2.2 writes the projections without them); off by default.
        self.b_qkv = nn.Parameter(torch.zeros(sum(self.sizes))) if bias else None  # (3 H K,)
        self.b_o = nn.Parameter(torch.zeros(d_model)) if bias else None  # (D,)
        with torch.no_grad():  # Xavier-uniform for each of W^Q, W^K, W^V, W^O (3.2.2 says none)
            for w in (*self.w_qkv.split(self.sizes, dim=1), self.w_o):
                nn.init.xavier_uniform_(w)

    @property
    def w_q(self) -> Tensor:  # (D, H K): W^Q of all heads, a view of w_qkv (so are w_k, w_v)
        return self.w_qkv.split(self.sizes, dim=1)[0]

    @property
    def w_k(self) -> Tensor:
        return self.w_qkv.split(self.sizes, dim=1)[1]

    @property
    def w_v(self) -> Tensor:
        return self.w_qkv.split(self.sizes, dim=1)[2]

    def _bias(self, i: int) -> Tensor | None:  # b^Q, b^K, b^V (EXTENSION), views of b_qkv
        return None if self.b_qkv is None else self.b_qkv.split(self.sizes)[i]

    b_q = property(lambda self: self._bias(0))
    b_k = property(lambda self: self._bias(1))
    b_v = property(lambda self: self._bias(2))

    def _project(self, x: Tensor, blocks: str) -> list[Tensor]:
        """x W for the blocks named ("qkv", "q" or "kv") of W = [W^Q | W^K | W^V] (+ b), in one
        matmul, split per head.

        Shapes: x (B, L, D) -> one tensor (B, H, L, K) per block named.
        """
        first, last = _BLOCKS[blocks]
        lo, hi = sum(self.sizes[:first]), sum(self.sizes[:last])
        b = None if self.b_qkv is None else self.b_qkv[lo:hi]
        y = F.linear(x, self.w_qkv[:, lo:hi].t(), b)  # (B, L, hi - lo)
        B, L, _ = x.shape
        return [  # (B, L, H K) -> (B, H, L, K) each
            t.view(B, L, self.n_heads, -1).transpose(1, 2)
            for t in y.split(self.sizes[first:last], dim=-1)
        ]

    def project_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """K = memory W^K, V = memory W^V per head, in one matmul.  Section 3.2.2.

        Shapes: (B, S, D) -> 2 x (B, H, S, K).
        """
        k, v = self._project(memory, "kv")
        return k, v

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        keep: Tensor | None = None,
        causal: bool = False,
        cache: Cache | None = None,
        record: dict[str, Tensor] | None = None,
    ) -> Tensor:
        """MultiHead(x W^Q, m W^K, m W^V) W^O, m = x (self) or the memory (cross).  Section 3.2.2.

        Args:
            x: queries' input (B, Lq, D).
            memory: keys' and values' input (B, Lk, D) for cross-attention; None for self.
            keep: boolean mask broadcastable to (B, H, Lq, Lk), True = may attend.
            causal: apply the causal mask of 3.2.3 (self-attention in the decoder).
            cache: incremental decoding (6.1). Self-attention appends this step's K and V to
                cache["k"], cache["v"]; cross-attention computes them once and reuses them.
            record: when a dict, every intermediate is stored in it (Eq. (1) written out).
        Returns:
            (B, Lq, D).
        """
        B, Lq, _ = x.shape
        if memory is None:
            q, k, v = self._project(x, "qkv")  # (B, H, Lq, K) each: one matmul for Q, K, V
            if cache is not None:
                if "k" in cache:  # the keys and values of earlier positions
                    k = torch.cat([cache["k"], k], dim=2)  # (B, H, Lk, K)
                    v = torch.cat([cache["v"], v], dim=2)  # (B, H, Lk, K)
                cache["k"], cache["v"] = k, v
        else:
            (q,) = self._project(x, "q")  # (B, H, Lq, K)
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]  # (B, H, Lk, K): computed once per source
            else:
                k, v = self.project_kv(memory)  # (B, H, Lk, K) each
                if cache is not None:
                    cache["k"], cache["v"] = k, v
        p = self.dropout if self.training else 0.0
        if record is None:
            out = self.attend(q, k, v, keep, causal, p)  # (B, H, Lq, K)
        else:
            if causal:
                keep = with_causal(keep, Lq, k.size(2), x.device)  # (B or 1, 1, Lq, Lk)
            out, weights = scaled_dot_product_attention(q, k, v, keep, p, record)
            record.update(Q=q, K=k, V=v, weights=weights, O=out)
        concat = out.transpose(1, 2).reshape(B, Lq, -1)  # (B, Lq, H K): Concat(head_1..head_h)
        result = F.linear(concat, self.w_o.t(), self.b_o)  # (B, Lq, D)
        if record is not None:
            record.update(concat=concat, M=result)
        return result
