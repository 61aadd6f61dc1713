"""The tied output layer and the label-smoothed loss in one chunked pass.  Sections 3.4, 5.4.

Replaces the plain ``label_smoothed_loss(Z_D E^T, y, eps, pad)`` (``aiayn.loss``) under
autograd, which materialises the (N, V) logits, their log-softmax and the gradient of each (at
the paper's vocabulary of 37000 and 4096 target tokens, 600 MB a copy). Here the tokens go in
chunks: for each chunk the logits are computed, the loss taken, and the gradient with respect
to the logits, p - q (softmax minus smoothed target), turned at once into the gradients of Z_D
and E. Only (chunk, V) is ever alive, one exponential pass serves both log-sum-exp and the
softmax, and padding positions are left out before the output layer. When no gradient is
wanted (``torch.no_grad``, ``inference_mode``: validation, perplexity) only the loss is
computed. Proven equal to the plain path, value and gradient, in float64 and float32, in
``tests/test_kernel_output_loss.py``. Measurements: docs/performance.md.

>>> z = torch.randn(5, 4, dtype=torch.float64); E = torch.randn(7, 4, dtype=torch.float64)
>>> y = torch.tensor([1, 2, 0, 3, 6])
>>> smooth, nll, n = tied_output_loss(z, E, y, eps=0.1, pad_id=0, chunk=2)
>>> n
4
"""

from __future__ import annotations

import torch
from torch import Tensor

from aiayn.loss import smoothed_from
from aiayn.model import output_loss as plain_output_loss

DEFAULT_CHUNK = 1024  # tokens per chunk: (1024, 37000) fp32 is 150 MB


def _chunk_loss(
    z: Tensor, E: Tensor, y: Tensor, eps: float, want_grad: bool, buf: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Smoothed loss sum, NLL sum and d(smoothed sum)/d(logits) of one chunk of real tokens.

    Padding was removed before (``tied_output_loss``), so every row counts. ``buf``, when given,
    is an fp32 (C', V) workspace (C' >= C) that holds the logits and then the gradient: one
    allocation for all chunks instead of one per chunk (on the CPU every fresh 30-150 MB block
    is paged in again by the kernel, which slowed the logits matmul by about a tenth).

    Shapes: z (C, D), E (V, D), y (C,) -> scalars and (C, V).
    """
    V = E.size(0)
    if buf is not None:
        logits = torch.mm(z, E.t(), out=buf[: z.size(0)])  # (C, V), fp32, in the workspace
    else:
        logits = z @ E.t()  # (C, V)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # fp32 at least
    top = logits.amax(dim=-1)  # (C,)
    logit_y = logits.gather(1, y[:, None]).squeeze(1)  # (C,)
    logit_sum = logits.sum(dim=-1)  # (C,)
    e = logits.sub_(top[:, None]).exp_()  # (C, V): exp(logit - max), in the logits' memory
    e_sum = e.sum(dim=-1)  # (C,)
    lse = top + e_sum.log()  # (C,): log sum_j exp(logit_j)
    nll = lse - logit_y  # (C,): -log p_y
    total = V * lse - logit_sum  # (C,): -sum_j log p_j
    smooth = smoothed_from(nll, total, eps, V)  # (C,)
    smooth_sum, nll_sum = smooth.sum(), nll.sum()
    if not want_grad:
        return smooth_sum, nll_sum, None
    off = eps / (V - 1)  # q_j off the reference token
    grad = e.mul_(e_sum.reciprocal()[:, None])  # (C, V): p = softmax, still the same memory
    grad.sub_(off)  # p - eps / (V - 1)
    grad.scatter_add_(1, y[:, None], torch.full_like(nll[:, None], off - (1.0 - eps)))
    return smooth_sum, nll_sum, grad


class _TiedOutputLoss(torch.autograd.Function):
    """The chunked loss: the gradients of z and E are made in forward, handed out in backward."""

    @staticmethod
    def forward(ctx, z, E, y, eps, chunk, want):  # type: ignore[override]
        grad_z = torch.empty_like(z) if want else None  # (N, D)
        acc_E = torch.promote_types(E.dtype, torch.float32)
        grad_E = torch.zeros(E.shape, dtype=acc_E, device=E.device) if want else None
        acc = torch.promote_types(z.dtype, torch.float32)
        smooth_sum = torch.zeros((), dtype=acc, device=z.device)
        nll_sum = torch.zeros((), dtype=acc, device=z.device)
        buf = None  # one logits workspace for every chunk: fp32 CPU only (the GPU allocator caches)
        if z.device.type == "cpu" and z.dtype == E.dtype == torch.float32 and z.size(0) > 0:
            buf = torch.empty(min(chunk, z.size(0)), E.size(0), dtype=torch.float32)  # (C, V)
        for s in range(0, z.size(0), chunk):
            zc, yc = z[s : s + chunk], y[s : s + chunk]  # (C, D), (C,)
            sm, nl, g = _chunk_loss(zc, E, yc, eps, want, buf)
            smooth_sum += sm
            nll_sum += nl
            if g is not None:
                g = g.to(z.dtype)  # (C, V)
                torch.mm(g, E.to(z.dtype), out=grad_z[s : s + chunk])  # (C, D)
                grad_E.addmm_(g.t().to(acc_E), zc.to(acc_E))  # (V, D)
        if want:
            ctx.save_for_backward(grad_z, grad_E.to(E.dtype))
        ctx.mark_non_differentiable(nll_sum)
        return smooth_sum, nll_sum

    @staticmethod
    def backward(ctx, g_smooth, g_nll):  # type: ignore[override]
        grad_z, grad_E = ctx.saved_tensors
        return grad_z * g_smooth, grad_E * g_smooth, None, None, None, None


def tied_output_loss(
    z: Tensor,
    E: Tensor,
    target: Tensor,
    eps: float,
    pad_id: int,
    chunk: int = DEFAULT_CHUNK,
    *,
    bias: Tensor | None = None,
) -> tuple[Tensor, Tensor, int]:
    """sum_t -sum_j q_j log softmax(z_t E^T)_j over non-pad t, q = 1-eps on y, eps/(V-1) elsewhere.

    Sections 3.4 and 5.4. Returns (smoothed loss sum, plain NLL sum, non-pad target tokens);
    only the smoothed sum carries a gradient (the NLL is for logging). The gradients of z and E
    are computed chunk by chunk during the forward pass and handed out in backward.

    Takes the plain ``aiayn.model.output_loss``'s arguments; a bias on the logits (EXTENSION,
    off by default) it leaves to the plain loss of the (B, T, V) logits.

    Shapes: z (B, T, D) or (N, D); E (V, D); target (B, T) or (N,); bias (V,).
    """
    if bias is not None:
        return plain_output_loss(z, E, target, eps, pad_id, bias=bias)
    z2 = z.reshape(-1, z.size(-1))  # (N, D)
    y = target.reshape(-1)  # (N,)
    real = (y != pad_id).nonzero().squeeze(1)  # (N',): the positions that are not padding
    if real.numel() < y.numel():  # padding adds nothing to the loss: no logits for it
        z2, y = z2.index_select(0, real), y.index_select(0, real)  # (N', D), (N',)
    # Gradients only when autograd records: never under no_grad / inference_mode (inside
    # forward grad mode is always off, so this is decided here, before apply).
    want = torch.is_grad_enabled() and (z2.requires_grad or E.requires_grad)
    smooth, nll = _TiedOutputLoss.apply(z2, E, y, float(eps), int(chunk), want)
    return smooth, nll, real.numel()
