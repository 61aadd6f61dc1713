"""The position-wise FFN with its backward pass written out.  Section 3.3, Eq. (2).

Replaces the plain ``F.relu(F.linear(x, W_1^T, b_1))`` then ``F.linear(h, W_2^T, b_2)`` under
autograd: the same matmuls, with two fresh (N, F) blocks fewer per step, since the ReLU and its
gate in the backward pass work in place. Proven equal to the plain FFN (values and gradients)
in ``tests/test_kernel_ffn.py``; the measurements are in docs/performance.md.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from aiayn.model import Record
from aiayn.model import feed_forward as plain_feed_forward


class FeedForwardFn(torch.autograd.Function):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, forward and a hand-written backward.  Section 3.3.

    With u = x W_1 + b_1, h = max(0, u), y = h W_2 + b_2 and g = dL/dy (rows are positions):
    dL/dW_2 = h^T g, dL/db_2 = sum_rows g, dL/dh = g W_2^T, dL/du = dL/dh * [h > 0],
    dL/dW_1 = x^T dL/du, dL/db_1 = sum_rows dL/du, dL/dx = dL/du W_1^T. Not twice differentiable.

    Shapes: x (N, D), w_1 (D, F), b_1 (F,), w_2 (F, D), b_2 (D,) -> (N, D).
    """

    @staticmethod
    def forward(ctx, x, w_1, b_1, w_2, b_2):  # type: ignore[override]
        h = torch.addmm(b_1, x, w_1).relu_()  # (N, F): max(0, x W_1 + b_1), in place
        ctx.save_for_backward(x, w_1, w_2, h)
        return torch.addmm(b_2, h, w_2)  # (N, D)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # type: ignore[override]
        x, w_1, w_2, h = ctx.saved_tensors
        g = g.contiguous()  # (N, D)
        grad_u = g @ w_2.t()  # (N, F): dL/dh
        # dL/du = dL/dh * [h > 0] in place: ReLU's own backward op (masked_fill_ is slower).
        torch.ops.aten.threshold_backward.grad_input(grad_u, h, 0.0, grad_input=grad_u)
        grad_x = grad_u @ w_1.t()  # (N, D)
        return grad_x, x.t() @ grad_u, grad_u.sum(0), h.t() @ g, g.sum(0)


def feed_forward(
    x: Tensor, w_1: Tensor, b_1: Tensor, w_2: Tensor, b_2: Tensor, record: Record | None = None,
    drop: Callable[[Tensor], Tensor] | None = None, act: Callable[[Tensor], Tensor] = F.relu,
) -> Tensor:  # fmt: skip
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 through ``FeedForwardFn``.  Section 3.3, Eq. (2).

    Takes the plain ``aiayn.model.feed_forward``'s arguments, and runs the plain FFN itself for
    what ``FeedForwardFn`` does not compute: a recorded hidden layer, dropout after the
    activation, an activation other than the ReLU, and autocast (where the matmuls change dtype).

    Shapes: x (B, L, D) -> (B, L, D).
    """
    if (
        record is not None
        or drop is not None
        or act is not F.relu
        or torch.is_autocast_enabled(x.device.type)
    ):
        return plain_feed_forward(x, w_1, b_1, w_2, b_2, record, drop, act)
    y = FeedForwardFn.apply(x.reshape(-1, x.size(-1)), w_1, b_1, w_2, b_2)  # (B L, D)
    return y.view(x.shape)  # (B, L, D)
