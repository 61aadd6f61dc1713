"""Two baselines of the same architecture, written for the benchmark only.

- ``TorchTransformerBaseline``: ``torch.nn.Transformer`` (post-LN, batch-first) with the shared
  embedding scaled by sqrt(d_model), sinusoidal positions and the tied output layer added
  around it. It keeps nn.Transformer's own choices of structure: biases everywhere and a final
  LayerNorm on each stack.
- ``TextbookTransformer``: the way the model is usually first written: separate Q, K, V, O
  linear layers, per-head view and transpose, an explicit softmax of Q K^T / sqrt(d_k) with a
  filled mask, masks built for every layer, a tabulated positional encoding and a loss against
  an explicit label-smoothed target matrix. No fused kernels.

Equal work: by default both put dropout where the config puts it, as aiayn does: P_drop on the
embeddings and on every sub-layer's output before the residual sum (5.4), and on the attention
probabilities and after the FFN's ReLU only with ``attn_dropout`` / ``ffn_dropout`` (0, as in
the paper, unless set), so no baseline draws masks that aiayn does not compute.
``TorchTransformerBaseline(cfg, as_users_write_it=True)`` is nn.Transformer as most code
builds it, ``nn.Transformer(dropout=p)``: dropout p in all four places.

Both take aiayn's ModelConfig, token ids (B, S) and (B, T) padded with ``pad_id``, and return
logits (B, T, V), so the benchmark feeds every model the same batches.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from aiayn.config import ModelConfig
from aiayn.model import sinusoidal_positions


def _dropout(p: float) -> nn.Module:
    """nn.Dropout(p), or nothing at all for p = 0 (no mask drawn, no copy made)."""
    return nn.Dropout(p) if p > 0 else nn.Identity()


class TorchTransformerBaseline(nn.Module):
    """Embeddings * sqrt(d) + PE -> nn.Transformer -> Z E^T.  Section 3 on PyTorch's modules."""

    def __init__(self, cfg: ModelConfig, as_users_write_it: bool = False) -> None:
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Parameter(torch.randn(cfg.vocab_size, cfg.d_model) * cfg.d_model**-0.5)
        self.core = nn.Transformer(
            d_model=cfg.d_model,
            nhead=cfg.n_heads,
            num_encoder_layers=cfg.n_layers,
            num_decoder_layers=cfg.decoder_layers,
            dim_feedforward=cfg.d_ff,
            dropout=cfg.dropout,
            batch_first=True,
            norm_first=False,
        )
        if not as_users_write_it:  # dropout where aiayn has it: residual (dropout1-3) only
            layers = [*self.core.encoder.layers, *self.core.decoder.layers]
            for layer in layers:
                layer.dropout = _dropout(cfg.ffn_dropout)  # after the ReLU
                for attn in (layer.self_attn, getattr(layer, "multihead_attn", None)):
                    if attn is not None:
                        attn.dropout = cfg.attn_dropout  # on the attention probabilities

    def embed(self, ids: Tensor) -> Tensor:
        x = F.embedding(ids, self.embedding) * math.sqrt(self.cfg.d_model)  # (B, L, D)
        pe = sinusoidal_positions(ids.size(1), self.cfg.d_model, device=ids.device)  # (L, D)
        return F.dropout(x + pe, self.cfg.dropout, self.training)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        pad = self.cfg.pad_id
        T = tgt_in.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=src.device)  # (T, T)
        z = self.core(
            self.embed(src),
            self.embed(tgt_in),
            tgt_mask=causal,
            src_key_padding_mask=src == pad,  # nn's polarity: True = blocked
            memory_key_padding_mask=src == pad,
            tgt_is_causal=True,
        )  # (B, T, D)
        return F.linear(z, self.embedding)  # (B, T, V)

    def loss(self, logits: Tensor, target: Tensor, eps: float) -> Tensor:
        """Label-smoothed cross-entropy as most PyTorch code writes it."""
        return F.cross_entropy(
            logits.flatten(0, 1),
            target.flatten(),
            ignore_index=self.cfg.pad_id,
            label_smoothing=eps,
            reduction="sum",
        )


class TextbookAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_k)) V per head, with an explicit filled mask."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.h, self.d_k = n_heads, d_model // n_heads
        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.dropout = _dropout(dropout)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor) -> Tensor:
        B = query.size(0)
        q = self.w_q(query).view(B, -1, self.h, self.d_k).transpose(1, 2)  # (B, H, Lq, K)
        k = self.w_k(key).view(B, -1, self.h, self.d_k).transpose(1, 2)  # (B, H, Lk, K)
        v = self.w_v(value).view(B, -1, self.h, self.d_k).transpose(1, 2)  # (B, H, Lk, K)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, Lq, Lk)
        scores = scores.masked_fill(mask == 0, -1e9)
        p = self.dropout(scores.softmax(dim=-1))  # (B, H, Lq, Lk)
        out = (p @ v).transpose(1, 2).contiguous().view(B, -1, self.h * self.d_k)  # (B, Lq, D)
        return self.w_o(out)


class TextbookFFN(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = _dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(self.dropout(self.w_1(x).relu()))


class TextbookEncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.attn = TextbookAttention(d, cfg.n_heads, cfg.attn_dropout)
        self.ffn = TextbookFFN(d, cfg.d_ff, cfg.ffn_dropout)
        self.norms = nn.ModuleList([nn.LayerNorm(d), nn.LayerNorm(d)])
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = self.norms[0](x + self.dropout(self.attn(x, x, x, mask)))
        return self.norms[1](x + self.dropout(self.ffn(x)))


class TextbookDecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.self_attn = TextbookAttention(d, cfg.n_heads, cfg.attn_dropout)
        self.src_attn = TextbookAttention(d, cfg.n_heads, cfg.attn_dropout)
        self.ffn = TextbookFFN(d, cfg.d_ff, cfg.ffn_dropout)
        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, y: Tensor, memory: Tensor, src_mask: Tensor, tgt_mask: Tensor) -> Tensor:
        y = self.norms[0](y + self.dropout(self.self_attn(y, y, y, tgt_mask)))
        y = self.norms[1](y + self.dropout(self.src_attn(y, memory, memory, src_mask)))
        return self.norms[2](y + self.dropout(self.ffn(y)))


class TextbookTransformer(nn.Module):
    """The textbook encoder-decoder with tied embeddings and a tabulated PE (5000 rows)."""

    def __init__(self, cfg: ModelConfig, max_len: int = 5000) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size)
        self.tgt_embed.weight = self.src_embed.weight
        self.generator.weight = self.src_embed.weight
        self.register_buffer("pe", sinusoidal_positions(max_len, cfg.d_model), persistent=False)
        self.encoder = nn.ModuleList(TextbookEncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.decoder = nn.ModuleList(TextbookDecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        self.dropout = nn.Dropout(cfg.dropout)

    def embed(self, emb: nn.Embedding, ids: Tensor) -> Tensor:
        x = emb(ids) * math.sqrt(self.cfg.d_model) + self.pe[: ids.size(1)]  # (B, L, D)
        return self.dropout(x)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        src_mask = (src != self.cfg.pad_id).unsqueeze(-2).unsqueeze(1)  # (B, 1, 1, S)
        x = self.embed(self.src_embed, src)
        for layer in self.encoder:
            x = layer(x, src_mask)
        return x, src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        T = tgt_in.size(1)
        sub = torch.tril(torch.ones(T, T, dtype=torch.uint8, device=tgt_in.device))  # (T, T)
        tgt_mask = (tgt_in != self.cfg.pad_id).unsqueeze(-2).unsqueeze(1) & (sub == 1)
        y = self.embed(self.tgt_embed, tgt_in)
        for layer in self.decoder:
            y = layer(y, memory, src_mask, tgt_mask)
        return self.generator(y)  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)

    def loss(self, logits: Tensor, target: Tensor, eps: float) -> Tensor:
        """KL divergence to an explicit smoothed target distribution (the textbook way)."""
        V = logits.size(-1)
        lp = logits.log_softmax(dim=-1).flatten(0, 1)  # (N, V)
        tgt = target.flatten()  # (N,)
        true_dist = torch.full_like(lp, eps / (V - 2))  # (N, V): no mass on the pad column
        true_dist.scatter_(1, tgt.unsqueeze(1), 1.0 - eps)
        true_dist[:, self.cfg.pad_id] = 0
        true_dist[tgt == self.cfg.pad_id] = 0
        return F.kl_div(lp, true_dist, reduction="sum")

    @torch.no_grad()
    def greedy(self, src: Tensor, max_len: Tensor, bos: int, eos: int) -> Tensor:
        """Greedy decoding that re-runs the decoder on the whole prefix at every step.

        max_len (B,): at most max_len[b] output tokens for sentence b, EOS included (aiayn's
        rule, ``aiayn.decode.max_lengths``); at its last position only EOS may follow. A
        sentence ends at its EOS; finished rows stay in the batch (filled with PAD) until every
        sentence has ended. Returns the output tokens (B, t), PAD after each EOS.
        """
        pad = self.cfg.pad_id
        memory, src_mask = self.encode(src)
        B = src.size(0)
        ys = torch.full((B, 1), bos, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        limit = max_len.to(src.device)  # (B,)
        for t in range(1, int(limit.max()) + 1):
            logits = self.decode(ys, memory, src_mask)[:, -1]  # (B, V)
            token = logits.argmax(-1)  # (B,)
            token = torch.where(limit <= t, torch.full_like(token, eos), token)  # forced EOS
            token = torch.where(done, torch.full_like(token, pad), token)  # (B,)
            ys = torch.cat([ys, token[:, None]], dim=1)  # (B, t + 1)
            done = done | (token == eos)
            if bool(done.all()):
                break
        return ys[:, 1:]
