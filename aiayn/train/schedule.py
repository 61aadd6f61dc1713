"""The learning-rate schedule of Eq. (3) and the Adam optimiser.  Section 5.3.

lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), steps counted from 1: the
rate grows linearly for ``warmup`` steps, peaks at step ``warmup``, then decays as
step^-0.5.

Named schedule presets give the tensor2tensor-era variants as TrainConfig overrides (they
change the optimiser and schedule only; tensor2tensor's v1.2.5 model changes, pre-LN and
attention/ReLU dropout, are ModelConfig options of their own).

>>> round(noam_lr(4000, 512, 4000), 8)
0.00069877
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import torch

from aiayn.config import TrainConfig

# name -> (description, TrainConfig overrides)
SCHEDULES: dict[str, tuple[str, dict[str, Any]]] = {
    "paper": ("Eq. (3) with warmup 4000, Adam(0.9, 0.98, 1e-9) (section 5.3)", {}),
    "t2t-v1": (
        "tensor2tensor v1.0 (June 2017) transformer_base_v1: identical to the paper",
        {"warmup": 4000, "lr_scale": 1.0, "adam_beta2": 0.98},
    ),
    "t2t-v1.2.5": (
        "tensor2tensor v1.2.5 (Oct 2017) transformer_base: warmup 8000, twice the rate",
        {"warmup": 8000, "lr_scale": 2.0, "adam_beta2": 0.98},
    ),
    "t2t-2018": (
        "tensor2tensor 2018 transformer_base: warmup 8000, twice the rate, beta2 0.997",
        {"warmup": 8000, "lr_scale": 2.0, "adam_beta2": 0.997},
    ),
}


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).  Section 5.3, Eq. (3).

    Steps count from 1 (the first update uses step 1); ``scale`` 1.0 is the paper.

    >>> f"{noam_lr(1, 512, 4000):.4e}", f"{noam_lr(100000, 512, 4000):.4e}"
    ('1.7469e-07', '1.3975e-04')
    """
    if step < 1:
        raise ValueError(f"step: Eq. (3) counts steps from 1, got {step}")
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def linear_lr(step: int, d_model: int, warmup: int, done: float, scale: float = 1.0) -> float:
    """scale * d_model^-0.5 * warmup^-0.5 * max(0, min(step / warmup, 1 - done)).

    DEVIATION(5.3): for a fixed budget. Eq. (3)'s warm-up ramp is kept, and its peak (the rate
    of Eq. (3) at step ``warmup``) is the ceiling, but instead of falling as step^-0.5 for ever,
    the rate is the fraction of the budget left, ``1 - done``, times that peak: it reaches zero
    when the budget is spent (``done`` = steps or training minutes done over the budget).
    Eq. (3) has no end, so a run cut at a budget stops with its rate still high.

    >>> f"{linear_lr(400, 128, 400, 0.0):.4e}", linear_lr(1, 128, 400, 1.0)
    ('4.4194e-03', 0.0)
    >>> f"{linear_lr(200, 128, 400, 0.0):.4e}", f"{linear_lr(200, 128, 400, 0.9):.4e}"
    ('2.2097e-03', '4.4194e-04')
    """
    if step < 1:
        raise ValueError(f"step: the schedule counts steps from 1, got {step}")
    return scale * d_model**-0.5 * warmup**-0.5 * max(0.0, min(step / warmup, 1.0 - done))


def learning_rate(step: int, d_model: int, cfg: TrainConfig, minutes: float = 0.0) -> float:
    """The rate of update ``step`` (from 1): Eq. (3), or ``linear_lr`` when cfg.lr_decay is
    "linear", its budget ``cfg.decay_steps`` steps or ``cfg.decay_minutes`` of training time
    (``minutes``: the run's training time so far, over all its sessions).  Section 5.3.

    >>> learning_rate(10, 512, TrainConfig()) == noam_lr(10, 512, 4000)
    True
    """
    if cfg.lr_decay == "rsqrt":
        return noam_lr(step, d_model, cfg.warmup, cfg.lr_scale)
    done = step / cfg.decay_steps if cfg.decay_steps else minutes / cfg.decay_minutes
    return linear_lr(step, d_model, cfg.warmup, done, cfg.lr_scale)


def schedule_preset(name: str, base: TrainConfig | None = None) -> TrainConfig:
    """The TrainConfig ``base`` with the optimiser/schedule settings of a named preset.

    >>> schedule_preset("t2t-2018").adam_beta2
    0.997
    """
    if name not in SCHEDULES:
        raise ValueError(f"schedule: unknown name {name!r}; known: {', '.join(SCHEDULES)}")
    return dataclasses.replace(base or TrainConfig(), **SCHEDULES[name][1])


def make_optimizer(params: Iterable[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Adam:
    """Adam(beta1, beta2, eps) without weight decay.  Section 5.3.

    The learning rate is set before every step from ``noam_lr``. The fused kernel is used where
    PyTorch has one for the device (CPU and CUDA in recent versions), else the foreach one.
    """
    params = list(params)
    kwargs: dict[str, Any] = {
        "lr": 0.0,  # replaced every step by noam_lr
        "betas": (cfg.adam_beta1, cfg.adam_beta2),
        "eps": cfg.adam_eps,
        "weight_decay": 0.0,
    }
    try:
        return torch.optim.Adam(params, fused=True, **kwargs)
    except RuntimeError:  # no fused kernel for this device or dtype
        return torch.optim.Adam(params, foreach=True, **kwargs)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Write ``lr`` into every parameter group."""
    for group in optimizer.param_groups:
        group["lr"] = lr
