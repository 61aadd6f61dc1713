"""Residual dropout (section 5.4): the CPU mask's rate, scaling, gradient and seeding."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from aiayn.kernels.dropout import LEVELS, dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_drop_rate_and_scale(p: float) -> None:
    torch.manual_seed(0)
    n = 1_000_003  # not a multiple of 4: the last 64-bit word is cut
    y = dropout(torch.ones(n), p)  # (n,)
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / n)  # five standard errors
    p_used = round(p * LEVELS) / LEVELS
    assert abs(p_used - p) <= 0.5 / LEVELS
    kept = y[y != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 1 / (1 - p_used)))


def test_output_is_x_times_mask_over_keep_prob_and_gradient_is_the_same_mask() -> None:
    torch.manual_seed(1)
    x = torch.randn(7, 13, 5, dtype=torch.float64, requires_grad=True)
    y = dropout(x, 0.2)
    mask = y != 0  # (7, 13, 5)
    scale = LEVELS / (LEVELS - round(0.2 * LEVELS))
    torch.testing.assert_close(y, x * mask * scale)
    (g,) = torch.autograd.grad((y * 3).sum(), [x])
    torch.testing.assert_close(g, 3 * mask * scale + torch.zeros_like(x))


def test_gradient_of_the_gradient_passes_through_the_same_mask() -> None:
    """The backward pass is itself differentiable (create_graph), as autograd's where was."""
    torch.manual_seed(4)
    x = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)
    y = dropout(x, 0.3)
    scale = LEVELS / (LEVELS - round(0.3 * LEVELS))
    mask = (y != 0).to(x.dtype)  # (6, 9)
    (g,) = torch.autograd.grad((y * w).sum(), [x], create_graph=True)  # w * mask * scale
    torch.testing.assert_close(g, w * mask * scale)
    (gw,) = torch.autograd.grad((g * g).sum(), [w])  # d/dw sum (w m s)^2 = 2 w m s^2
    torch.testing.assert_close(gw, 2 * w * mask * scale**2)


def test_bits_are_independent_across_neighbours() -> None:
    """The four 16-bit quarters of one random word give independent masks."""
    torch.manual_seed(2)
    m = keep_mask((400_000, 4), round(0.5 * LEVELS)).double()  # (N, 4): one word a row
    corr = torch.corrcoef(m.t())  # (4, 4)
    off = corr - torch.eye(4, dtype=torch.float64)
    assert off.abs().max() < 0.01  # 0.0016 standard error


def test_seeded_masks_repeat_and_eval_is_identity() -> None:
    x = torch.randn(64, 32)
    torch.manual_seed(3)
    a = dropout(x, 0.1)
    torch.manual_seed(3)
    b = dropout(x, 0.1)
    assert torch.equal(a, b)
    assert dropout(x, 0.1, training=False) is x
    assert dropout(x, 0.0) is x


@pytest.mark.parametrize("p", [1.0, 1e-7])
def test_probabilities_that_round_away_use_torch_dropout(p: float) -> None:
    x = torch.ones(1000)
    torch.manual_seed(4)
    ours = dropout(x, p)
    torch.manual_seed(4)
    torch.testing.assert_close(ours, F.dropout(x, p, training=True))


def test_bf16_input_keeps_its_dtype() -> None:
    y = dropout(torch.ones(100, dtype=torch.bfloat16), 0.1)
    assert y.dtype == torch.bfloat16
