"""Speed only: faster ways to compute formulas that ``aiayn.model`` and ``aiayn.attention`` write
plainly.  Sections 3.2.1, 3.3, 3.4, 5.4.

Each kernel names the plain formula it replaces and is proven equal to it, value and gradient,
in float64 and float32 (``tests/test_kernel_*.py``; ``tests/test_kernels.py`` for the set as a
whole); why each exists, with measurements, is in docs/performance.md. The model never imports
this package: whoever builds a model hands it ``FAST`` (``Transformer(cfg, ops=FAST)``), as
the training runtime (``Runtime.kernels``), the translator and the CLI's ``--kernels fast``
(the default) do; ``--kernels plain`` builds it with ``aiayn.model.PLAIN`` and runs none of them.

| operation      | plain (aiayn.model / aiayn.attention)        | kernel                           |
|----------------|----------------------------------------------|----------------------------------|
| attention      | ``attention``: masked_fill, softmax, matmul  | ``attention.attention`` dispatch |
| feed_forward   | ``feed_forward`` under autograd              | ``ffn.feed_forward``             |
| dropout        | ``F.dropout``                                | ``dropout.dropout``              |
| output_loss    | ``label_smoothed_loss(Z_D E^T, y)``          | ``output_loss.tied_output_loss`` |
"""

from __future__ import annotations

from typing import Literal

from aiayn.kernels import attention, dropout, ffn, output_loss
from aiayn.model import PLAIN, Ops

FAST = Ops(attention.attention, ffn.feed_forward, dropout.dropout, output_loss.tied_output_loss)

Kernels = Literal["fast", "plain"]  # the run-time choice: --kernels, Runtime.kernels
KERNELS: dict[str, Ops] = {"fast": FAST, "plain": PLAIN}


def kernel_ops(name: str) -> Ops:
    """The operations ``--kernels NAME`` names: ``FAST`` ("fast") or ``aiayn.model.PLAIN``."""
    if name not in KERNELS:
        raise ValueError(f"kernels: must be fast or plain, got {name!r}")
    return KERNELS[name]


__all__ = ["FAST", "KERNELS", "Kernels", "attention", "dropout", "ffn", "kernel_ops", "output_loss"]
