"""The exercises of notebooks 1-4: embeddings and positions, attention, the encoder layer, the
decoder's masks and cross-attention.  Sections 3.1-3.5.

Each reference is aiayn's own function (``aiayn.model``, ``aiayn.attention``, the NumPy twin,
the walkthrough); each mistake is the wrong function a learner often writes.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from aiayn import numpy_twin as twin
from aiayn.attention import MultiHeadAttention, causal_mask, padding_mask
from aiayn.attention import scaled_dot_product_attention as sdpa
from aiayn.course.checker import Case, Exercise, Mistake
from aiayn.course.note import f32, gen, given_case, note, note_case, randn, random_case, weights
from aiayn.model import feed_forward as aiayn_ffn
from aiayn.model import sinusoidal_positions
from aiayn.walkthrough.positions import rotation

D64 = torch.float64


def _t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))


# --- Notebook 1: embeddings and positions (3.4, 3.5) ------------------------------------------


def _embedding_cases() -> list[Case]:
    n = note()
    ex = n["ex"]
    g = gen(1)
    ids = torch.randint(0, 50, (2, 7), generator=g)
    return [
        note_case(ex.src.clone(), f32(n["model"].embedding)),
        random_case("ids (2, 7), E (50, 16)", ids, randn(g, 50, 16, scale=0.25)),
    ]


def _embed_ref(ids: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    x, _ = twin.embed_forward(ids.numpy(), E.double().numpy())  # sqrt(d) E[ids] + PE
    return _t(x)


def _pe(n: int, d: int) -> torch.Tensor:
    return sinusoidal_positions(n, d, dtype=D64)


EMBED = Exercise(
    "input_embedding",
    1,
    _embed_ref,
    _embedding_cases,
    {"en": "X = sqrt(d_model) * E[ids] + PE, shape (B, L, d_model)",
     "zh": "X = sqrt(d_model) * E[ids] + PE，形状 (B, L, d_model)"},
    (
        Mistake("not_scaled", lambda ids, E: E.double()[ids] + _pe(ids.size(1), E.size(1))),
        Mistake("no_positions", lambda ids, E: E.double()[ids] * math.sqrt(E.size(1))),
    ),
)  # fmt: skip


def _pe_cases() -> list[Case]:
    return [note_case(4, 6), random_case("50 positions, d_model 16", 50, 16)]


def _angles(n: int, d: int, two_i: bool = True) -> torch.Tensor:
    i = torch.arange(d // 2, dtype=D64)
    inv = 10000.0 ** (-(2 * i if two_i else i) / d)  # (D/2,)
    return torch.arange(n, dtype=D64)[:, None] * inv[None, :]  # (L, D/2)


def _interleave(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.stack([a, b], dim=-1).flatten(1)


PE = Exercise(
    "positional_encoding",
    1,
    lambda n, d: sinusoidal_positions(n, d, dtype=D64),
    _pe_cases,
    {"en": "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same), "
           "shape (n_positions, d_model)",
     "zh": "PE[pos, 2i] = sin(pos / 10000^(2i/d_model))、PE[pos, 2i+1] = cos(同一角度)，"
           "形状 (n_positions, d_model)"},
    (
        Mistake("pe_swapped", lambda n, d: _interleave(_angles(n, d).cos(), _angles(n, d).sin())),
        Mistake("pe_not_interleaved",
                lambda n, d: torch.cat([_angles(n, d).sin(), _angles(n, d).cos()], dim=-1)),
        Mistake("pe_not_interleaved",
                lambda n, d: torch.cat([_angles(n, d).cos(), _angles(n, d).sin()], dim=-1)),
        Mistake("pe_exponent_i",
                lambda n, d: _interleave(_angles(n, d, False).sin(), _angles(n, d, False).cos())),
    ),
)  # fmt: skip


ROTATION = Exercise(
    "pe_rotation",
    1,
    lambda k, d: _t(rotation(k, d)),
    lambda: [given_case("k = 1, d_model = 6", 1, 6), given_case("k = 5, d_model = 16", 5, 16)],
    {"en": "R_k (d_model, d_model) with PE[pos + k] = R_k @ PE[pos]: one 2x2 block "
           "[[cos wk, sin wk], [-sin wk, cos wk]] per pair of dimensions",
     "zh": "R_k（形状 (d_model, d_model)），使 PE[pos + k] = R_k @ PE[pos]：每对维度一个 2x2 块 "
           "[[cos wk, sin wk], [-sin wk, cos wk]]"},
    (Mistake("rotation_backwards", lambda k, d: _t(rotation(k, d).T)),),
)  # fmt: skip


# --- Notebook 2: attention (3.2.1, 3.2.2) -----------------------------------------------------


def _qkv_cases(masks: bool = False) -> list[Case]:
    a = note()["trace"].encoder[0]["attn"]
    d = note()["trace"].decoder[0]["self_attn"]
    g = gen(2)
    q, k, v = randn(g, 2, 4, 5, 8), randn(g, 2, 4, 7, 8), randn(g, 2, 4, 7, 8)
    if not masks:
        return [note_case(f32(a["Q"]), f32(a["K"])), random_case("Q (2, 4, 5, 8), K (2, 4, 7, 8)",
                                                                 q, k)]  # fmt: skip
    keep = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    keep[1, ..., 4:] = False  # sentence 2: 3 padding keys
    return [
        note_case(f32(d["Q"]), f32(d["K"]), f32(d["V"]), causal_mask(4)[None, None]),
        random_case("Q (2, 4, 5, 8), K, V (2, 4, 7, 8), padding", q, k, v, keep),
    ]


def _scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    rec: dict[str, torch.Tensor] = {}
    sdpa(q.double(), k.double(), k.double(), record=rec)
    return rec["scores"]


SCORES = Exercise(
    "attention_scores",
    2,
    _scores,
    _qkv_cases,
    {"en": "S = Q K^T / sqrt(d_k), shape (B, H, Lq, Lk)",
     "zh": "S = Q K^T / sqrt(d_k)，形状 (B, H, Lq, Lk)"},
    (
        Mistake("no_scale", lambda q, k: q.double() @ k.double().transpose(-2, -1)),
        Mistake("scale_d_k", lambda q, k: q.double() @ k.double().transpose(-2, -1) / q.size(-1)),
    ),
)  # fmt: skip


def _softmax_cases() -> list[Case]:
    g = gen(3)
    big = randn(g, 3, 6, scale=400.0)  # exp(400) overflows float32
    return [
        note_case(f32(note()["trace"].encoder[0]["attn"]["scores"][0, 0])),
        random_case("S (2, 3, 5, 5)", randn(g, 2, 3, 5, 5)),
        random_case("S (3, 6), entries in the hundreds", big),
    ]


def _naive_softmax(s: torch.Tensor) -> torch.Tensor:
    e = s.exp()  # float32: inf for large scores
    return (e / e.sum(dim=-1, keepdim=True)).double()


SOFTMAX = Exercise(
    "softmax_rows",
    2,
    lambda s: _t(twin.softmax_forward(s.double().numpy())),
    _softmax_cases,
    {"en": "A = softmax(S) over each row (the last axis): exp(S_ij) / sum_j exp(S_ij)",
     "zh": "A = softmax(S)，对每一行（最后一维）：exp(S_ij) / sum_j exp(S_ij)"},
    (
        Mistake("softmax_axis", lambda s: s.double().softmax(dim=-2)),
        Mistake("softmax_overflow", _naive_softmax),
    ),
)  # fmt: skip


def _attention_ref(q, k, v, keep):
    out, w = sdpa(q.double(), k.double(), v.double(), keep)
    return out, w


def _mask_after(q, k, v, keep):
    s = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.size(-1))
    w = s.softmax(dim=-1) * keep
    return w @ v.double(), w


def _mask_inverted(q, k, v, keep):
    return _attention_ref(q, k, v, ~keep)


ATTENTION = Exercise(
    "masked_attention",
    4,
    _attention_ref,
    lambda: _qkv_cases(masks=True),
    {"en": "(O, A): A = softmax(S with -inf where keep is False), O = A V; "
           "shapes (B, H, Lq, d_k) and (B, H, Lq, Lk)",
     "zh": "(O, A)：A = softmax(把 keep 为 False 处设成 -inf 的 S)，O = A V；"
           "形状 (B, H, Lq, d_k) 和 (B, H, Lq, Lk)"},
    (Mistake("mask_after_softmax", _mask_after), Mistake("mask_inverted", _mask_inverted)),
)  # fmt: skip


def _mha(x, mem, W_Q, W_K, W_V, W_O, h, keep=None, causal=False, record=None):
    """aiayn's MultiHeadAttention with the given weights, in float64."""
    D = x.size(-1)
    mha = MultiHeadAttention(D, h, W_Q.size(1) // h).double()
    with torch.no_grad():
        mha.w_qkv.copy_(torch.cat([W_Q, W_K, W_V], dim=1).double())
        mha.w_o.copy_(W_O.double())
        mem = None if mem is None else mem.double()
        return mha(x.double(), mem, keep=keep, causal=causal, record=record)


def _split_ref(x: torch.Tensor, h: int) -> torch.Tensor:
    rec: dict[str, torch.Tensor] = {}
    eye = torch.eye(x.size(-1), dtype=D64)
    _mha(x, None, eye, eye, eye, eye, h, record=rec)
    return rec["Q"]  # x W^Q with W^Q = I, split per head


SPLIT = Exercise(
    "split_heads",
    2,
    _split_ref,
    lambda: [
        note_case(f32(note()["trace"].X_E), 2),
        random_case("X (2, 5, 12), h = 3", randn(gen(4), 2, 5, 12), 3),
    ],
    {"en": "X (B, L, d_model) -> (B, H, L, d_k), head i taking columns i d_k .. (i + 1) d_k - 1",
     "zh": "X (B, L, d_model) -> (B, H, L, d_k)，第 i 个头取第 i d_k 到 (i + 1) d_k - 1 列"},
    (Mistake("no_transpose", lambda x, h: x.double().reshape(x.size(0), h, x.size(1), -1)),),
)  # fmt: skip


def _mha_cases() -> list[Case]:
    n = note()
    w = weights(n["model"], "enc")
    g = gen(5)
    ws = [randn(g, 16, 16, scale=0.3) for _ in range(4)]
    return [
        note_case(f32(n["trace"].X_E), w["W_Q"], w["W_K"], w["W_V"], w["W_O"], w["h"]),
        random_case("X (2, 5, 16), h = 4", randn(g, 2, 5, 16), *ws, 4),
    ]


def _mha_scaled(x, W_Q, W_K, W_V, W_O, h, scale_by_d_model=True, w_o=True, heads=True):
    x = x.double()
    B, L, D = x.shape
    hh = h if heads else 1

    def split(w):
        return (x @ w.double()).view(B, L, hh, -1).transpose(1, 2)  # (B, H, L, K)

    q, k, v = split(W_Q), split(W_K), split(W_V)
    d = D if scale_by_d_model else q.size(-1)
    a = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(dim=-1)  # (B, H, L, L)
    concat = (a @ v).transpose(1, 2).reshape(B, L, -1)  # (B, L, H K)
    return concat @ W_O.double() if w_o else concat


MHA = Exercise(
    "multi_head_attention",
    2,
    lambda x, W_Q, W_K, W_V, W_O, h: _mha(x, None, W_Q, W_K, W_V, W_O, h),
    _mha_cases,
    {"en": "M = Concat(head_1..head_h) W^O with head_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i, "
           "Q = X W^Q split into h heads; shape (B, L, d_model)",
     "zh": "M = Concat(head_1..head_h) W^O，其中 head_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i，"
           "Q = X W^Q 再分成 h 个头；形状 (B, L, d_model)"},
    (
        Mistake("sqrt_d_model", _mha_scaled),
        Mistake("no_w_o", lambda *a: _mha_scaled(*a, scale_by_d_model=False, w_o=False)),
        Mistake("one_head", lambda *a: _mha_scaled(*a, scale_by_d_model=True, heads=False)),
    ),
)  # fmt: skip


# --- Notebook 3: residual, LayerNorm, FFN: one encoder layer (3.1, 3.3) ------------------------


def _ln_cases() -> list[Case]:
    n = note()
    enc = n["model"].encoder[0]
    g = gen(6)
    return [
        note_case(f32(n["trace"].encoder[0]["R_E"]), f32(enc.norm1.weight), f32(enc.norm1.bias),
                  1e-5),
        random_case("x (2, 5, 8), eps 1e-5", randn(g, 2, 5, 8, scale=3.0) + 1.0,
                    1.0 + 0.1 * randn(g, 8), 0.1 * randn(g, 8), 1e-5),
        random_case("x (3, 4), eps 0.5", randn(g, 3, 4, scale=0.5), torch.ones(4),
                    torch.zeros(4), 0.5),
    ]  # fmt: skip


def _ln_ref(x, gamma, beta, eps):
    y, _ = twin.layer_norm_forward(x.double().numpy(), gamma.double().numpy(),
                                   beta.double().numpy(), eps)  # fmt: skip
    return _t(y)


def _ln_wrong(x, gamma, beta, eps, dim=-1, unbiased=False, outside=False):
    x = x.double()
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    den = var.sqrt() + eps if outside else (var + eps).sqrt()
    return gamma.double() * (x - mu) / den + beta.double()


LAYER_NORM = Exercise(
    "layer_norm",
    3,
    _ln_ref,
    _ln_cases,
    {"en": "LN(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, mu and sigma^2 over each "
           "row's d_model features",
     "zh": "LN(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta，mu 和 sigma^2 "
           "在每一行的 d_model 个特征上计算"},
    (
        Mistake("layernorm_axis", lambda *a: _ln_wrong(*a, dim=-2)),
        Mistake("unbiased_var", lambda *a: _ln_wrong(*a, unbiased=True)),
        Mistake("eps_outside", lambda *a: _ln_wrong(*a, outside=True)),
    ),
)  # fmt: skip


def _ffn_cases() -> list[Case]:
    n = note()
    f = n["model"].encoder[0].ffn
    g = gen(7)
    return [
        note_case(f32(n["trace"].encoder[0]["H_E"]), f32(f.w_1), f32(f.b_1), f32(f.w_2),
                  f32(f.b_2)),
        random_case("x (2, 5, 8), d_ff 32", randn(g, 2, 5, 8), randn(g, 8, 32, scale=0.3),
                    randn(g, 32, scale=0.3), randn(g, 32, 8, scale=0.3), randn(g, 8, scale=0.3)),
    ]  # fmt: skip


def _ffn_ref(x, w_1, b_1, w_2, b_2):
    return aiayn_ffn(x.double(), w_1.double(), b_1.double(), w_2.double(), b_2.double())


FFN = Exercise(
    "feed_forward",
    3,
    _ffn_ref,
    _ffn_cases,
    {"en": "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, shape (B, L, d_model)",
     "zh": "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2，形状 (B, L, d_model)"},
    (
        Mistake("no_relu", lambda x, w1, b1, w2, b2: (x.double() @ w1.double() + b1.double())
                @ w2.double() + b2.double()),
        Mistake("relu_outside", lambda *a: _ffn_ref(*a).clamp(min=0)),
    ),
)  # fmt: skip


def _add_norm_cases() -> list[Case]:
    n = note()
    enc, rec = n["model"].encoder[0], n["trace"].encoder[0]
    g = gen(8)
    return [
        note_case(f32(rec["X"]), f32(rec["M_E"]), f32(enc.norm1.weight), f32(enc.norm1.bias)),
        random_case("x, sublayer (2, 5, 8)", randn(g, 2, 5, 8), randn(g, 2, 5, 8),
                    1.0 + 0.1 * randn(g, 8), 0.1 * randn(g, 8)),
    ]  # fmt: skip


def _ln(x, gamma, beta):
    return F.layer_norm(x.double(), x.shape[-1:], gamma.double(), beta.double(), 1e-5)


ADD_NORM = Exercise(
    "add_and_norm",
    3,
    lambda x, s, gamma, beta: _ln(x.double() + s.double(), gamma, beta),
    _add_norm_cases,
    {"en": "LayerNorm(x + Sublayer(x)) with eps = 1e-5, the sublayer's output given",
     "zh": "LayerNorm(x + Sublayer(x))，eps = 1e-5，子层的输出已经给出"},
    (
        Mistake("pre_ln", lambda x, s, gamma, beta: x.double() + _ln(s, gamma, beta)),
        Mistake("no_residual", lambda x, s, gamma, beta: _ln(s, gamma, beta)),
    ),
)  # fmt: skip


# --- Notebook 4: the decoder's masks and cross-attention (3.2.3) -------------------------------

CAUSAL = Exercise(
    "causal_mask",
    4,
    lambda T: causal_mask(T),
    lambda: [note_case(4), given_case("T = 7", 7)],
    {"en": "a (T, T) bool tensor, True where position i may attend to j (j <= i)",
     "zh": "形状 (T, T) 的布尔张量，位置 i 可以看 j（j <= i）处为 True"},
    (
        Mistake("causal_hides_diagonal", lambda T: torch.ones(T, T).tril(-1)),
        Mistake("causal_upside_down", lambda T: torch.ones(T, T).triu(1)),
        Mistake("causal_upside_down", lambda T: torch.ones(T, T).triu()),
    ),
)  # fmt: skip


def _additive(keep: torch.Tensor) -> torch.Tensor:
    return torch.zeros(keep.shape, dtype=D64).masked_fill(~keep.bool(), -math.inf)


NOTE_MASK = Exercise(
    "note_mask",
    4,
    lambda T: _additive(causal_mask(T)),
    lambda: [note_case(4), given_case("T = 6", 6)],
    {"en": "the note's M (T, T): 0 on and below the diagonal, -inf above it",
     "zh": "笔记里的 M（形状 (T, T)）：对角线及其下方为 0，上方为 -inf"},
    (
        Mistake("causal_hides_diagonal", lambda T: _additive(torch.ones(T, T).tril(-1))),
        Mistake("causal_upside_down", lambda T: _additive(torch.ones(T, T).triu())),
    ),
)  # fmt: skip


def _pad_cases() -> list[Case]:
    ids = torch.tensor([[5, 6, 7, 2, 0, 0], [8, 9, 2, 0, 0, 0], [4, 5, 6, 7, 8, 2]])
    return [note_case(note()["ex"].src.clone(), 0), given_case("ids (3, 6), pad_id = 0", ids, 0)]


PADDING = Exercise(
    "padding_mask",
    4,
    lambda ids, pad: padding_mask(ids, pad),
    _pad_cases,
    {"en": "a bool mask of shape (B, 1, 1, L), True where ids is not pad_id",
     "zh": "形状 (B, 1, 1, L) 的布尔掩码，ids 不等于 pad_id 处为 True"},
    (
        Mistake("padding_inverted", lambda ids, pad: (ids == pad)[:, None, None, :]),
        Mistake("padding_shape", lambda ids, pad: ids != pad),
        Mistake("padding_inverted", lambda ids, pad: ids == pad),
    ),
)  # fmt: skip


def _cross_cases() -> list[Case]:
    n = note()
    w = weights(n["model"], "cross_attn")
    rec = n["trace"].decoder[0]
    g = gen(9)
    ws = [randn(g, 16, 16, scale=0.3) for _ in range(4)]
    return [
        note_case(f32(rec["H_D"]), f32(n["trace"].Z_E), w["W_Q"], w["W_K"], w["W_V"], w["W_O"],
                  w["h"]),
        random_case("H_D (2, 3, 16), Z_E (2, 6, 16), h = 4", randn(g, 2, 3, 16),
                    randn(g, 2, 6, 16), *ws, 4),
    ]  # fmt: skip


CROSS = Exercise(
    "cross_attention",
    4,
    lambda y, z, W_Q, W_K, W_V, W_O, h: _mha(y, z, W_Q, W_K, W_V, W_O, h),
    _cross_cases,
    {"en": "M_D^cross = MultiHead(Q = H_D W^Q, K = Z_E W^K, V = Z_E W^V) W^O, "
           "shape (B, T, d_model)",
     "zh": "M_D^cross = MultiHead(Q = H_D W^Q, K = Z_E W^K, V = Z_E W^V) W^O，"
           "形状 (B, T, d_model)"},
    (
        Mistake("cross_swapped", lambda y, z, *w: _mha(z, y, *w)),
        Mistake("cross_causal", lambda y, z, *w: _mha(y, z, *w, causal=True)),
    ),
)  # fmt: skip

EXERCISES = (EMBED, PE, ROTATION, SCORES, SOFTMAX, ATTENTION, SPLIT, MHA, LAYER_NORM, FFN,
             ADD_NORM, CAUSAL, NOTE_MASK, PADDING, CROSS)  # fmt: skip
