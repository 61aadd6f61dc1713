"""Residual dropout with a cheap random mask on the CPU.  Section 5.4.

Replaces the plain ``F.dropout(x, p)`` (one Bernoulli variate per element, a float mask kept for
the backward pass): the mask comes from 16 random bits per element, cut from 64-bit random
words (four elements per draw of the generator), and is kept as booleans. The drop probability
is rounded to a multiple of 2^-16 (0.1 becomes 6554 / 65536 = 0.1000061) and the kept values are
scaled by 1 / (1 - that probability), so E[dropout(x)] = x exactly. ``torch.rand`` is itself a
multiple of 2^-24, so no CPU mask is exact in p; ``tests/test_kernel_dropout.py`` checks the
rate and the scaling. Other devices use ``F.dropout``. The generator is torch's default one, so
``torch.manual_seed`` fixes the masks. Measurements: docs/performance.md.

>>> _ = torch.manual_seed(0)
>>> x = torch.ones(4, 1000)
>>> y = dropout(x, 0.1)
>>> round(float((y == 0).float().mean()), 2), round(float(y.max()), 4)
(0.1, 1.1111)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

LEVELS = 1 << 16  # the drop probability is a multiple of 1 / LEVELS


def keep_mask(shape: torch.Size | tuple[int, ...], n_drop: int) -> Tensor:
    """m_i = [u_i >= n_drop], u_i uniform on {0, ..., 2^16 - 1}: P(m_i = 0) = n_drop / 2^16.

    Section 5.4. The u_i are the 16-bit quarters of uniform 64-bit words (CPU generator).

    Shapes: -> shape, bool.
    """
    n = 1
    for s in shape:
        n *= s
    words = torch.empty((n + 3) // 4, dtype=torch.int64)  # (ceil(n / 4),)
    words.random_(-(1 << 63), (1 << 63) - 1)  # every 64-bit pattern but one
    u = words.view(torch.int16)[:n].view(shape)  # (*shape,): uniform on [-2^15, 2^15)
    return u >= n_drop - (1 << 15)


class MaskScale(torch.autograd.Function):
    """y = where(m, x, 0) * s, and the same map for the gradient (it is linear in x).

    Written out so that each direction is one pass into one new tensor; with autograd's
    ``torch.where(m, x * s, 0)`` each direction allocated and filled two.
    """

    @staticmethod
    def forward(ctx, x: Tensor, keep: Tensor, scale: float) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return torch.where(keep, x, 0.0).mul_(scale)  # (*)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        (keep,) = ctx.saved_tensors
        return MaskScale.apply(grad, keep, ctx.scale), None, None  # (*)


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Dropout(x) = x * m / (1 - p), m_i ~ Bernoulli(1 - p) independent.  Section 5.4.

    The kernel for ``F.dropout(x, p)``: on the CPU p is rounded to a multiple of 2^-16 (see the
    module docstring); elsewhere, and where p rounds to 0 or 1, this is ``F.dropout``.

    Shapes: (*) -> (*).
    """
    if not training or p == 0.0:
        return x
    n_drop = round(p * LEVELS)
    if x.device.type != "cpu" or not 0 < n_drop < LEVELS:
        return F.dropout(x, p, training=True)
    keep = keep_mask(x.shape, n_drop)  # (*), bool
    scale = LEVELS / (LEVELS - n_drop)  # 1 / (1 - p), p as rounded
    return MaskScale.apply(x, keep, scale)  # (*)
