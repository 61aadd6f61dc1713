"""The NumPy twin: forward and hand-written backward of every block.  Sections 3.1-3.5, 5.4.

Plain NumPy in float64, no autograd: what PyTorch computes for ``aiayn.Transformer``, written
out so that every derivative can be read (in the docstrings of ``blocks`` and ``attention``)
and checked (tests/test_numpy_twin.py compares forward values with the PyTorch model to 1e-10
and gradients with autograd to 1e-8, block by block and for the whole model, and checks the
twin alone with finite differences).

Parameters are a flat dict named like ``Transformer.state_dict()`` (``params_from_torch``);
gradients come back in a dict with the same names. The twin covers the paper's model only:
post-LN, sinusoidal positions, no attention biases (``check_config`` says so otherwise).

>>> import numpy as np
>>> from aiayn.config import ModelConfig
>>> cfg = ModelConfig(vocab_size=7, d_model=4, n_heads=2, d_ff=8, n_layers=1)
>>> p = init_params(cfg, np.random.default_rng(0))
>>> src, tgt_in, tgt_out = np.array([[4, 5, 2]]), np.array([[1, 6]]), np.array([[6, 2]])
>>> loss, grads = loss_and_grads(p, cfg, src, tgt_in, tgt_out, eps=0.1)
>>> sorted(grads) == sorted(p)
True
"""

from aiayn.numpy_twin.attention import (
    attention_backward,
    attention_forward,
    mha_backward,
    mha_forward,
    softmax_backward,
    softmax_forward,
)
from aiayn.numpy_twin.blocks import (
    embed_backward,
    embed_forward,
    ffn_backward,
    ffn_forward,
    label_smoothed_backward,
    label_smoothed_forward,
    layer_norm_backward,
    layer_norm_forward,
    output_backward,
    output_forward,
    positions,
)
from aiayn.numpy_twin.model import (
    Params,
    backward,
    check_config,
    forward,
    init_params,
    loss_and_grads,
    params_from_torch,
)

__all__ = [
    "Params",
    "attention_backward",
    "attention_forward",
    "backward",
    "check_config",
    "embed_backward",
    "embed_forward",
    "ffn_backward",
    "ffn_forward",
    "forward",
    "init_params",
    "label_smoothed_backward",
    "label_smoothed_forward",
    "layer_norm_backward",
    "layer_norm_forward",
    "loss_and_grads",
    "mha_backward",
    "mha_forward",
    "output_backward",
    "output_forward",
    "params_from_torch",
    "positions",
    "softmax_backward",
    "softmax_forward",
]
