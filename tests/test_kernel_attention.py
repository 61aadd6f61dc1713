"""The attention kernels of ``aiayn.kernels.attention`` equal the plain path (section 3.2.1).

Each kernel against Eq. (1) written out (``aiayn.attention``): values and gradients, in float32
(the training dtype) and float64, over padding, rows whose every key is masked, causal masks
with as many queries as keys (training) and with fewer (cached decoding); and the dispatch rule.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel

import aiayn.attention as plain
import aiayn.kernels.attention as kernels
from aiayn.attention import causal_mask, padding_mask, scaled_dot_product_attention, with_causal
from aiayn.kernels.attention import BATCHED_MAX_KEYS, batched_attention, sdpa_attention
from tests.attention_support import attention_case, keep_with_empty_rows, qkv

CPU_BACKENDS = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]  # SDPA's CPU kernels with a mask
KERNELS = [sdpa_attention, batched_attention]
TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-10}}


def _grads(out: torch.Tensor, inputs, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    return torch.autograd.grad(out, inputs, g)


@pytest.mark.parametrize("kernel", KERNELS, ids=["sdpa", "batched"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@settings(max_examples=15, deadline=None)
@given(case=attention_case())
def test_each_kernel_equals_the_plain_path_forward_and_backward(kernel, dtype, case) -> None:
    q, k, v, keep = (t if t is None or t.dtype == torch.bool else t.to(dtype) for t in case)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    ours, _ = scaled_dot_product_attention(q, k, v, keep)
    fast = kernel(q, k, v, keep)
    assert torch.isfinite(fast).all()
    torch.testing.assert_close(fast, ours, **TOL[dtype])
    for a, b in zip(_grads(fast, (q, k, v)), _grads(ours, (q, k, v)), strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize(("Lq", "Lk"), [(5, 5), (1, 5), (2, 6), (1, 1)])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("long_keys", [False, True], ids=["batched", "sdpa"])
def test_dispatch_equals_plain_attention_with_causal_masks_and_padding(
    monkeypatch, dtype, Lq: int, Lk: int, padded: bool, long_keys: bool
) -> None:
    """Query i at position Lk - Lq + i, as when decoding with a cache (Lq < Lk) or training."""
    if long_keys:  # send every case down the SDPA branch of the dispatch
        monkeypatch.setattr(kernels, "BATCHED_MAX_KEYS", 0)
    q, k, v = (t.requires_grad_() for t in qkv(Lq=Lq, Lk=Lk, dtype=dtype))
    keep = padding_mask(torch.tensor([[4] * (Lk - 1) + [0], [4] * Lk]), 0) if padded else None
    ours = plain.attention(q, k, v, keep, causal=True)  # (B, H, Lq, K)
    fast = kernels.attention(q, k, v, keep, causal=True)  # (B, H, Lq, K)
    torch.testing.assert_close(fast, ours, **TOL[dtype])
    for a, b in zip(_grads(fast, (q, k, v)), _grads(ours, (q, k, v)), strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])
    mask = causal_mask(Lk, queries=Lq)  # (Lq, Lk): the newest query sees every key
    assert bool(mask[-1].all())
    torch.testing.assert_close(with_causal(None, Lq, Lk, q.device)[0, 0], mask)


@pytest.mark.parametrize("backend", CPU_BACKENDS, ids=lambda b: b.name)
def test_sdpa_kernel_equals_plain_on_each_cpu_backend(backend: SDPBackend) -> None:
    q, k, v = qkv()
    keep = keep_with_empty_rows()
    ours, _ = scaled_dot_product_attention(q, k, v, keep)
    with sdpa_kernel(backend):
        torch.testing.assert_close(sdpa_attention(q, k, v, keep), ours, **TOL[torch.float32])
    q, k, v = qkv(Lq=5, Lk=5)
    ours, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    with sdpa_kernel(backend):
        fast = sdpa_attention(q, k, v, causal=True)  # the kernel's own causal mask
    torch.testing.assert_close(fast, ours, **TOL[torch.float32])


@pytest.mark.parametrize(
    ("kernel", "backend"),
    [*((sdpa_attention, b) for b in CPU_BACKENDS), (batched_attention, None)],
    ids=[*(f"sdpa-{b.name}" for b in CPU_BACKENDS), "batched"],
)
def test_all_masked_row_is_zero_and_finite_forward_and_backward(kernel, backend) -> None:
    q, k, v = qkv(grad=True)
    keep = keep_with_empty_rows()
    with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
        out = kernel(q, k, v, keep)
        out.square().sum().backward()
    assert torch.isfinite(out).all()
    assert torch.all(out[0, :, 1] == 0)
    for t in (q, k, v):
        assert t.grad is not None
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[0, :, 1] == 0)  # the empty row's query influences nothing


@pytest.mark.parametrize("kernel", KERNELS, ids=["sdpa", "batched"])
def test_gradcheck_kernels(kernel) -> None:
    q, k, v = qkv(B=1, H=2, Lq=3, Lk=4, K=3, dtype=torch.float64, grad=True)
    keep = keep_with_empty_rows(B=1, H=2, Lq=3, Lk=4)
    assert torch.autograd.gradcheck(lambda q, k, v: kernel(q, k, v, keep), (q, k, v))
    assert torch.autograd.gradcheck(
        lambda q, k, v: kernels.attention(q, k, v, causal=True), (q, k[:, :, :3], v[:, :, :3])
    )


@settings(max_examples=10, deadline=None)
@given(case=attention_case(), dropout=st.sampled_from([0.0, 0.1]))
def test_dispatch_picks_batched_for_short_keys_on_the_cpu_and_sdpa_otherwise(
    case, dropout: float
) -> None:
    calls: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        for name, tag in (("batched_attention", "b"), ("sdpa_attention", "s")):
            fn = getattr(kernels, name)
            mp.setattr(
                kernels, name, lambda *a, _f=fn, _t=tag, **kw: calls.append(_t) or _f(*a, **kw)
            )
        q, k, v, keep = case
        kernels.attention(q, k, v, keep, dropout_p=dropout)
        q, k, v = qkv(Lk=BATCHED_MAX_KEYS + 1)
        kernels.attention(q, k, v)  # long keys: the flash kernel keeps memory linear in Lk
    assert calls == ["s" if dropout else "b", "s"]
