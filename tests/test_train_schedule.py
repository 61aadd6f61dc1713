"""Eq. (3) and Adam (section 5.3): the paper's anchors, the peak, the named presets."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aiayn.config import TrainConfig
from aiayn.train.schedule import (
    SCHEDULES,
    learning_rate,
    make_optimizer,
    noam_lr,
    schedule_preset,
)


# Test anchors of spec/paper.md (section 5.3), computed from Eq. (3).
@pytest.mark.parametrize(
    ("step", "expected"),
    [(1, 1.7469e-7), (1000, 1.7469e-4), (4000, 6.9877e-4), (8000, 4.9411e-4), (100000, 1.3975e-4)],
)
def test_base_anchors(step: int, expected: float) -> None:
    assert noam_lr(step, 512, 4000) == pytest.approx(expected, rel=1e-4)


def test_big_peak() -> None:
    assert noam_lr(4000, 1024, 4000) == pytest.approx(4.9411e-4, rel=1e-4)


def test_steps_count_from_one() -> None:
    with pytest.raises(ValueError, match="from 1"):
        noam_lr(0, 512, 4000)


@given(
    warmup=st.integers(1, 20000),
    d_model=st.sampled_from([64, 512, 1024]),
    scale=st.floats(0.1, 10.0),
)
def test_peak_at_warmup(warmup: int, d_model: int, scale: float) -> None:
    lrs = [noam_lr(s, d_model, warmup, scale) for s in (warmup - 1, warmup, warmup + 1) if s >= 1]
    peak = noam_lr(warmup, d_model, warmup, scale)
    assert max(lrs) == peak
    assert peak == pytest.approx(scale * (d_model * warmup) ** -0.5)
    # linear before the peak, step^-0.5 after it
    if warmup >= 2:
        assert noam_lr(warmup // 2, d_model, warmup, scale) == pytest.approx(
            peak * (warmup // 2) / warmup
        )
    assert noam_lr(4 * warmup, d_model, warmup, scale) == pytest.approx(peak / 2)


def test_presets() -> None:
    base = TrainConfig()
    for name in ("paper", "t2t-v1"):  # the paper-era release is the paper
        cfg = schedule_preset(name)
        assert (cfg.warmup, cfg.lr_scale, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps) == (
            4000,
            1.0,
            0.9,
            0.98,
            1e-9,
        )
    v125 = schedule_preset("t2t-v1.2.5")
    assert (v125.warmup, v125.lr_scale, v125.adam_beta2) == (8000, 2.0, 0.98)
    t18 = schedule_preset("t2t-2018")
    assert (t18.warmup, t18.lr_scale, t18.adam_beta2) == (8000, 2.0, 0.997)
    # The v1.2.5 peak: twice the rate at twice the warm-up is sqrt(2) times the paper's peak.
    peak = noam_lr(v125.warmup, 512, v125.warmup, v125.lr_scale)
    assert peak == pytest.approx(math.sqrt(2) * noam_lr(4000, 512, 4000))
    assert set(SCHEDULES) == {"paper", "t2t-v1", "t2t-v1.2.5", "t2t-2018"}
    # A preset keeps every other field of the base config.
    custom = schedule_preset("t2t-2018", TrainConfig(max_steps=7))
    assert custom.max_steps == 7
    assert base.max_steps == 100_000
    with pytest.raises(ValueError, match="unknown"):
        schedule_preset("nope")


def test_adam_settings_and_fused_equals_plain() -> None:
    """The fused Adam kernel equals the plain for-loop Adam (style: no silent fast path)."""
    cfg = TrainConfig()
    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(4))]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    fast = make_optimizer(a, cfg)
    plain = torch.optim.Adam(b, lr=0.0, betas=(0.9, 0.98), eps=1e-9, foreach=False, fused=False)
    group = fast.param_groups[0]
    assert group["betas"] == (0.9, 0.98)
    assert group["eps"] == 1e-9
    assert group["weight_decay"] == 0
    for step in range(1, 6):
        for opt in (fast, plain):
            for g in opt.param_groups:
                g["lr"] = noam_lr(step, 512, 4, 1.0)
        grads = [torch.randn_like(p) for p in a]
        for p, q, g in zip(a, b, grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        fast.step()
        plain.step()
    for p, q in zip(a, b, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


# DEVIATION(5.3) lr_decay "linear": the warm-up of Eq. (3), then to zero at the budget's end.
@given(
    warmup=st.integers(1, 2000),
    d_model=st.sampled_from([64, 128, 512]),
    extra=st.integers(1, 20000),
)
def test_linear_decay_never_exceeds_the_peak_and_ends_at_zero(
    warmup: int, d_model: int, extra: int
) -> None:
    total = warmup + extra
    cfg = TrainConfig(warmup=warmup, lr_decay="linear", decay_steps=total)
    peak = noam_lr(warmup, d_model, warmup)
    lrs = [learning_rate(s, d_model, cfg) for s in range(1, total + 1, max(1, total // 97))]
    assert max(lrs) <= peak * (1 + 1e-12)
    assert learning_rate(total, d_model, cfg) == 0.0
    assert learning_rate(total + 5, d_model, cfg) == 0.0  # past the budget: stays at zero


def test_linear_decay_values() -> None:
    """Ramp while step / warmup < 1 - done, then the share of the budget left, times the peak."""
    cfg = TrainConfig(warmup=100, lr_decay="linear", decay_steps=1000)
    peak = noam_lr(100, 128, 100)
    assert learning_rate(50, 128, cfg) == pytest.approx(0.5 * peak)  # the ramp of Eq. (3)
    assert learning_rate(50, 128, cfg) == pytest.approx(noam_lr(50, 128, 100))
    assert learning_rate(500, 128, cfg) == pytest.approx(0.5 * peak)  # half the budget left
    assert learning_rate(900, 128, cfg) == pytest.approx(0.1 * peak)
    assert learning_rate(900, 128, cfg) < noam_lr(900, 128, 100)  # below Eq. (3)'s decay
    # A budget in minutes: the training time so far decides, not the step.
    by_time = TrainConfig(warmup=100, lr_decay="linear", decay_minutes=60.0)
    assert learning_rate(500, 128, by_time, minutes=45.0) == pytest.approx(0.25 * peak)
    assert learning_rate(500, 128, by_time, minutes=0.0) == pytest.approx(peak)
    scaled = TrainConfig(warmup=100, lr_scale=0.5, lr_decay="linear", decay_steps=1000)
    assert learning_rate(500, 128, scaled) == pytest.approx(0.25 * peak)
    # The default is Eq. (3) itself.
    assert learning_rate(900, 128, TrainConfig(warmup=100)) == noam_lr(900, 128, 100)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"lr_decay": "linear"}, "exactly one of decay_steps and decay_minutes"),
        (
            {"lr_decay": "linear", "decay_steps": 5000, "decay_minutes": 60.0},
            "exactly one of decay_steps and decay_minutes",
        ),
        ({"decay_steps": 5000}, "for lr_decay linear"),
        ({"decay_minutes": 60.0}, "for lr_decay linear"),
        ({"lr_decay": "linear", "decay_steps": 4000}, "above warmup=4000"),
        ({"lr_decay": "cosine"}, "must be rsqrt or linear"),
        ({"lr_decay": "linear", "decay_minutes": -1.0}, "decay_minutes: must be >= 0"),
    ],
)
def test_linear_decay_needs_exactly_one_budget(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**fields)
