"""Model FLOPs of a training step, counted from the architecture; the machine's matmul peak.

Used by the benchmarks (MFU: achieved FLOP/s over the measured peak) and by ``aiayn table3``
(the training cost of each run beside the paper's Table 2 estimates).

A matmul of (m, k) by (k, n) is 2 m k n FLOPs. The encoder and decoder are counted on the
padded (B, S) and (B, T) batch shapes: per layer the Q, K, V and W^O projections, Q K^T and the
weighted sum of V (the full T x T for causal self-attention, as the paper's formulas write it)
and the FFN. The output layer Z E^T is counted only for the target tokens that are not padding
(the loss ignores the others, and aiayn computes no logits for them): counting them would credit
aiayn with work it skips. Embedding lookups, softmax, LayerNorm and the optimizer are not
counted. A training step is taken as 3 forward passes (the backward pass costs twice the
forward), the usual convention.
"""

from __future__ import annotations

import time

import torch

from aiayn.config import ModelConfig

# Table 2 of the paper: "Training Cost (FLOPs)" for EN-DE, base and big.
PAPER_TRAINING_FLOPS = {"base": 3.3e18, "big": 2.3e19}


def attention_flops(B: int, Lq: int, Lk: int, cfg: ModelConfig, self_attn: bool) -> int:
    """Forward FLOPs of one multi-head attention sub-layer."""
    D, H, K, Dv = cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_v
    proj = 2 * B * Lq * D * H * K  # Q
    proj += 2 * B * Lk * D * (H * K + H * Dv)  # K and V (from x or the memory)
    proj += 2 * B * Lq * H * Dv * D  # W^O
    core = 2 * B * H * Lq * Lk * K + 2 * B * H * Lq * Lk * Dv  # Q K^T and weights @ V
    del self_attn
    return proj + core


def ffn_flops(B: int, L: int, cfg: ModelConfig) -> int:
    return 2 * 2 * B * L * cfg.d_model * cfg.d_ff


def forward_flops(B: int, S: int, T: int, cfg: ModelConfig, n_out: int | None = None) -> int:
    """FLOPs of one forward pass on a (B, S) source and (B, T) target batch.

    n_out: target tokens that reach the loss (not padding); B T when None.
    """
    enc = cfg.n_layers * (attention_flops(B, S, S, cfg, True) + ffn_flops(B, S, cfg))
    dec = cfg.decoder_layers * (
        attention_flops(B, T, T, cfg, True)
        + attention_flops(B, T, S, cfg, False)
        + ffn_flops(B, T, cfg)
    )
    out = 2 * (B * T if n_out is None else n_out) * cfg.d_model * cfg.vocab_size
    return enc + dec + out


def training_flops(B: int, S: int, T: int, cfg: ModelConfig, n_out: int | None = None) -> int:
    """Forward + backward: 3 x forward."""
    return 3 * forward_flops(B, S, T, cfg, n_out)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device | None = None, quick: bool = True) -> float:
    """max over n of 2 n^3 / t(n x n @ n x n): the best fp32 matmul FLOP/s, current threads."""
    device = device or torch.device("cpu")
    best = 0.0
    sizes = (1024, 2048) if quick else (1024, 2048, 3072)
    if device.type == "cuda":
        sizes = (4096, 8192)
    for n in sizes:
        a = torch.randn(n, n, device=device)  # (n, n)
        b = torch.randn(n, n, device=device)  # (n, n)
        a @ b
        _sync(device)
        for _ in range(3):
            t = time.perf_counter()
            a @ b
            _sync(device)
            best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best
