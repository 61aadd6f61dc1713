"""aiayn: the Transformer of "Attention Is All You Need" (Vaswani et al., 2017), made visible.

>>> from aiayn import Transformer, model_preset
>>> model_preset("tiny").d_model
256
"""

from typing import Any

# The names below are imported on first use (PEP 562), so that `import aiayn` (and with it the
# `aiayn` command's start-up, where a Ctrl-C must give one line, not a traceback from inside
# `import torch`) stays light: aiayn.cli.main is running before torch is imported.
_LAZY = {
    "PRESETS": "aiayn.config",
    "DecodeConfig": "aiayn.config",
    "ModelConfig": "aiayn.config",
    "TrainConfig": "aiayn.config",
    "model_preset": "aiayn.config",
    "train_preset": "aiayn.config",
    "DecoderState": "aiayn.model",
    "Trace": "aiayn.model",
    "Transformer": "aiayn.model",
    "trace": "aiayn.model",
    "load_pretrained": "aiayn.pretrained",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aiayn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "DecodeConfig",
    "DecoderState",
    "ModelConfig",
    "Trace",
    "TrainConfig",
    "Transformer",
    "load_pretrained",
    "model_preset",
    "trace",
    "train_preset",
]
