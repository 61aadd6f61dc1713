"""Speed only: faster ways to compute formulas that ``aiayn.model`` and ``aiayn.attention`` write
plainly.  Sections 3.2.1, 3.3, 3.4, 5.4.

Each kernel names the plain formula it replaces and is proven equal to it, value and gradient,
in float64 and float32 (``tests/test_kernels.py``); why each exists, with measurements, is in
docs/performance.md. The model reaches them through one seam, ``aiayn.model.kernel_ops``
(``ModelConfig(kernels="fast")``, the default); ``kernels="plain"`` runs none of them.

| operation      | plain (aiayn.model / aiayn.attention)        | kernel                           |
|----------------|----------------------------------------------|----------------------------------|
| attention      | ``attention``: masked_fill, softmax, matmul  | ``attention.attention`` dispatch |
| feed_forward   | ``feed_forward`` under autograd              | ``ffn.feed_forward``             |
| dropout        | ``F.dropout``                                | ``dropout.dropout``              |
| output_loss    | ``label_smoothed_loss(Z_D E^T, y)``          | ``output_loss.tied_output_loss`` |
"""

from __future__ import annotations

from aiayn.kernels import attention, dropout, ffn, output_loss
from aiayn.model import Ops

FAST = Ops(attention.attention, ffn.feed_forward, dropout.dropout, output_loss.tied_output_loss)

__all__ = ["FAST", "attention", "dropout", "ffn", "output_loss"]
