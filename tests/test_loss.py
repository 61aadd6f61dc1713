"""Label-smoothed cross-entropy (section 5.4): convention, entropy floor, padding, references."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from aiayn.loss import label_smoothed_loss, smoothed_entropy, token_accuracy

PAD = 0


def explicit_reference(logits: torch.Tensor, target: torch.Tensor, eps: float, pad: int):
    """The definition, with the (N, V) smoothed target matrix written out."""
    V = logits.size(-1)
    lp = F.log_softmax(logits.double().reshape(-1, V), dim=-1)  # (N, V)
    t = target.reshape(-1)  # (N,)
    q = torch.full_like(lp, eps / (V - 1))  # (N, V)
    q.scatter_(1, t[:, None], 1.0 - eps)
    keep = t != pad
    per_token = -(q * lp).sum(-1)  # (N,)
    nll = -lp.gather(1, t[:, None]).squeeze(1)  # (N,)
    return per_token[keep].sum(), nll[keep].sum(), int(keep.sum())


def test_entropy_floor_anchor() -> None:
    # spec/paper.md, 5.4: V = 37000, eps = 0.1, mass spread over the V-1 wrong classes.
    assert smoothed_entropy(37000, 0.1) == pytest.approx(1.3770, abs=1e-3)
    V, eps = 37000, 0.1
    q = torch.full((V,), eps / (V - 1), dtype=torch.float64)  # (V,)
    q[7] = 1 - eps
    logits = q.log()[None, :]  # (1, V): the model that predicts exactly q
    smoothed, nll, n = label_smoothed_loss(logits, torch.tensor([7]), eps, PAD)
    assert n == 1
    assert smoothed.item() == pytest.approx(1.3770, abs=1e-3)
    assert smoothed.item() == pytest.approx(smoothed_entropy(V, eps), abs=1e-4)
    assert nll.item() == pytest.approx(-math.log(1 - eps), abs=1e-5)


def test_floor_is_the_minimum() -> None:
    """Any other prediction costs more than the entropy (Gibbs' inequality)."""
    V, eps = 50, 0.1
    torch.manual_seed(1)
    target = torch.randint(1, V, (64,))
    floor = smoothed_entropy(V, eps)
    for scale in (0.1, 1.0, 10.0, 100.0):
        logits = torch.randn(64, V) * scale
        logits[torch.arange(64), target] += scale * 3
        smoothed, _, n = label_smoothed_loss(logits, target, eps, PAD)
        assert smoothed.item() / n > floor


@given(
    B=st.integers(1, 4),
    T=st.integers(1, 6),
    V=st.integers(5, 40),
    eps=st.sampled_from([0.0, 0.1, 0.2, 0.5]),
)
def test_equals_explicit_reference_and_cross_entropy(B: int, T: int, V: int, eps: float) -> None:
    g = torch.Generator().manual_seed(B * 100 + T * 10 + V)
    logits = torch.randn(B, T, V, generator=g, dtype=torch.float64) * 3  # (B, T, V)
    target = torch.randint(0, V, (B, T), generator=g)  # (B, T), zeros are padding
    smoothed, nll, n = label_smoothed_loss(logits, target, eps, PAD)
    ref_s, ref_nll, ref_n = explicit_reference(logits, target, eps, PAD)
    assert n == ref_n
    torch.testing.assert_close(smoothed.double(), ref_s, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(nll.double(), ref_nll, rtol=1e-5, atol=1e-5)
    # PyTorch's label_smoothing=ls puts ls/V on every class; ls = eps V/(V-1) is our convention.
    ce = F.cross_entropy(
        logits.reshape(-1, V),
        target.reshape(-1),
        ignore_index=PAD,
        reduction="sum",
        label_smoothing=eps * V / (V - 1),
    )
    torch.testing.assert_close(smoothed.double(), ce, rtol=1e-5, atol=1e-5)


def test_padding_never_counts() -> None:
    torch.manual_seed(2)
    V = 11
    logits = torch.randn(2, 5, V)  # (B, T, V)
    target = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 0, 0, 0]])  # (B, T)
    smoothed, nll, n = label_smoothed_loss(logits, target, 0.1, PAD)
    assert n == 5
    # The logits at padded positions (even inf or nan) change nothing.
    logits2 = logits.clone()
    logits2[target == PAD] = float("nan")
    s2, n2, _ = label_smoothed_loss(logits2, target, 0.1, PAD)
    assert s2.item() == pytest.approx(smoothed.item())
    assert n2.item() == pytest.approx(nll.item())
    # ... and receive no gradient.
    logits3 = logits.clone().requires_grad_(True)
    label_smoothed_loss(logits3, target, 0.1, PAD)[0].backward()
    assert torch.all(logits3.grad[target == PAD] == 0)
    assert torch.all(logits3.grad[target != PAD].abs().sum(-1) > 0)
    # Only the non-pad prefix matters: the same sums from the unpadded rows alone.
    a, _, _ = label_smoothed_loss(logits[0, :3], target[0, :3], 0.1, PAD)
    b, _, _ = label_smoothed_loss(logits[1, :2], target[1, :2], 0.1, PAD)
    assert smoothed.item() == pytest.approx((a + b).item(), rel=1e-6)


def test_no_smoothing_is_plain_nll() -> None:
    torch.manual_seed(3)
    logits, target = torch.randn(7, 9), torch.randint(1, 9, (7,))
    smoothed, nll, _ = label_smoothed_loss(logits, target, 0.0, PAD)
    assert smoothed.item() == pytest.approx(nll.item())
    assert nll.item() == pytest.approx(F.cross_entropy(logits, target, reduction="sum").item())


def test_float32_floor_and_bf16_logits() -> None:
    V, eps = 37000, 0.1
    q = torch.full((V,), eps / (V - 1))  # (V,) float32
    q[5] = 1 - eps
    s, _, _ = label_smoothed_loss(q.log()[None], torch.tensor([5]), eps, PAD)
    assert s.dtype == torch.float32
    assert s.item() == pytest.approx(1.3770, abs=1e-3)
    torch.manual_seed(4)
    logits, target = torch.randn(3, 4, 20), torch.randint(1, 20, (3, 4))
    s32, _, _ = label_smoothed_loss(logits, target, 0.1, PAD)
    s16, _, _ = label_smoothed_loss(logits.bfloat16(), target, 0.1, PAD)
    assert s16.dtype == torch.float32
    assert s16.item() == pytest.approx(s32.item(), rel=2e-2)


def test_token_accuracy_ignores_padding() -> None:
    logits = torch.zeros(1, 4, 5)  # (B, T, V)
    logits[0, torch.arange(4), torch.tensor([3, 2, 4, 1])] = 1.0
    assert token_accuracy(logits, torch.tensor([[3, 2, 1, 0]]), PAD) == (2, 3)
