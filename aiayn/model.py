"""The Transformer: embeddings, positions, FFN, layers, stacks.  Sections 3.1, 3.3, 3.4, 3.5.

Plain PyTorch, to be read next to the paper. Every intermediate the study note names is
available through ``trace``; the normal forward pass records nothing. The model computes four
operations through ``Ops`` (attention, the FFN, dropout, the output layer with its loss), given
by whoever builds it: ``PLAIN``, the functions of this file and ``aiayn.attention``, unless
told otherwise. Faster operations proven equal to these are applied from above, as
``torch.compile`` is: ``Transformer(cfg, ops=aiayn.kernels.FAST)``.

>>> from aiayn import ModelConfig, Transformer
>>> model = Transformer(ModelConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=1))
>>> src = torch.tensor([[5, 6, 7, 2]]); tgt_in = torch.tensor([[1, 8, 9]])
>>> model(src, tgt_in).shape
torch.Size([1, 3, 20])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from aiayn.attention import Cache, MultiHeadAttention, attention, padding_mask
from aiayn.config import ModelConfig
from aiayn.loss import label_smoothed_loss

# What a recorded pass keeps, by the study note's names: tensors, a nested record per sub-layer
# ("attn", "ffn", ...) and a list of records per stack ("encoder", "decoder").
Record = dict[str, "Tensor | Record | list[Record]"]


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


def feed_forward(
    x: Tensor,
    w_1: Tensor,
    b_1: Tensor,
    w_2: Tensor,
    b_2: Tensor,
    record: Record | None = None,
    drop: Callable[[Tensor], Tensor] | None = None,
    act: Callable[[Tensor], Tensor] = F.relu,
) -> Tensor:
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2.  Section 3.3, Eq. (2).

    ``drop`` (EXTENSION, off by default) is dropout after the ReLU; ``record`` keeps the hidden
    layer; ``act`` replaces max(0, .) (EXTENSION: F.silu for Marian, off by default).
    Shapes: x (B, L, D), w_1 (D, F), w_2 (F, D) -> (B, L, D).
    """
    hidden = act(F.linear(x, w_1.t(), b_1))  # (B, L, F)
    if record is not None:
        record["hidden"] = hidden
    if drop is not None:
        hidden = drop(hidden)  # (B, L, F)
    return F.linear(hidden, w_2.t(), b_2)  # (B, L, D)


def _dropout(x: Tensor, p: float) -> Tensor:
    """Dropout(x) = x * m / (1 - p), m_i ~ Bernoulli(1 - p).  Section 5.4 (p = 0: identity)."""
    return F.dropout(x, p) if p > 0.0 else x


def output_loss(
    z: Tensor, E: Tensor, target: Tensor, eps: float, pad_id: int, *, bias: Tensor | None = None
) -> tuple[Tensor, Tensor, int]:
    """label_smoothed_loss(Z_D E^T + b, y).  Sections 3.4 and 5.4, with the (B, T, V) logits.

    ``bias`` (EXTENSION, off by default: Marian's final_logits_bias) is added to the logits.
    """
    return label_smoothed_loss(F.linear(z, E, bias), target, eps, pad_id)


@dataclass(frozen=True)
class Ops:
    """The four operations a kernel may replace, each with the signature of its plain version.

    ``attention`` (q, k, v, keep, causal, dropout_p) as ``aiayn.attention.attention``;
    ``feed_forward`` (x, w_1, b_1, w_2, b_2, record, drop, act) as ``feed_forward``;
    ``dropout`` (x, p); ``output_loss`` (Z_D, E, target, eps, pad_id, bias=None) as
    ``output_loss`` -> (smoothed sum, NLL sum, tokens). A kernel takes every argument of the
    plain version and computes the plain formula itself for what it does not cover.
    """

    attention: Callable[..., Tensor]
    feed_forward: Callable[..., Tensor]
    dropout: Callable[[Tensor, float], Tensor]
    output_loss: Callable[..., tuple[Tensor, Tensor, int]]


PLAIN = Ops(attention, feed_forward, _dropout, output_loss)  # standard PyTorch ops only


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2.  Section 3.3, Eq. (2).

    Weights in the paper's orientation: w_1 (D, F), w_2 (F, D); separate per layer.
    """

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, ops: Ops = PLAIN, act: str = "relu"
    ) -> None:
        super().__init__()
        self.w_1 = nn.Parameter(torch.empty(d_model, d_ff))  # (D, F)
        self.b_1 = nn.Parameter(torch.zeros(d_ff))  # (F,)
        self.w_2 = nn.Parameter(torch.empty(d_ff, d_model))  # (F, D)
        self.b_2 = nn.Parameter(torch.zeros(d_model))  # (D,)
        self.dropout, self.ops = dropout, ops
        # EXTENSION: swish, x sigmoid(x), in place of the ReLU (Marian's FFN); off by default.
        self.act = F.silu if act == "silu" else F.relu
        nn.init.xavier_uniform_(self.w_1)
        nn.init.xavier_uniform_(self.w_2)

    def forward(self, x: Tensor, record: Record | None = None) -> Tensor:
        """Shapes: (B, L, D) -> (B, L, D)."""
        weights = (self.w_1, self.b_1, self.w_2, self.b_2)
        p = self.dropout if self.training else 0.0
        # EXTENSION: dropout after the ReLU (tensor2tensor's relu_dropout); off by default.
        drop = (lambda h: self.ops.dropout(h, p)) if p > 0.0 else None
        return self.ops.feed_forward(x, *weights, record, drop, self.act)  # (B, L, D)


def _attention(cfg: ModelConfig, ops: Ops) -> MultiHeadAttention:
    return MultiHeadAttention(
        cfg.d_model,
        cfg.n_heads,
        cfg.d_k,
        cfg.d_v,
        bias=cfg.attn_bias,
        dropout=cfg.attn_dropout,
        attend=ops.attention,
    )


def _layer_records(
    record: Record | None, key: str, x: Tensor, stack: str, n: int
) -> list[Record | None]:
    """record[key] = x and one fresh dict per layer in record[stack] (or Nones: no record)."""
    if record is None:
        return [None] * n
    layers: list[Record] = [{} for _ in range(n)]
    record[key], record[stack] = x, layers
    return list(layers)


def _sub(record: Record | None, key: str) -> Record | None:
    """A fresh dict for a sub-layer's record, stored under key (or None when not recording)."""
    if record is None:
        return None
    sub: Record = {}
    record[key] = sub
    return sub


class EncoderLayer(nn.Module):
    """H = LayerNorm(X + Dropout(MultiHead(X, X, X))); Z = LayerNorm(H + Dropout(FFN(H))).

    Section 3.1 (post-LN, "LayerNorm(x + Sublayer(x))") with dropout from 5.4. With
    ``norm_first`` (DEVIATION(3.1)): X + Dropout(Sublayer(LayerNorm(X))).
    """

    def __init__(self, cfg: ModelConfig, ops: Ops = PLAIN) -> None:
        super().__init__()
        self.self_attn = _attention(cfg, ops)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.ffn_dropout, ops, cfg.activation)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout, self.norm_first, self.ops = cfg.dropout, cfg.norm_first, ops

    def forward(self, x: Tensor, keep: Tensor | None, record: Record | None = None) -> Tensor:
        """Shapes: x (B, S, D), keep (B, 1, 1, S) -> (B, S, D)."""
        p = self.dropout if self.training else 0.0
        drop = self.ops.dropout
        if self.norm_first:
            m = self.self_attn(self.norm1(x), keep=keep, record=_sub(record, "attn"))  # (B, S, D)
            x = x + drop(m, p)  # (B, S, D)
            return x + drop(self.ffn(self.norm2(x)), p)  # (B, S, D)
        m = self.self_attn(x, keep=keep, record=_sub(record, "attn"))  # (B, S, D): M_E
        r = x + drop(m, p)  # (B, S, D): R_E
        h = self.norm1(r)  # (B, S, D): H_E
        f = self.ffn(h, record=_sub(record, "ffn"))  # (B, S, D): F_E
        z = self.norm2(h + drop(f, p))  # (B, S, D): Z_E
        if record is not None:
            record.update(X=x, M_E=m, R_E=r, H_E=h, F_E=f, Z_E=z)
        return z


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, FFN, each in LayerNorm(x + Dropout(.)).

    Section 3.1 and 3.2.3: queries of the cross-attention come from the decoder, keys and
    values from the encoder's output (the memory). ``norm_first`` as in ``EncoderLayer``.
    """

    def __init__(self, cfg: ModelConfig, ops: Ops = PLAIN) -> None:
        super().__init__()
        self.self_attn = _attention(cfg, ops)
        self.cross_attn = _attention(cfg, ops)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.ffn_dropout, ops, cfg.activation)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.norm3 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout, self.norm_first, self.ops = cfg.dropout, cfg.norm_first, ops

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        src_keep: Tensor | None,
        cache: dict[str, Cache] | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """Shapes: y (B, T, D), memory (B, S, D), src_keep (B, 1, 1, S) -> (B, T, D)."""
        p = self.dropout if self.training else 0.0
        drop = self.ops.dropout
        c_self, c_cross = (cache["self"], cache["cross"]) if cache is not None else (None, None)
        if self.norm_first:
            rec = _sub(record, "self_attn")
            y = y + drop(self.self_attn(self.norm1(y), causal=True, cache=c_self, record=rec), p)
            rec = _sub(record, "cross_attn")
            m = self.cross_attn(self.norm2(y), memory, src_keep, cache=c_cross, record=rec)
            y = y + drop(m, p)  # (B, T, D)
            return y + drop(self.ffn(self.norm3(y)), p)  # (B, T, D)
        rec = _sub(record, "self_attn")
        m_self = self.self_attn(y, causal=True, cache=c_self, record=rec)  # (B, T, D)
        r_self = y + drop(m_self, p)  # (B, T, D)
        h = self.norm1(r_self)  # (B, T, D): H_D
        rec = _sub(record, "cross_attn")
        m_cross = self.cross_attn(h, memory, src_keep, cache=c_cross, record=rec)  # (B, T, D)
        r_cross = h + drop(m_cross, p)  # (B, T, D)
        h_cross = self.norm2(r_cross)  # (B, T, D)
        f = self.ffn(h_cross, record=_sub(record, "ffn"))  # (B, T, D): F_D
        z = self.norm3(h_cross + drop(f, p))  # (B, T, D): Z_D
        if record is not None:
            record.update(X=y, M_D_self=m_self, R_D_self=r_self, H_D=h, M_D_cross=m_cross)
            record.update(R_D_cross=r_cross, H_D_cross=h_cross, F_D=f, Z_D=z)
        return z


@dataclass
class DecoderState:
    """What incremental decoding carries from one step to the next.  Section 6.1.

    ``memory`` (B, S, D) and ``src_keep`` (B, 1, 1, S) come from the encoder; ``layers`` holds,
    per decoder layer, the self-attention cache (K and V of every position so far, growing by
    one position a step) and the cross-attention cache (K and V of the memory, computed once).
    ``memory`` is None where the cross-attention caches are given instead (an exported encoder).
    """

    memory: Tensor | None
    src_keep: Tensor
    layers: list[dict[str, Cache]] = field(default_factory=list)
    length: int | Tensor = 0  # target positions decoded so far (a tensor in a traced graph)

    def reorder(self, index: Tensor, same_sentences: bool = False) -> None:
        """Keep rows ``index`` (B',) of every cached tensor, in that order (beam search).

        With ``same_sentences`` (every row still belongs to the sentence it belonged to), only
        the self-attention caches change: the memory, its mask and the cross-attention caches
        depend on the sentence alone.
        """
        if not same_sentences:
            if self.memory is not None:
                self.memory = self.memory.index_select(0, index)  # (B', S, D)
            self.src_keep = self.src_keep.index_select(0, index)  # (B', 1, 1, S)
        for layer in self.layers:
            for name, cache in layer.items():
                if name == "self" or not same_sentences:
                    for key, value in cache.items():
                        cache[key] = value.index_select(0, index)  # (B', H, t or S, K)


class Transformer(nn.Module):
    """The encoder-decoder Transformer.  Section 3, Figure 1.

    One embedding matrix E (V, D) is shared by the source embedding, the target embedding and
    the pre-softmax linear layer (3.4): the embeddings are E[ids] * sqrt(d_model) and the
    logits are Z_D E^T. Positions are added at the bottom of both stacks (3.5); neither stack
    ends with an extra LayerNorm (post-LN, 3.1).

    ``ops`` are the four operations the layers compute with (``PLAIN``: the formulas of this
    file); they are how to run, not what to compute, so no checkpoint stores them.

    Shapes: src (B, S) and tgt_in (B, T) token ids, padded with ``config.pad_id`` on the right
    -> logits (B, T, V).
    """

    def __init__(self, config: ModelConfig, ops: Ops = PLAIN) -> None:
        super().__init__()
        self.config = cfg = config
        self.embedding = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))  # (V, D): E
        nn.init.normal_(self.embedding, std=cfg.d_model**-0.5)
        if cfg.positions == "learned":
            # Table 3 row E: learned positional embedding (an option; sinusoids are the default).
            self.learned_positions = nn.Parameter(torch.empty(cfg.max_positions, cfg.d_model))
            nn.init.normal_(self.learned_positions, std=cfg.d_model**-0.5)
        if cfg.logits_bias:
            # EXTENSION: a bias on the logits (Marian's final_logits_bias); off by default.
            self.logits_bias = nn.Parameter(torch.zeros(cfg.vocab_size))  # (V,)
        self.encoder = nn.ModuleList(EncoderLayer(cfg, ops) for _ in range(cfg.n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg, ops) for _ in range(cfg.decoder_layers))
        self.ops = ops
        if cfg.norm_first:
            # DEVIATION(3.1): pre-LN needs a final LayerNorm on each stack.
            self.encoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
            self.decoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self._pe = torch.empty(0)

    @property
    def ops(self) -> Ops:
        """The operations the model computes with, held here and handed to every layer whenever
        set, so that no layer keeps another set (``model.ops = PLAIN`` switches them all)."""
        return self._ops

    @ops.setter
    def ops(self, ops: Ops) -> None:
        self._ops = ops
        for module in self.modules():
            if isinstance(module, EncoderLayer | DecoderLayer | FeedForward):
                module.ops = ops
            elif isinstance(module, MultiHeadAttention):
                module.attend = ops.attention

    def positions(self, length: int, offset: int | Tensor = 0) -> Tensor:
        """The positional encodings of positions offset .. offset + length - 1.  Section 3.5.

        The rows are gathered by index, so that a traced graph (ONNX) takes the offset as a
        tensor input; a tensor offset reads the sinusoid table as grown so far.
        Shapes: -> (length, D).
        """
        cfg = self.config
        emb = self.embedding
        rows = offset + torch.arange(length, device=emb.device)  # (length,)
        if cfg.positions == "learned":
            if isinstance(offset, int) and offset + length > cfg.max_positions:
                raise ValueError(
                    f"position {offset + length - 1} is beyond max_positions={cfg.max_positions} "
                    "of the learned positional embedding"
                )
            return self.learned_positions.index_select(0, rows)  # (length, D)
        pe = self._pe
        grow = isinstance(offset, int) and pe.size(0) < offset + length
        if grow or pe.device != emb.device or pe.dtype != emb.dtype:
            size = max(2 * (offset + length), 256) if isinstance(offset, int) else pe.size(0)
            concat = cfg.positions == "sinusoidal-concat"
            pe = sinusoidal_positions(size, cfg.d_model, 0, concat, emb.device, emb.dtype)
            self._pe = pe  # (P, D): a cache, grown on demand; not part of the state dict
        return pe.index_select(0, rows)  # (length, D)

    def embed(self, ids: Tensor, offset: int | Tensor = 0) -> Tensor:
        """X = Dropout(E[ids] * sqrt(d_model) + PE).  Sections 3.4, 3.5, 5.4.

        Shapes: ids (B, L) -> (B, L, D).
        """
        x = F.embedding(ids, self.embedding) * math.sqrt(self.config.d_model)  # (B, L, D)
        x = x + self.positions(ids.size(1), offset)  # (B, L, D)
        return self.ops.dropout(x, self.config.dropout if self.training else 0.0)  # (B, L, D)

    def encode(self, src: Tensor, record: Record | None = None) -> tuple[Tensor, Tensor]:
        """Z_E = Encoder(X_E).  Section 3.1.

        Shapes: src (B, S) -> memory (B, S, D) and src_keep (B, 1, 1, S).
        """
        src_keep = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        x = self.embed(src)  # (B, S, D): X_E
        records = _layer_records(record, "X_E", x, "encoder", len(self.encoder))
        for layer, rec in zip(self.encoder, records, strict=True):
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
        if self.config.decoder_start == "pad" and offset == 0:
            # EXTENSION: Marian starts decoding with PAD: position 0 (BOS) reads PAD's row.
            tgt_in = F.pad(tgt_in[:, 1:], (1, 0), value=self.config.pad_id)  # (B, T)
        y = self.embed(tgt_in, offset)  # (B, T, D): X_D
        records = _layer_records(record, "X_D", y, "decoder", len(self.decoder))
        caches = state.layers if state is not None else [None] * len(self.decoder)
        for layer, rec, cache in zip(self.decoder, records, caches, strict=True):
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
        if self.config.logits_bias:
            return F.linear(z, self.embedding, self.logits_bias)  # (B, T, V): EXTENSION, + b
        return F.linear(z, self.embedding)  # (B, T, V)

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        target: Tensor | None = None,
        label_smoothing: float = 0.0,
    ) -> Tensor | tuple[Tensor, Tensor, int]:
        """logits = Decoder(tgt_in, Encoder(src)) E^T.  Section 3.

        With ``target`` (B, T), returns instead the label-smoothed loss of section 5.4 as
        (smoothed sum, NLL sum, non-pad target tokens): ``ops.output_loss``, which is
        ``label_smoothed_loss`` of the logits Z_D E^T in ``PLAIN``.

        Shapes: src (B, S), tgt_in (B, T) -> (B, T, V).
        """
        memory, src_keep = self.encode(src)  # (B, S, D)
        z = self.decode(tgt_in, memory, src_keep)  # (B, T, D)
        if target is None:
            return self.logits(z)  # (B, T, V)
        bias = self.logits_bias if self.config.logits_bias else None  # EXTENSION, off by default
        pad = self.config.pad_id
        return self.ops.output_loss(z, self.embedding, target, label_smoothing, pad, bias=bias)

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
    enc: Record = {}
    dec: Record = {}
    memory, src_keep = model.encode(src, record=enc)  # (B, S, D)
    z = model.decode(tgt_in, memory, src_keep, record=dec)  # (B, T, D)
    logits = model.logits(z)  # (B, T, V)
    (X_E, encoder), (X_D, decoder) = _stack(enc, "X_E", "encoder"), _stack(dec, "X_D", "decoder")
    return Trace(X_E, encoder, memory, X_D, decoder, z, logits, logits.softmax(dim=-1))


def _stack(record: Record, key: str, stack: str) -> tuple[Tensor, list[Record]]:
    """(the stack's input, its layers' records) from the record of encode or decode."""
    x, layers = record[key], record[stack]
    if not isinstance(x, Tensor) or not isinstance(layers, list):
        raise TypeError(f"not the record of a stack: {key} and {stack} missing")
    return x, layers
