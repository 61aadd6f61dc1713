"""The chunked tied output layer and loss (sections 3.4, 5.4) equal the plain computation.

The plain computation is ``label_smoothed_loss`` (aiayn.loss) on the logits Z E^T; the kernel
is checked in float64 and in float32 (the training dtype, which also uses its one-workspace
path), with padding, and for doing no gradient work when autograd does not record.
"""

from __future__ import annotations

import pytest
import torch

from aiayn.kernels.output_loss import tied_output_loss
from aiayn.loss import label_smoothed_loss

PAD = 0


def plain(z: torch.Tensor, E: torch.Tensor, y: torch.Tensor, eps: float):
    """Logits Z E^T for every position, then the label-smoothed loss on them."""
    logits = z @ E.t()  # (B, T, V)
    smooth, nll, n = label_smoothed_loss(logits, y, eps, PAD)
    return smooth, nll, n


TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {}}


@pytest.mark.parametrize("chunk", [1, 3, 7, 1024])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_equals_plain_loss_and_gradients_with_padding(chunk: int, eps: float, dtype) -> None:
    torch.manual_seed(0)
    B, T, D, V = 3, 5, 4, 11
    z = torch.randn(B, T, D, dtype=dtype, requires_grad=True)
    E = torch.randn(V, D, dtype=dtype, requires_grad=True)
    y = torch.randint(1, V, (B, T))
    y[0, 3:] = PAD  # padded rows, and a whole row of padding
    y[2, :] = PAD
    out, ref = tied_output_loss(z, E, y, eps, PAD, chunk), plain(z, E, y, eps)
    assert out[2] == ref[2] == 8
    torch.testing.assert_close(out[0], ref[0], **TOL[dtype])
    torch.testing.assert_close(out[1], ref[1].detach(), **TOL[dtype])
    g_out = torch.autograd.grad(out[0] * 1.7, [z, E])
    g_ref = torch.autograd.grad(ref[0] * 1.7, [z, E])
    for a, b in zip(g_out, g_ref, strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])
    assert g_out[0][2].abs().sum() == 0  # padding receives no gradient


def test_all_padding_gives_zero_loss_and_zero_gradient() -> None:
    z = torch.randn(2, 3, 4, requires_grad=True)
    E = torch.randn(6, 4, requires_grad=True)
    smooth, nll, n = tied_output_loss(z, E, torch.zeros(2, 3, dtype=torch.long), 0.1, PAD)
    assert n == 0
    assert float(smooth.detach()) == 0.0
    assert float(nll) == 0.0
    gz, gE = torch.autograd.grad(smooth, [z, E])
    assert gz.abs().sum() == 0
    assert gE.abs().sum() == 0


def test_large_logits_stay_finite() -> None:
    """The max is taken out before the exponential (log-sum-exp), so 1e4-sized logits work."""
    z = torch.tensor([[100.0, 0.0], [0.0, -100.0]], dtype=torch.float64, requires_grad=True)
    E = torch.tensor([[100.0, 0.0], [0.0, 100.0], [-100.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([1, 2])
    out, ref = tied_output_loss(z, E, y, 0.1, PAD), plain(z, E, y, 0.1)
    assert torch.isfinite(out[0])
    torch.testing.assert_close(out[0], ref[0])


def _matmuls(fn) -> int:
    """The number of matrix products (mm, addmm, addmm_) that fn runs, counted by the profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(
        e.count for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm", "aten::addmm_")
    )


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_no_gradient_work_when_autograd_does_not_record(mode: str) -> None:
    """Validation and perplexity: one logits matmul per chunk, not three (logits, dZ, dE)."""
    torch.manual_seed(0)
    z = torch.randn(2, 6, 4, requires_grad=True)
    E = torch.nn.Parameter(torch.randn(9, 4))  # requires grad, as the model's embedding does
    y = torch.randint(1, 9, (2, 6))
    guard = torch.no_grad if mode == "no_grad" else torch.inference_mode
    with guard():
        quiet = _matmuls(lambda: tied_output_loss(z, E, y, 0.1, PAD, chunk=4))
        smooth, _, _ = tied_output_loss(z, E, y, 0.1, PAD, chunk=4)
    recording = _matmuls(lambda: tied_output_loss(z, E, y, 0.1, PAD, chunk=4))
    assert quiet == 3  # 12 tokens in chunks of 4: one logits matmul each
    assert recording == 9  # and the two gradient matmuls of each chunk
    assert not smooth.requires_grad
    torch.testing.assert_close(smooth, plain(z, E, y, 0.1)[0].detach())


def test_a_bias_on_the_logits_is_left_to_the_plain_loss() -> None:
    """EXTENSION (Marian's final_logits_bias): the kernel takes the bias and computes the plain
    label_smoothed_loss(Z E^T + b, y) itself, value and gradient."""
    from aiayn.model import output_loss

    torch.manual_seed(0)
    z = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    E = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1, 2, 0], [3, 8, 5]])
    out = tied_output_loss(z, E, y, 0.1, PAD, bias=b)
    ref = output_loss(z, E, y, 0.1, PAD, bias=b)
    torch.testing.assert_close(out[0], ref[0])
    assert out[2] == ref[2] == 5
    got = torch.autograd.grad(out[0], [z, E, b])
    for a, r in zip(got, torch.autograd.grad(ref[0], [z, E, b]), strict=True):
        torch.testing.assert_close(a, r)
    assert got[2].abs().sum() > 0  # the bias does receive a gradient
