"""aiayn: the Transformer of "Attention Is All You Need" (Vaswani et al., 2017), made visible.

>>> from aiayn import Transformer, model_preset
>>> model_preset("tiny").d_model
256
"""

from aiayn.config import (
    PRESETS,
    DecodeConfig,
    ModelConfig,
    TrainConfig,
    model_preset,
    train_preset,
)
from aiayn.model import DecoderState, Trace, Transformer, trace

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "DecodeConfig",
    "DecoderState",
    "ModelConfig",
    "Trace",
    "TrainConfig",
    "Transformer",
    "model_preset",
    "trace",
    "train_preset",
]
