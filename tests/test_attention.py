"""Tests of section 3.2: Eq. (1), multi-head attention, masks.

Differential (F.scaled_dot_product_attention, nn.MultiheadAttention with copied weights),
properties (rows sum to 1, fused == explicit), gradients (gradcheck in float64), and the
NaN trap of rows whose every key is masked.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from torch import nn
from torch.func import functional_call
from torch.nn.attention import SDPBackend, sdpa_kernel

import aiayn.attention
from aiayn.attention import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from aiayn.kernels.attention import attention as fast_attention
from tests.attention_support import attention_case, keep_with_empty_rows, qkv

# The CPU backends of F.scaled_dot_product_attention that accept a boolean mask.
CPU_BACKENDS = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]


def test_causal_mask_is_true_on_and_below_the_diagonal() -> None:
    keep = causal_mask(4)  # (4, 4)
    assert keep.dtype == torch.bool
    for i in range(4):
        for j in range(4):
            assert bool(keep[i, j]) == (j <= i)


def test_padding_mask_marks_real_tokens_true_and_broadcasts() -> None:
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])  # (B, L)
    keep = padding_mask(ids, pad_id=0)  # (B, 1, 1, L)
    assert keep.shape == (2, 1, 1, 3)
    assert keep[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    # Another pad id: the mask follows it, not the value 0.
    assert padding_mask(ids, pad_id=5)[:, 0, 0].tolist() == [[False, True, True], [True] * 3]


# Eq. (1): the explicit path ------------------------------------------------------------------


def test_explicit_attention_equals_an_einsum_reference_scaled_by_sqrt_dk() -> None:
    """softmax(Q K^T / sqrt(d_k)) V with d_k = 4 (not sqrt(d_model), not unscaled)."""
    q, k, v = qkv(K=4)
    out, weights = scaled_dot_product_attention(q, k, v)
    ref_w = (torch.einsum("bhik,bhjk->bhij", q, k) / math.sqrt(4)).softmax(-1)  # (B, H, Lq, Lk)
    torch.testing.assert_close(weights, ref_w)
    torch.testing.assert_close(out, torch.einsum("bhij,bhjk->bhik", ref_w, v))
    wrong = (torch.einsum("bhik,bhjk->bhij", q, k) / math.sqrt(8)).softmax(-1)  # sqrt(H K)
    assert not torch.allclose(weights, wrong, atol=1e-3)


def test_explicit_attention_records_scores_before_and_after_masking() -> None:
    q, k, v = qkv()
    keep = keep_with_empty_rows()
    rec: dict[str, torch.Tensor] = {}
    scaled_dot_product_attention(q, k, v, keep, record=rec)
    torch.testing.assert_close(rec["scores"], q @ k.transpose(-2, -1) / 2.0)
    assert torch.equal(rec["scores_masked"].isneginf(), ~keep)
    assert torch.equal(rec["scores_masked"][keep], rec["scores"][keep])


def test_masked_keys_get_zero_weight_and_do_not_change_the_output() -> None:
    q, k, v = qkv(Lk=5)
    keep = torch.tensor([True, True, True, False, False])  # (Lk,): the last two are padding
    out, weights = scaled_dot_product_attention(q, k, v, keep)
    assert torch.all(weights[..., 3:] == 0)
    # The same as attending over the first three keys only.
    ref, _ = scaled_dot_product_attention(q, k[:, :, :3], v[:, :, :3])
    torch.testing.assert_close(out, ref)
    # Changing the masked values changes nothing.
    v2 = v.clone()
    v2[:, :, 3:] = 100.0
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v2, keep)[0], out)


# Differential: explicit vs F.scaled_dot_product_attention ---------------------------------


@pytest.mark.parametrize("backend", CPU_BACKENDS, ids=lambda b: b.name)
def test_explicit_equals_torch_sdpa(backend: SDPBackend) -> None:
    q, k, v = qkv()
    keep = keep_with_empty_rows()
    ours, _ = scaled_dot_product_attention(q, k, v, keep)
    with sdpa_kernel(backend):
        torch_out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # True = may attend
    torch.testing.assert_close(ours, torch_out, atol=1e-5, rtol=1e-5)
    # The polarity matters: the inverted mask gives another answer.
    with sdpa_kernel(backend):
        inverted = F.scaled_dot_product_attention(q, k, v, attn_mask=~keep)
    assert not torch.allclose(torch.nan_to_num(inverted), ours, atol=1e-3)


# The NaN trap: rows whose every key is masked ----------------------------------------------


def test_all_masked_row_is_zero_and_finite_on_the_explicit_path_forward_and_backward() -> None:
    q, k, v = qkv(grad=True)
    keep = keep_with_empty_rows()
    out, weights = scaled_dot_product_attention(q, k, v, keep)
    assert torch.isfinite(out).all()
    assert torch.isfinite(weights).all()
    assert torch.all(out[0, :, 1] == 0)
    assert torch.all(weights[0, :, 1] == 0)
    (out.square().sum() + weights.sum()).backward()
    for t in (q, k, v):
        assert t.grad is not None
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[0, :, 1] == 0)  # the empty row's query influences nothing


def test_all_masked_source_in_multi_head_cross_attention_is_finite_on_both_paths() -> None:
    """A source row that is all padding: cross-attention returns zeros, never NaN."""
    for fused in (True, False):
        torch.manual_seed(0)
        mha = (
            MultiHeadAttention(8, 2, 4, attend=fast_attention)
            if fused
            else MultiHeadAttention(8, 2, 4)
        )
        x = torch.randn(2, 3, 8, requires_grad=True)  # (B, T, D)
        memory = torch.randn(2, 4, 8, requires_grad=True)  # (B, S, D)
        keep = padding_mask(torch.tensor([[5, 6, 0, 0], [0, 0, 0, 0]]), 0)  # (B, 1, 1, S)
        out = mha(x, memory, keep)  # (B, T, D)
        out.sum().backward()
        assert torch.isfinite(out).all(), fused
        assert torch.all(out[1] == 0), fused
        assert torch.isfinite(x.grad).all(), fused
        assert torch.isfinite(memory.grad).all(), fused


# Properties ----------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(attention_case())
def test_attention_rows_sum_to_one_or_zero_when_all_keys_are_masked(case) -> None:
    q, k, v, keep = case
    _, weights = scaled_dot_product_attention(q, k, v, keep)
    sums = weights.sum(-1)  # (B, H, Lq)
    if keep is None:
        torch.testing.assert_close(sums, torch.ones_like(sums))
    else:
        any_key = keep.expand_as(weights).any(-1)  # (B, H, Lq)
        torch.testing.assert_close(sums, any_key.float())
        assert torch.all(weights[~keep.expand_as(weights)] == 0)


# MultiHeadAttention --------------------------------------------------------------------------


def _torch_mha(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    """nn.MultiheadAttention holding our weights.

    Its in_proj_weight is (3 D, D) in (out, in) orientation (y = x W^T): ours is w_qkv (D, 3 H K)
    in the paper's x @ W orientation, so in_proj_weight = w_qkv^T, out_proj.weight = w_o^T. Both
    split the projection head-major (head i in columns i K to (i + 1) K).
    """
    bias = ours.b_qkv is not None
    ref = nn.MultiheadAttention(ours.d_model, ours.n_heads, bias=bias, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.w_qkv.t())  # (3 D, D)
        ref.out_proj.weight.copy_(ours.w_o.t())  # (D, D)
        if bias:
            ref.in_proj_bias.copy_(ours.b_qkv)
            ref.out_proj.bias.copy_(ours.b_o)
    return ref.train()  # train mode with dropout 0: no eval-mode fast path


@pytest.mark.parametrize("bias", [False, True])
def test_self_attention_equals_nn_multihead_attention_with_key_padding(bias: bool) -> None:
    mha = MultiHeadAttention(8, 2, 4, bias=bias)
    if bias:
        with torch.no_grad():
            mha.b_qkv.normal_()
            mha.b_o.normal_()
    ref = _torch_mha(mha)
    x = torch.randn(2, 5, 8)  # (B, L, D)
    ids = torch.tensor([[4, 5, 6, 7, 8], [4, 5, 6, 0, 0]])  # (B, L): row 1 has two pads
    keep = padding_mask(ids, 0)  # (B, 1, 1, L): True = may attend
    rec: dict[str, torch.Tensor] = {}
    ours = mha(x, keep=keep, record=rec)  # (B, L, D)
    # nn.MultiheadAttention: key_padding_mask True = blocked; convert at the boundary.
    theirs, their_w = ref(x, x, x, key_padding_mask=~keep[:, 0, 0], average_attn_weights=False)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rec["weights"], their_w, atol=1e-6, rtol=1e-5)
    # Without the conversion the result is wrong: the polarity trap is real.
    wrong, _ = ref(x, x, x, key_padding_mask=keep[:, 0, 0])
    assert not torch.allclose(torch.nan_to_num(wrong), ours, atol=1e-3)


def test_causal_self_attention_equals_nn_multihead_attention_with_attn_mask() -> None:
    mha = MultiHeadAttention(8, 2, 4)
    ref = _torch_mha(mha)
    x = torch.randn(2, 4, 8)  # (B, T, D)
    ours = mha(x, causal=True)  # (B, T, D)
    theirs, _ = ref(x, x, x, attn_mask=~causal_mask(4))  # bool attn_mask: True = blocked
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    wrong, _ = ref(x, x, x, attn_mask=causal_mask(4))
    assert not torch.allclose(wrong, ours, atol=1e-3)


def test_cross_attention_equals_nn_multihead_attention() -> None:
    mha = MultiHeadAttention(8, 2, 4)
    ref = _torch_mha(mha)
    y = torch.randn(2, 3, 8)  # (B, T, D)
    memory = torch.randn(2, 5, 8)  # (B, S, D)
    src = torch.tensor([[4, 5, 6, 7, 2], [4, 2, 0, 0, 0]])  # (B, S)
    ours = mha(y, memory, padding_mask(src, 0))  # (B, T, D)
    theirs, _ = ref(y, memory, memory, key_padding_mask=src == 0)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_multi_head_attention_scales_by_sqrt_dk_not_sqrt_dmodel() -> None:
    """d_model 8, h 2, d_k 3: sqrt(d_k) = 1.73, sqrt(d_model) = 2.83, sqrt(d_model / h) = 2."""
    mha = MultiHeadAttention(8, 2, 3)
    x = torch.randn(1, 4, 8)  # (B, L, D)
    rec: dict[str, torch.Tensor] = {}
    mha(x, record=rec)
    q = (x @ mha.w_q).view(1, 4, 2, 3).transpose(1, 2)  # (B, H, L, K)
    k = (x @ mha.w_k).view(1, 4, 2, 3).transpose(1, 2)  # (B, H, L, K)
    torch.testing.assert_close(rec["Q"], q)
    torch.testing.assert_close(rec["scores"], q @ k.transpose(-2, -1) / math.sqrt(3))


def test_multi_head_is_concat_of_heads_times_w_o() -> None:
    """MultiHead = Concat(head_1..head_h) W^O, head_i from its own column block of W^Q, W^K, W^V."""
    D, H, K = 8, 2, 4
    mha = MultiHeadAttention(D, H, K)
    x = torch.randn(1, 3, D)  # (B, L, D)
    heads = []
    for i in range(H):
        cols = slice(i * K, (i + 1) * K)
        qi, ki, vi = x @ mha.w_q[:, cols], x @ mha.w_k[:, cols], x @ mha.w_v[:, cols]  # (B, L, K)
        heads.append((qi @ ki.transpose(-2, -1) / math.sqrt(K)).softmax(-1) @ vi)  # (B, L, K)
    ref = torch.cat(heads, dim=-1) @ mha.w_o  # (B, L, D)
    torch.testing.assert_close(mha(x), ref, atol=1e-5, rtol=1e-5)


def test_table3_row_b_head_sizes_dv_differs_from_dk() -> None:
    mha = MultiHeadAttention(8, 2, d_k=3, d_v=5)
    assert mha.w_qkv.shape == (8, 2 * 3 + 2 * 3 + 2 * 5)
    assert mha.w_o.shape == (10, 8)
    x = torch.randn(2, 4, 8)  # (B, L, D)
    rec: dict[str, torch.Tensor] = {}
    out = mha(x, causal=True, record=rec)
    assert out.shape == (2, 4, 8)
    assert rec["V"].shape == (2, 2, 4, 5)
    assert rec["concat"].shape == (2, 4, 10)
    torch.testing.assert_close(MultiHeadAttention.forward(mha, x, causal=True), out)


@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_fast_equals_recorded_explicit_path(cross: bool) -> None:
    mha = MultiHeadAttention(8, 2, 4, attend=fast_attention)
    x = torch.randn(2, 4, 8)  # (B, T, D)
    memory = torch.randn(2, 5, 8) if cross else None  # (B, S, D)
    keep = padding_mask(torch.tensor([[4, 5, 6, 7, 2], [4, 2, 0, 0, 0]]), 0) if cross else None
    rec: dict[str, torch.Tensor] = {}
    fused = mha(x, memory, keep, causal=not cross)  # (B, T, D)
    explicit = mha(x, memory, keep, causal=not cross, record=rec)  # (B, T, D)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rec["M"], explicit)
    mha.attend = aiayn.attention.attention  # the plain path, unrecorded
    torch.testing.assert_close(mha(x, memory, keep, causal=not cross), explicit)


@pytest.mark.parametrize("fused", [False, True])
def test_self_attention_cache_one_step_at_a_time_equals_full_causal(fused: bool) -> None:
    mha = MultiHeadAttention(8, 2, 4, attend=fast_attention if fused else aiayn.attention.attention)
    x = torch.randn(2, 5, 8)  # (B, T, D)
    full = mha(x, causal=True)  # (B, T, D)
    cache: dict[str, torch.Tensor] = {}
    steps = [mha(x[:, t : t + 1], causal=True, cache=cache) for t in range(5)]  # (B, 1, D) each
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    assert cache["k"].shape == (2, 2, 5, 4)
    # In chunks of 2, 3 (the query block sits at the end of the key sequence).
    cache = {}
    chunks = [mha(x[:, :2], causal=True, cache=cache), mha(x[:, 2:], causal=True, cache=cache)]
    torch.testing.assert_close(torch.cat(chunks, 1), full, atol=1e-5, rtol=1e-5)


def test_cross_attention_cache_projects_the_memory_once() -> None:
    mha = MultiHeadAttention(8, 2, 4)
    y, memory = torch.randn(1, 2, 8), torch.randn(1, 3, 8)  # (B, T, D), (B, S, D)
    cache: dict[str, torch.Tensor] = {}
    first = mha(y, memory, cache=cache)
    k_cached = cache["k"]
    # A changed memory is ignored once cached: K and V were computed once per source.
    again = mha(y, memory + 1.0, cache=cache)
    assert cache["k"] is k_cached
    torch.testing.assert_close(again, first)


# Gradients (float64 gradcheck on tiny shapes) ----------------------------------------------


def test_gradcheck_explicit_attention_with_mask_and_an_empty_row() -> None:
    q, k, v = qkv(B=1, H=2, Lq=3, Lk=4, K=3, dtype=torch.float64, grad=True)
    keep = keep_with_empty_rows(B=1, H=2, Lq=3, Lk=4)
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, keep)[0], (q, k, v)
    )


@pytest.mark.parametrize("fused", [False, True])
def test_gradcheck_multi_head_attention(fused: bool) -> None:
    attend = fast_attention if fused else aiayn.attention.attention
    mha = MultiHeadAttention(4, 2, 2, bias=True, attend=attend).double()
    x = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)  # (B, T, D)
    memory = torch.randn(1, 2, 4, dtype=torch.float64, requires_grad=True)  # (B, S, D)
    params = {n: p.detach().clone().requires_grad_() for n, p in mha.named_parameters()}
    names = list(params)

    def self_then_cross(x, memory, *ps):
        p = dict(zip(names, ps, strict=True))
        h = functional_call(mha, p, (x,), {"causal": True})  # (B, T, D)
        return functional_call(mha, p, (h, memory))  # (B, T, D)

    assert torch.autograd.gradcheck(self_then_cross, (x, memory, *params.values()))
