"""Label-smoothed cross-entropy, and the perplexity of its NLL.  Section 5.4, Table 3.

"During training, we employed label smoothing of value eps_ls = 0.1. This hurts perplexity, as
the model learns to be more unsure, but improves accuracy and BLEU score." (5.4)

The convention chosen: the smoothed target q puts 1 - eps on the reference token and spreads
eps evenly over the V - 1 other tokens, q_j = eps / (V - 1). (Another common convention spreads
eps over all V tokens, so that the reference gets 1 - eps + eps / V; the two differ in the 4th
digit of the entropy floor.) With this q the loss

    L = -sum_j q_j log p_j = (1 - eps) * nll + eps / (V - 1) * (-sum_j log p_j - nll)

cannot fall below the entropy of q, H(q) = -(1 - eps) log(1 - eps) - eps log(eps / (V - 1)),
about 1.3770 nats for V = 37000 and eps = 0.1. It is computed from one log_softmax, a gather and
a row sum: no (N, V) target matrix is built. Padding positions never count.

The NLL that ``label_smoothed_loss`` returns beside the smoothed loss is the one every figure
of aiayn counts (training, validation, ``aiayn evaluate``, the exported engines): summed over
the non-pad target tokens, EOS included, and its perplexity is ``perplexity`` here.

>>> round(smoothed_entropy(37000, 0.1), 3)
1.377
>>> round(Perplexity(nll=6.0, tokens=3).value, 4)
7.3891
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


def label_smoothed_loss(
    logits: Tensor, target: Tensor, eps: float, pad_id: int
) -> tuple[Tensor, Tensor, int]:
    """sum over non-pad tokens of -sum_j q_j log p_j, q = (1 - eps) on y, eps/(V-1) elsewhere.

    Section 5.4. Returns (smoothed loss sum, plain NLL sum, number of non-pad target tokens);
    the sums are float32 scalars for float16/bfloat16/float32 logits (the log-softmax of
    half-precision logits runs in float32), float64 for float64 logits.
    Divide by the token count of the whole step to get the per-token loss.

    Shapes: logits (B, T, V) or (N, V); target (B, T) or (N,).
    """
    V = logits.size(-1)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # (B, T, V)
    lprobs = F.log_softmax(logits.reshape(-1, V), dim=-1)  # (N, V)
    target = target.reshape(-1)  # (N,)
    keep = target != pad_id  # (N,)
    nll = -lprobs.gather(1, target.unsqueeze(1)).squeeze(1)  # (N,): -log p_y
    total = -lprobs.sum(dim=-1)  # (N,): -sum_j log p_j
    smooth = smoothed_from(nll, total, eps, V)  # (N,)
    zero = torch.zeros((), dtype=nll.dtype, device=nll.device)
    smoothed_sum = torch.where(keep, smooth, zero).sum()
    nll_sum = torch.where(keep, nll, zero).sum()
    return smoothed_sum, nll_sum, int(keep.sum())


def smoothed_from(nll: Tensor, total: Tensor, eps: float, vocab_size: int) -> Tensor:
    """-sum_j q_j log p_j = (1 - eps) * nll + eps / (V - 1) * (total - nll).  Section 5.4.

    The smoothed loss from the two sums it needs: nll = -log p_y and total = -sum_j log p_j.
    The one place where q is written down; the fused output-layer kernel uses it too.

    Shapes: nll, total (N,) -> (N,).
    """
    return (1.0 - eps) * nll + (eps / (vocab_size - 1)) * (total - nll)  # (N,)


def smoothed_entropy(vocab_size: int, eps: float) -> float:
    """H(q) = -(1 - eps) log(1 - eps) - eps log(eps / (V - 1)): the loss floor.  Section 5.4."""
    if eps == 0.0:
        return 0.0
    return -(1.0 - eps) * math.log(1.0 - eps) - eps * math.log(eps / (vocab_size - 1))


def token_accuracy(logits: Tensor, target: Tensor, pad_id: int) -> tuple[int, int]:
    """(correct, counted): argmax predictions equal to the target on non-pad positions.

    Shapes: logits (B, T, V); target (B, T).
    """
    keep = target != pad_id  # (B, T)
    correct = (logits.argmax(dim=-1) == target) & keep  # (B, T)
    return int(correct.sum()), int(keep.sum())


def perplexity(nll: float, tokens: float = 1.0) -> float:
    """PPL = exp(NLL / N), N target tokens (EOS included, padding not).  Table 3, PPL.

    ``nll`` is summed over the N tokens (or is already per token, with the default N = 1);
    inf where exp overflows.
    """
    per_token = nll / max(tokens, 1)
    return math.exp(per_token) if per_token < 700 else math.inf


@dataclass(frozen=True)
class Perplexity:
    """exp(NLL / tokens): the per-token perplexity of the references, with its sums.  Table 3."""

    nll: float  # summed negative log-likelihood, nats
    tokens: int  # target tokens counted (EOS included, padding excluded)

    @property
    def value(self) -> float:
        return perplexity(self.nll, self.tokens)
