"""The FFN kernel of ``aiayn.kernels.ffn`` equals the plain FFN (section 3.3, Eq. (2)).

Forward and backward in float32 and float64 with the ReLU gate half open, gradcheck in float64,
and the places where the kernel computes the plain FFN itself: autocast, a recorded hidden layer,
dropout after the activation and an activation other than the ReLU (both EXTENSIONs).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from aiayn.kernels import FAST
from aiayn.kernels.ffn import feed_forward as fast_feed_forward
from aiayn.model import FeedForward, feed_forward

TOL = {torch.float32: {"atol": 2e-5, "rtol": 2e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-9}}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_ffn_kernel_equals_the_plain_ffn_forward_and_backward(dtype) -> None:
    torch.manual_seed(3)
    ffn = FeedForward(16, 64).to(dtype)
    with torch.no_grad():
        ffn.b_1.normal_()
        ffn.b_2.normal_()
    weights = (ffn.w_1, ffn.b_1, ffn.w_2, ffn.b_2)
    x = torch.randn(5, 7, 16, dtype=dtype, requires_grad=True)  # (B, L, D)
    g = torch.randn(5, 7, 16, dtype=dtype)
    record: dict = {}
    ours = feed_forward(x, *weights, record)  # (B, L, D)
    fast = fast_feed_forward(x, *weights)  # (B, L, D)
    assert 0.2 < float((record["hidden"] == 0).float().mean()) < 0.8  # the ReLU gate matters
    torch.testing.assert_close(fast, ours, **TOL[dtype])
    wrt = [x, *weights]
    for a, b in zip(
        torch.autograd.grad(fast, wrt, g), torch.autograd.grad(ours, wrt, g), strict=True
    ):
        torch.testing.assert_close(a, b, **TOL[dtype])
    assert type(fast.grad_fn.next_functions[0][0]).__name__ == "FeedForwardFnBackward"


def test_ffn_kernel_gradcheck_and_its_plain_fallbacks() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    w = [
        torch.randn(s, dtype=torch.float64, requires_grad=True)
        for s in ((4, 6), (6,), (6, 4), (4,))
    ]
    assert torch.autograd.gradcheck(fast_feed_forward, (x, *w))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast: the plain FFN, in bf16
        assert fast_feed_forward(x.float(), *(t.float() for t in w)).dtype == torch.bfloat16
    ffn = FeedForward(4, 6, dropout=0.5, ops=FAST).train()  # relu dropout: plain
    y = ffn(torch.randn(2, 3, 4, requires_grad=True))
    assert "FeedForwardFn" not in type(y.grad_fn).__name__


@pytest.mark.parametrize(
    "extra",
    [{"act": F.silu}, {"drop": lambda h: h * 0.5}, {"record": {}}],
    ids=["silu", "relu-dropout", "record"],
)
def test_the_ffn_kernel_computes_what_it_does_not_cover_by_the_plain_formula(extra) -> None:
    """The model hands the kernel every case; it falls back by itself, values and gradients."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    w = [
        torch.randn(s, dtype=torch.float64, requires_grad=True)
        for s in ((4, 6), (6,), (6, 4), (4,))
    ]
    y = fast_feed_forward(x, *w, **extra)
    assert "FeedForwardFn" not in type(y.grad_fn).__name__
    ref = feed_forward(x, *w, **{**extra, "record": {} if "record" in extra else None})
    torch.testing.assert_close(y, ref)
    if "record" in extra:
        assert extra["record"]["hidden"].shape == (2, 3, 6)
    grads = torch.autograd.grad(y.sum(), [x, *w])
    for a, b in zip(grads, torch.autograd.grad(ref.sum(), [x, *w]), strict=True):
        torch.testing.assert_close(a, b)
