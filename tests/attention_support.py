"""Shared attention inputs for tests/test_attention.py and tests/test_kernel_attention.py."""

from __future__ import annotations

import torch
from hypothesis import strategies as st


def qkv(B=2, H=2, Lq=3, Lk=5, K=4, dtype=torch.float32, grad=False):
    q = torch.randn(B, H, Lq, K, dtype=dtype, requires_grad=grad)  # (B, H, Lq, K)
    k = torch.randn(B, H, Lk, K, dtype=dtype, requires_grad=grad)  # (B, H, Lk, K)
    v = torch.randn(B, H, Lk, K, dtype=dtype, requires_grad=grad)  # (B, H, Lk, K)
    return q, k, v


def keep_with_empty_rows(B=2, H=2, Lq=3, Lk=5) -> torch.Tensor:
    """A random keep-mask where query 1 of batch 0 (all heads) may attend to nothing."""
    g = torch.Generator().manual_seed(1)
    keep = torch.rand(B, H, Lq, Lk, generator=g) > 0.4  # (B, H, Lq, Lk)
    keep[:, :, :, 0] = True  # every other row keeps at least one key
    keep[0, :, 1, :] = False  # an all-masked row
    return keep


# Masks -------------------------------------------------------------------------------------


@st.composite
def attention_case(draw):
    B, H = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    Lq, Lk, K = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, Lq, K, generator=g)  # (B, H, Lq, K)
    k = torch.randn(B, H, Lk, K, generator=g)  # (B, H, Lk, K)
    v = torch.randn(B, H, Lk, K, generator=g)  # (B, H, Lk, K)
    shape = draw(st.sampled_from(["full", "keys", "none"]))
    if shape == "full":
        keep = torch.rand(B, H, Lq, Lk, generator=g) > draw(st.floats(0.0, 1.0))
    elif shape == "keys":
        keep = torch.rand(B, 1, 1, Lk, generator=g) > draw(st.floats(0.0, 1.0))
    else:
        keep = None
    return q, k, v, keep
