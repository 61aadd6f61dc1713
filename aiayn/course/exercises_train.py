"""The exercises of notebooks 5-8: the output layer and the loss, backpropagation by hand, the
schedule, teacher forcing, the length penalty, a beam step, BLEU, perplexity and a head's
ablation.  Sections 3.4, 5.3, 5.4, 6.1, 6.2.
"""

from __future__ import annotations

import math
from collections import Counter

import torch

from aiayn import numpy_twin as twin
from aiayn.course.checker import Case, Exercise, Mistake
from aiayn.course.exercises_model import _t
from aiayn.course.note import f32, gen, given_case, note, note_case, randn, random_case
from aiayn.data.batch import collate
from aiayn.data.specials import BOS, EOS
from aiayn.decode import length_penalty as aiayn_lp
from aiayn.evaluate import sacre_bleu
from aiayn.loss import label_smoothed_loss, perplexity
from aiayn.train.schedule import noam_lr

# --- Notebook 5: the output layer, the loss, the backward pass (3.4, 5.4) -----------------------


def _logits_cases() -> list[Case]:
    n = note()
    g = gen(10)
    return [
        note_case(f32(n["trace"].Z_D), f32(n["model"].embedding)),
        random_case("Z_D (2, 3, 8), E (20, 8)", randn(g, 2, 3, 8), randn(g, 20, 8, scale=0.3)),
    ]


LOGITS = Exercise(
    "output_logits",
    5,
    lambda z, E: _t(twin.output_forward(z.double().numpy(), E.double().numpy())),
    _logits_cases,
    {"en": "L = Z_D E^T, shape (B, T, V)", "zh": "L = Z_D E^T，形状 (B, T, V)"},
    (
        Mistake("logits_scaled", lambda z, E: z.double() @ E.double().T * math.sqrt(E.size(1))),
        Mistake("logits_softmax", lambda z, E: (z.double() @ E.double().T).softmax(dim=-1)),
    ),
)  # fmt: skip


def _loss_cases() -> list[Case]:
    n = note()
    g = gen(11)
    target = torch.tensor([[5, 6, 2, 0, 0], [7, 8, 9, 4, 2]])  # sentence 1 padded with 0
    return [
        note_case(f32(n["trace"].L), n["ex"].tgt_out.clone(), 0.1, 0),
        random_case("logits (2, 5, 12), padding, eps 0.1", randn(g, 2, 5, 12), target, 0.1, 0),
        random_case("logits (2, 5, 12), padding, eps 0.3", randn(g, 2, 5, 12), target, 0.3, 0),
    ]


def _loss_ref(logits, target, eps, pad):
    total, _, n = label_smoothed_loss(logits.double(), target, eps, pad)
    return total / n


def _rows(logits, target, eps, V_minus=1):
    lp = logits.double().log_softmax(dim=-1)
    V = lp.size(-1)
    nll = -lp.gather(-1, target[..., None]).squeeze(-1)
    smooth = -lp.sum(dim=-1) - nll
    return (1 - eps) * nll + eps / (V - V_minus) * smooth, nll, smooth


def _pad_counted(logits, target, eps, pad):
    return _rows(logits, target, eps)[0].mean()  # every row, padding too


def _pad_smoothed(logits, target, eps, pad):
    keep = target != pad
    _, nll, smooth = _rows(logits, target, eps)
    V = logits.size(-1)
    return ((1 - eps) * (nll * keep).sum() + eps / (V - 1) * smooth.sum()) / keep.sum()


def _eps_over_v(logits, target, eps, pad):
    lp = logits.double().log_softmax(dim=-1)
    q = torch.full_like(lp, eps / lp.size(-1)).scatter_add(
        -1, target[..., None], torch.full_like(lp[..., :1], 1 - eps)
    )
    keep = target != pad
    return ((-(q * lp).sum(-1)) * keep).sum() / keep.sum()


def _argmax(logits, target, eps, pad):
    return _loss_ref(logits, logits.argmax(dim=-1).masked_fill(target == pad, pad), eps, pad)


LOSS = Exercise(
    "label_smoothed_loss",
    5,
    _loss_ref,
    _loss_cases,
    {"en": "the mean over non-pad positions t of -sum_j q_tj log p_tj, q_t = 1 - eps on y_t and "
           "eps / (V - 1) on every other token, p_t = softmax(L_t)",
     "zh": "对所有非填充位置 t 取 -sum_j q_tj log p_tj 的平均，其中 q_t 在 y_t 上为 1 - eps、"
           "其余每个词为 eps / (V - 1)，p_t = softmax(L_t)"},
    (
        Mistake("smoothing_on_padding", _pad_counted),
        Mistake("smoothing_on_padding", _pad_smoothed),
        Mistake("eps_over_v", _eps_over_v),
        Mistake("argmax_not_target", _argmax),
    ),
)  # fmt: skip


def _grad_ref(logits, target, eps, pad):
    x = logits.double().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(_loss_ref(x, target, eps, pad), x)
    return g


def _grad_parts(logits, target, eps, pad, one_hot=False):
    p = logits.double().softmax(dim=-1)
    V = p.size(-1)
    q = torch.full_like(p, 0.0 if one_hot else eps / (V - 1))
    q.scatter_(-1, target[..., None], 1.0 if one_hot else 1 - eps)
    keep = (target != pad)[..., None]
    return p, q, keep


def _grad_wrong(logits, target, eps, pad, kind):
    p, q, keep = _grad_parts(logits, target, eps, pad, one_hot=kind == "one_hot")
    n = keep.sum()
    if kind == "sign":
        return (q - p) * keep / n
    if kind == "sum":
        return (p - q) * keep
    if kind == "padding":
        return (p - q) / keep.numel()
    return (p - q) * keep / n


GRAD = Exercise(
    "loss_grad",
    5,
    _grad_ref,
    _loss_cases,
    {"en": "dLoss/dL of the label-smoothed mean loss: (p_t - q_t) / n on non-pad rows, 0 on "
           "padding, shape (B, T, V)",
     "zh": "标签平滑平均损失对 logits 的梯度：非填充行为 (p_t - q_t) / n，填充行为 0，"
           "形状 (B, T, V)"},
    (
        Mistake("grad_sign", lambda *a: _grad_wrong(*a, "sign")),
        Mistake("grad_not_mean", lambda *a: _grad_wrong(*a, "sum")),
        Mistake("grad_one_hot", lambda *a: _grad_wrong(*a, "one_hot")),
        Mistake("smoothing_on_padding", lambda *a: _grad_wrong(*a, "padding")),
    ),
)  # fmt: skip


def _softmax_back_cases() -> list[Case]:
    a = note()["trace"].encoder[0]["attn"]["weights"]
    g = gen(12)
    w = randn(g, 2, 3, 5, 5).softmax(dim=-1)
    return [
        note_case(randn(gen(13), *a.shape), f32(a)),
        random_case("dA, A (2, 3, 5, 5)", randn(g, 2, 3, 5, 5), w),
    ]


SOFTMAX_BACK = Exercise(
    "softmax_backward",
    5,
    lambda dA, A: _t(twin.softmax_backward(dA.double().numpy(), A.double().numpy())),
    _softmax_back_cases,
    {"en": "dS from dA for A = softmax(S) by rows: dS = A * (dA - sum_j dA_j A_j)",
     "zh": "已知 A = softmax(S)（按行）和 dA，求 dS：dS = A * (dA - sum_j dA_j A_j)"},
    (Mistake("jacobian_diagonal", lambda dA, A: dA.double() * A.double() * (1 - A.double())),),
)  # fmt: skip


# --- Notebook 6: training (5.3, 5.4) -------------------------------------------------------------


def _lr_cases() -> list[Case]:
    steps = [(1, 512, 4000), (100, 512, 4000), (4000, 512, 4000), (4001, 512, 4000),
             (100000, 512, 4000), (50, 6, 4000), (2000, 128, 800)]  # fmt: skip
    return [given_case(f"step {s}, d_model {d}, warmup {w}", s, d, w) for s, d, w in steps]


LRATE = Exercise(
    "lrate",
    6,
    noam_lr,
    _lr_cases,
    {"en": "Eq. (3): d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)",
     "zh": "式 (3)：d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)"},
    (
        Mistake("lr_no_d_model", lambda s, d, w: min(s**-0.5, s * w**-1.5)),
        Mistake("lr_max", lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5)),
    ),
    atol=0.0,
    rtol=1e-6,
)  # fmt: skip


def _dec_cases() -> list[Case]:
    t = torch.tensor([[7, 8, 2, 0, 0], [9, 10, 11, 12, 2], [5, 2, 0, 0, 0]])
    return [
        note_case(torch.tensor([[5, 6, 7, 2]])),  # 我 爱 你 </s> with aiayn's specials
        given_case("tgt_out (3, 5), padded", t),
    ]


def _dec_ref(tgt_out: torch.Tensor) -> torch.Tensor:
    pairs = []
    for row in tgt_out.tolist():
        y = row[: row.index(EOS)]
        pairs.append(([4], y))
    batch = collate(pairs)
    return batch.tgt_in[:, : tgt_out.size(1)]


DECODER_INPUT = Exercise(
    "decoder_input",
    6,
    _dec_ref,
    _dec_cases,
    {"en": "tgt_in from tgt_out = y_1 .. y_n </s> <pad>..: <s> y_1 .. y_n <pad>.., same shape "
           "(BOS = 1, EOS = 2, PAD = 0)",
     "zh": "由 tgt_out = y_1 .. y_n </s> <pad>.. 得到 tgt_in = <s> y_1 .. y_n <pad>..，"
           "形状不变（BOS = 1，EOS = 2，PAD = 0）"},
    (
        Mistake("not_shifted", lambda t: t.clone()),
        Mistake("eos_in_input",
                lambda t: torch.cat([torch.full_like(t[:, :1], BOS), t[:, :-1]], dim=1)),
    ),
)  # fmt: skip


# --- Notebook 7: decoding and BLEU (6.1) ------------------------------------------------------


LENGTH_PENALTY = Exercise(
    "length_penalty",
    7,
    lambda n, alpha: aiayn_lp(n, alpha),
    lambda: [given_case(f"|Y| = {n}, alpha = {a}", n, a) for n, a in
             ((1, 0.6), (4, 0.6), (10, 0.6), (30, 1.0), (7, 0.0))],
    {"en": "lp(Y) = ((5 + |Y|) / 6)^alpha", "zh": "lp(Y) = ((5 + |Y|) / 6)^alpha"},
    (Mistake("lp_fairseq", lambda n, a: n**a),),
    atol=0.0,
    rtol=1e-6,
)  # fmt: skip


def _beam_ref(logprob, logp, t, alpha, rank_total=True, penalise_all=False):
    K, V = logp.shape
    total = logprob.double()[:, None] + logp.double() if rank_total else logp.double()
    _, idx = total.view(-1).topk(K)
    parent, token = idx // V, idx % V
    new = logprob.double()[parent] + logp.double()[parent, token]
    lp = aiayn_lp(t, alpha)
    score = new / lp if penalise_all else torch.where(token == EOS, new / lp, new)
    return new, parent, token, score


def _beam_cases() -> list[Case]:
    g = gen(14)
    out = []
    for K, V, t in ((2, 6, 3), (4, 9, 5), (3, 7, 2)):
        logp = randn(g, K, V, scale=2.0).log_softmax(dim=-1)
        logp[0, EOS] = logp[0].max() + 0.5  # one candidate ends with </s>
        logp = logp.log_softmax(dim=-1)
        logprob = -randn(g, K).abs() * 3
        out.append(random_case(f"K = {K}, V = {V}, |Y| = {t}", logprob, logp, t, 0.6))
    return out


BEAM_STEP = Exercise(
    "beam_step",
    7,
    _beam_ref,
    _beam_cases,
    {"en": "(logprob, parent, token, score) of the K best extensions by logprob so far + "
           "logp, score = logprob / lp(|Y|) for those ending in </s> (id 2), logprob for the "
           "others",
     "zh": "按（已有对数概率 + 这一步的 logp）取最好的 K 个扩展，返回 (logprob, parent, token, "
           "score)：以 </s>（id 2）结束的 score = logprob / lp(|Y|)，其余 score = logprob"},
    (
        Mistake("lp_on_unfinished", lambda *a: _beam_ref(*a, penalise_all=True)),
        Mistake("beam_step_only", lambda *a: _beam_ref(*a, rank_total=False)),
    ),
)  # fmt: skip

_HYPS = [
    "a dog runs through the green grass",
    "two men are playing football in the park",
    "a woman is reading a book",
]
_REFS = [
    "a dog runs through the tall green grass",
    "two men are playing soccer in the park",
    "a woman is reading a book on a bench",
]


def _bleu_wrong(hyps, refs, clip=True, bp=True):
    c = sum(len(h.split()) for h in hyps)
    r = sum(len(x.split()) for x in refs)
    logs = 0.0
    for n in range(1, 5):
        match = total = 0
        for h, x in zip(hyps, refs, strict=True):
            hn = Counter(tuple(h.split()[i : i + n]) for i in range(len(h.split()) - n + 1))
            rn = Counter(tuple(x.split()[i : i + n]) for i in range(len(x.split()) - n + 1))
            match += sum(min(k, rn[g]) if clip else k for g, k in hn.items() if g in rn)
            total += sum(hn.values())
        logs += math.log(match / total) / 4
    penalty = math.exp(1 - r / c) if bp and c < r else 1.0
    return 100 * penalty * math.exp(logs)


BLEU = Exercise(
    "bleu",
    7,
    lambda hyps, refs: sacre_bleu(hyps, refs)[0],
    lambda: [
        given_case("3 sentences", list(_HYPS), list(_REFS)),
        given_case("repeated words", ["the the the cat sat on the mat"],
                   ["the cat sat on the mat"]),
    ],
    {"en": "corpus BLEU in 0..100: BP * exp(mean over n = 1..4 of log p_n), p_n the clipped "
           "n-gram precision, BP = exp(1 - r / c) if c < r else 1 (words split at spaces)",
     "zh": "语料级 BLEU（0..100）：BP * exp(n = 1..4 上 log p_n 的平均)，p_n 是截断后的 n-gram "
           "精确率，c < r 时 BP = exp(1 - r / c)，否则为 1（按空格切词）"},
    (
        Mistake("bleu_unclipped", lambda h, r: _bleu_wrong(h, r, clip=False)),
        Mistake("bleu_no_bp", lambda h, r: _bleu_wrong(h, r, bp=False)),
    ),
    atol=1e-3,
)  # fmt: skip


# --- Notebook 8: the trained models and Table 3 (6.2) ------------------------------------------

PERPLEXITY = Exercise(
    "perplexity",
    8,
    perplexity,
    lambda: [given_case(f"NLL sum {s}, {n} tokens", s, n) for s, n in
             ((12.0, 10), (5432.1, 2100), (0.5, 1))],
    {"en": "PPL = exp(NLL sum / tokens)", "zh": "PPL = exp(NLL 总和 / token 数)"},
    (
        Mistake("ppl_of_sum", lambda s, n: math.exp(s)),
        Mistake("ppl_base_2", lambda s, n: 2 ** (s / n)),
    ),
    atol=0.0,
    rtol=1e-6,
)  # fmt: skip


def _ablate_ref(W_O, head, h):
    k = W_O.size(0) // h
    out = W_O.double().clone()
    out[head * k : (head + 1) * k] = 0.0  # rows of head i: Concat puts head i there
    return out


def _ablate_cols(W_O, head, h):
    k = W_O.size(1) // h
    out = W_O.double().clone()
    out[:, head * k : (head + 1) * k] = 0.0
    return out


ABLATE = Exercise(
    "ablate_head",
    8,
    _ablate_ref,
    lambda: [
        note_case(f32(note()["model"].encoder[0].self_attn.w_o), 1, 2),
        random_case("W_O (16, 16), head 2 of 4", randn(gen(15), 16, 16), 2, 4),
    ],
    {"en": "a copy of W^O with the rows of head i zeroed (rows i d_k .. (i + 1) d_k - 1)",
     "zh": "W^O 的副本，把第 i 个头的那几行（第 i d_k 到 (i + 1) d_k - 1 行）清零"},
    (Mistake("ablate_columns", _ablate_cols),),
)  # fmt: skip

EXERCISES = (LOGITS, LOSS, GRAD, SOFTMAX_BACK, LRATE, DECODER_INPUT, LENGTH_PENALTY, BEAM_STEP,
             BLEU, PERPLEXITY, ABLATE)  # fmt: skip
