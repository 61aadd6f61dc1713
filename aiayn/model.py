"""The Transformer: embeddings, positions, FFN, layers, stacks.  Sections 3.1, 3.3, 3.4, 3.5.

Every intermediate the study note names is available through ``trace``; the normal forward
pass records nothing and uses the fast attention kernels (``aiayn.attention.attention``).

>>> from aiayn import ModelConfig, Transformer
>>> model = Transformer(ModelConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=1))
>>> src = torch.tensor([[5, 6, 7, 2]]); tgt_in = torch.tensor([[1, 8, 9]])
>>> model(src, tgt_in).shape
torch.Size([1, 3, 20])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from aiayn.attention import Cache, MultiHeadAttention, padding_mask
from aiayn.config import ModelConfig
from aiayn.dropout import dropout
from aiayn.output_loss import tied_output_loss

Record = dict[str, Tensor]


def sinusoidal_positions(
    length: int,
    d_model: int,
    offset: int = 0,
    concat: bool = False,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Section 3.5. Interleaved by parity as the paper writes it, for positions offset .. offset +
    length - 1 (any length: nothing is tabulated). With ``concat`` (DEVIATION(3.5), the
    tensor2tensor layout) the result is [sin | cos] with frequencies 10000^(-i / (d/2 - 1)).

    >>> pe = sinusoidal_positions(2, 4)
    >>> [round(x, 6) for x in pe[1].tolist()]
    [0.841471, 0.540302, 0.01, 0.99995]

    Shapes: -> (length, d_model).
    """
    half = d_model // 2
    pos = torch.arange(offset, offset + length, device=device, dtype=torch.float64)  # (L,)
    i = torch.arange(half, device=device, dtype=torch.float64)  # (D/2,)
    if concat:
        inv_freq = torch.exp(-math.log(10000.0) * i / max(half - 1, 1))  # (D/2,)
    else:
        inv_freq = torch.exp(-math.log(10000.0) * 2 * i / d_model)  # (D/2,): 1 / 10000^(2i/d)
    angle = pos[:, None] * inv_freq[None, :]  # (L, D/2)
    if concat:
        pe = torch.cat([angle.sin(), angle.cos()], dim=-1)  # (L, D)
    else:
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)  # (L, D): sin, cos, ...
    return pe.to(dtype)


class _FeedForwardFn(torch.autograd.Function):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 with its backward pass written out.  Section 3.3.

    With u = x W_1 + b_1, h = max(0, u), y = h W_2 + b_2 and g = dL/dy (rows are positions):
    dL/dW_2 = h^T g, dL/db_2 = sum_rows g, dL/dh = g W_2^T, dL/du = dL/dh * [h > 0],
    dL/dW_1 = x^T dL/du, dL/db_1 = sum_rows dL/du, dL/dx = dL/du W_1^T. The same matmuls as
    autograd's, with two fresh (N, F) blocks fewer: the ReLU and its gate in the backward pass
    work in place. A test proves the gradients equal to autograd's. Used by ``FeedForward`` in
    the normal pass (no record, no FFN dropout, no autocast); not twice differentiable.

    Shapes: x (N, D), w_1 (D, F), b_1 (F,), w_2 (F, D), b_2 (D,) -> (N, D).
    """

    @staticmethod
    def forward(ctx, x, w_1, b_1, w_2, b_2):  # type: ignore[override]
        h = torch.addmm(b_1, x, w_1).relu_()  # (N, F): max(0, x W_1 + b_1), in place
        ctx.save_for_backward(x, w_1, w_2, h)
        return torch.addmm(b_2, h, w_2)  # (N, D)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # type: ignore[override]
        x, w_1, w_2, h = ctx.saved_tensors
        g = g.contiguous()  # (N, D)
        grad_u = g @ w_2.t()  # (N, F): dL/dh
        _relu_gate_(grad_u, h)  # dL/du = dL/dh * [h > 0], in place
        grad_x = grad_u @ w_1.t()  # (N, D)
        return grad_x, x.t() @ grad_u, grad_u.sum(0), h.t() @ g, g.sum(0)


def _relu_gate_(grad: Tensor, h: Tensor) -> Tensor:
    """grad *= [h > 0] in place (ReLU's backward; masked_fill_ is 7 times slower on the CPU)."""
    return torch.ops.aten.threshold_backward.grad_input(grad, h, 0.0, grad_input=grad)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2.  Section 3.3, Eq. (2).

    Weights in the paper's orientation: w_1 (D, F), w_2 (F, D); separate per layer.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.w_1 = nn.Parameter(torch.empty(d_model, d_ff))  # (D, F)
        self.b_1 = nn.Parameter(torch.zeros(d_ff))  # (F,)
        self.w_2 = nn.Parameter(torch.empty(d_ff, d_model))  # (F, D)
        self.b_2 = nn.Parameter(torch.zeros(d_model))  # (D,)
        self.dropout = dropout
        nn.init.xavier_uniform_(self.w_1)
        nn.init.xavier_uniform_(self.w_2)

    def forward(self, x: Tensor, record: Record | None = None) -> Tensor:
        """Shapes: (B, L, D) -> (B, L, D)."""
        plain = record is not None or (self.training and self.dropout > 0.0)
        if not plain and not torch.is_autocast_enabled(x.device.type):
            x2 = x.reshape(-1, x.size(-1))  # (B L, D)
            y = _FeedForwardFn.apply(x2, self.w_1, self.b_1, self.w_2, self.b_2)  # (B L, D)
            return y.view(x.shape)  # (B, L, D)
        hidden = F.relu(F.linear(x, self.w_1.t(), self.b_1))  # (B, L, F)
        if record is not None:
            record["hidden"] = hidden
        # EXTENSION: dropout after the ReLU (tensor2tensor's relu_dropout); off by default.
        hidden = dropout(hidden, self.dropout, self.training)
        return F.linear(hidden, self.w_2.t(), self.b_2)  # (B, L, D)


def _attention(cfg: ModelConfig) -> MultiHeadAttention:
    return MultiHeadAttention(
        cfg.d_model,
        cfg.n_heads,
        cfg.head_dim,
        cfg.value_dim,
        bias=cfg.attn_bias,
        dropout=cfg.attn_dropout,
        fused=cfg.fused_attention,
    )


def _sub(record: Record | None, key: str) -> Record | None:
    """A fresh dict for a sub-layer's record, stored under key (or None when not recording)."""
    if record is None:
        return None
    record[key] = {}  # type: ignore[assignment]
    return record[key]  # type: ignore[return-value]


class EncoderLayer(nn.Module):
    """H = LayerNorm(X + Dropout(MultiHead(X, X, X))); Z = LayerNorm(H + Dropout(FFN(H))).

    Section 3.1 (post-LN, "LayerNorm(x + Sublayer(x))") with dropout from 5.4. With
    ``norm_first`` (DEVIATION(3.1)): X + Dropout(Sublayer(LayerNorm(X))).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = _attention(cfg)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.ffn_dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout, self.norm_first = cfg.dropout, cfg.norm_first

    def forward(self, x: Tensor, keep: Tensor | None, record: Record | None = None) -> Tensor:
        """Shapes: x (B, S, D), keep (B, 1, 1, S) -> (B, S, D)."""
        drop = self.dropout if self.training else 0.0
        attn = _sub(record, "attn")
        if self.norm_first:
            x = x + dropout(self.self_attn(self.norm1(x), keep=keep, record=attn), drop)
            return x + dropout(self.ffn(self.norm2(x)), drop)  # (B, S, D)
        m = self.self_attn(x, keep=keep, record=attn)  # (B, S, D): M_E
        r = x + dropout(m, drop)  # (B, S, D): R_E
        h = self.norm1(r)  # (B, S, D): H_E
        ffn = _sub(record, "ffn")
        f = self.ffn(h, record=ffn)  # (B, S, D): F_E
        z = self.norm2(h + dropout(f, drop))  # (B, S, D): Z_E
        if record is not None:
            record.update(X=x, M_E=m, R_E=r, H_E=h, F_E=f, Z_E=z)
        return z


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, FFN, each in LayerNorm(x + Dropout(.)).

    Section 3.1 and 3.2.3: queries of the cross-attention come from the decoder, keys and
    values from the encoder's output (the memory).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = _attention(cfg)
        self.cross_attn = _attention(cfg)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.ffn_dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm3 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout, self.norm_first = cfg.dropout, cfg.norm_first

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        src_keep: Tensor | None,
        cache: dict[str, Cache] | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """Shapes: y (B, T, D), memory (B, S, D), src_keep (B, 1, 1, S) -> (B, T, D)."""
        drop = self.dropout if self.training else 0.0
        c_self = cache["self"] if cache is not None else None
        c_cross = cache["cross"] if cache is not None else None
        rec_self, rec_cross = _sub(record, "self_attn"), _sub(record, "cross_attn")
        if self.norm_first:
            y = y + dropout(
                self.self_attn(self.norm1(y), causal=True, cache=c_self, record=rec_self), drop
            )
            y = y + dropout(
                self.cross_attn(self.norm2(y), memory, src_keep, cache=c_cross, record=rec_cross),
                drop,
            )
            return y + dropout(self.ffn(self.norm3(y)), drop)  # (B, T, D)
        m_self = self.self_attn(y, causal=True, cache=c_self, record=rec_self)  # (B, T, D)
        r_self = y + dropout(m_self, drop)  # (B, T, D)
        h = self.norm1(r_self)  # (B, T, D): H_D
        m_cross = self.cross_attn(h, memory, src_keep, cache=c_cross, record=rec_cross)
        r_cross = h + dropout(m_cross, drop)  # (B, T, D)
        h_cross = self.norm2(r_cross)  # (B, T, D)
        ffn = _sub(record, "ffn")
        f = self.ffn(h_cross, record=ffn)  # (B, T, D): F_D
        z = self.norm3(h_cross + dropout(f, drop))  # (B, T, D): Z_D
        if record is not None:
            record.update(
                X=y,
                M_D_self=m_self,
                R_D_self=r_self,
                H_D=h,
                M_D_cross=m_cross,
                R_D_cross=r_cross,
                H_D_cross=h_cross,
                F_D=f,
                Z_D=z,
            )
        return z


@dataclass
class DecoderState:
    """What incremental decoding carries from one step to the next.  Section 6.1.

    ``memory`` (B, S, D) and ``src_keep`` (B, 1, 1, S) come from the encoder; ``layers`` holds,
    per decoder layer, the self-attention cache (K and V of every position so far, growing by
    one position a step) and the cross-attention cache (K and V of the memory, computed once).
    """

    memory: Tensor
    src_keep: Tensor
    layers: list[dict[str, Cache]] = field(default_factory=list)
    length: int = 0  # target positions decoded so far

    def reorder(self, index: Tensor) -> None:
        """Keep rows ``index`` (B',) of every cached tensor, in that order (beam search)."""
        self.memory = self.memory.index_select(0, index)
        self.src_keep = self.src_keep.index_select(0, index)
        for layer in self.layers:
            for cache in layer.values():
                for key, value in cache.items():
                    cache[key] = value.index_select(0, index)


class Transformer(nn.Module):
    """The encoder-decoder Transformer.  Section 3, Figure 1.

    One embedding matrix E (V, D) is shared by the source embedding, the target embedding and
    the pre-softmax linear layer (3.4): the embeddings are E[ids] * sqrt(d_model) and the
    logits are Z_D E^T. Positions are added at the bottom of both stacks (3.5); neither stack
    ends with an extra LayerNorm (post-LN, 3.1).

    Shapes: src (B, S) and tgt_in (B, T) token ids, padded with ``config.pad_id`` on the right
    -> logits (B, T, V).
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = cfg = config
        self.embedding = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))  # (V, D): E
        nn.init.normal_(self.embedding, std=cfg.d_model**-0.5)
        if cfg.positions == "learned":
            # Table 3 row E: learned positional embedding (an option; sinusoids are the default).
            self.learned_positions = nn.Parameter(torch.empty(cfg.max_positions, cfg.d_model))
            nn.init.normal_(self.learned_positions, std=cfg.d_model**-0.5)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        if cfg.norm_first:
            # DEVIATION(3.1): pre-LN needs a final LayerNorm on each stack.
            self.encoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
            self.decoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self._pe = torch.empty(0)

    def positions(self, length: int, offset: int = 0) -> Tensor:
        """The positional encodings of positions offset .. offset + length - 1.  Section 3.5.

        Shapes: -> (length, D).
        """
        cfg = self.config
        if cfg.positions == "learned":
            if offset + length > cfg.max_positions:
                raise ValueError(
                    f"position {offset + length - 1} is beyond max_positions={cfg.max_positions} "
                    "of the learned positional embedding"
                )
            return self.learned_positions[offset : offset + length]  # (length, D)
        emb = self.embedding
        pe = self._pe
        if pe.size(0) < offset + length or pe.device != emb.device or pe.dtype != emb.dtype:
            size = max(2 * (offset + length), 256)
            concat = cfg.positions == "sinusoidal-concat"
            pe = sinusoidal_positions(size, cfg.d_model, 0, concat, emb.device, emb.dtype)
            self._pe = pe  # (P, D): a cache, grown on demand; not part of the state dict
        return pe[offset : offset + length]  # (length, D)

    def embed(self, ids: Tensor, offset: int = 0) -> Tensor:
        """X = Dropout(E[ids] * sqrt(d_model) + PE).  Sections 3.4, 3.5, 5.4.

        Shapes: ids (B, L) -> (B, L, D).
        """
        x = F.embedding(ids, self.embedding) * math.sqrt(self.config.d_model)  # (B, L, D)
        x = x + self.positions(ids.size(1), offset)  # (B, L, D)
        return dropout(x, self.config.dropout, self.training)

    def encode(self, src: Tensor, record: Record | None = None) -> tuple[Tensor, Tensor]:
        """Z_E = Encoder(X_E).  Section 3.1.

        Shapes: src (B, S) -> memory (B, S, D) and src_keep (B, 1, 1, S).
        """
        src_keep = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        x = self.embed(src)  # (B, S, D): X_E
        if record is not None:
            record["X_E"] = x
            record["encoder"] = []  # type: ignore[assignment]
        for layer in self.encoder:
            rec: Record | None = None
            if record is not None:
                rec = {}
                record["encoder"].append(rec)  # type: ignore[attr-defined]
            x = layer(x, src_keep, record=rec)  # (B, S, D)
        if self.config.norm_first:
            x = self.encoder_norm(x)
        return x, src_keep

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_keep: Tensor | None,
        state: DecoderState | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """Z_D = Decoder(X_D, Z_E).  Section 3.1.

        With ``state``, tgt_in holds only the new positions and the caches are extended.
        Shapes: tgt_in (B, T), memory (B, S, D) -> Z_D (B, T, D).
        """
        offset = state.length if state is not None else 0
        y = self.embed(tgt_in, offset)  # (B, T, D): X_D
        if record is not None:
            record["X_D"] = y
            record["decoder"] = []  # type: ignore[assignment]
        for i, layer in enumerate(self.decoder):
            rec: Record | None = None
            if record is not None:
                rec = {}
                record["decoder"].append(rec)  # type: ignore[attr-defined]
            cache = state.layers[i] if state is not None else None
            y = layer(y, memory, src_keep, cache=cache, record=rec)  # (B, T, D)
        if state is not None:
            state.length += tgt_in.size(1)
        if self.config.norm_first:
            y = self.decoder_norm(y)
        return y

    def logits(self, z: Tensor) -> Tensor:
        """L = Z_D E^T.  Section 3.4: the pre-softmax linear layer shares E (unscaled).

        Shapes: (B, T, D) -> (B, T, V).
        """
        return F.linear(z, self.embedding)  # (B, T, V)

    @overload
    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor: ...

    @overload
    def forward(
        self, src: Tensor, tgt_in: Tensor, target: Tensor, label_smoothing: float = 0.0
    ) -> tuple[Tensor, Tensor, int]: ...

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        target: Tensor | None = None,
        label_smoothing: float = 0.0,
    ) -> Tensor | tuple[Tensor, Tensor, int]:
        """logits = Decoder(tgt_in, Encoder(src)) E^T.  Section 3.

        With ``target`` (B, T), returns instead the label-smoothed loss of section 5.4 as
        (smoothed sum, NLL sum, non-pad target tokens), computed with the output layer in
        chunks (``aiayn.output_loss``) so that the (B, T, V) logits never exist at once.

        Shapes: src (B, S), tgt_in (B, T) -> (B, T, V).
        """
        memory, src_keep = self.encode(src)  # (B, S, D)
        z = self.decode(tgt_in, memory, src_keep)  # (B, T, D)
        if target is None:
            return self.logits(z)  # (B, T, V)
        return tied_output_loss(z, self.embedding, target, label_smoothing, self.config.pad_id)

    # Incremental decoding (section 6.1) -------------------------------------------------

    def start(self, src: Tensor) -> DecoderState:
        """Encode the source once and return an empty decoder state.  Shapes: src (B, S)."""
        memory, src_keep = self.encode(src)  # (B, S, D), (B, 1, 1, S)
        layers: list[dict[str, Cache]] = [{"self": {}, "cross": {}} for _ in self.decoder]
        return DecoderState(memory, src_keep, layers)

    def step(self, tokens: Tensor, state: DecoderState) -> Tensor:
        """Logits of the next position after ``tokens``, using and extending the cache.

        Shapes: tokens (B, t) (the new positions only, usually t = 1) -> logits (B, t, V).
        """
        z = self.decode(tokens, state.memory, state.src_keep, state=state)  # (B, t, D)
        return self.logits(z)  # (B, t, V)

    def num_parameters(self) -> int:
        """The number of distinct parameters (the tied matrix counted once)."""
        return sum(p.numel() for p in self.parameters())


@dataclass
class Trace:
    """Every intermediate of one forward pass, by the study note's names.  See docs/trace.md.

    ``encoder[l]`` and ``decoder[l]`` hold layer l's quantities; the attention sub-layers are
    nested dicts (``encoder[l]["attn"]["Q"]``, ``decoder[l]["cross_attn"]["weights"]``).
    """

    X_E: Tensor  # (B, S, D): step 1
    encoder: list[Record]
    Z_E: Tensor  # (B, S, D): the encoder's output (memory)
    X_D: Tensor  # (B, T, D): step 6
    decoder: list[Record]
    Z_D: Tensor  # (B, T, D): step 12
    L: Tensor  # (B, T, V): step 13, the logits
    P: Tensor  # (B, T, V): step 14, the softmax


def trace(model: Transformer, src: Tensor, tgt_in: Tensor) -> Trace:
    """Run Transformer(src, tgt_in) through the explicit path and keep every intermediate.

    Sections 3.1-3.5; the note's steps 1-14. Uses the model's current mode (call
    ``model.eval()`` first for results free of dropout). The normal forward records nothing.

    Shapes: src (B, S), tgt_in (B, T).
    """
    record: Record = {}
    memory, src_keep = model.encode(src, record=record)  # (B, S, D)
    z = model.decode(tgt_in, memory, src_keep, record=record)  # (B, T, D)
    logits = model.logits(z)  # (B, T, V)
    return Trace(
        X_E=record["X_E"],
        encoder=record["encoder"],  # type: ignore[arg-type]
        Z_E=memory,
        X_D=record["X_D"],
        decoder=record["decoder"],  # type: ignore[arg-type]
        Z_D=z,
        L=logits,
        P=logits.softmax(dim=-1),
    )
