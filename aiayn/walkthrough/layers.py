"""The note's steps 2-5 (each encoder layer) and 7-12 (each decoder layer).  Sections 3.1-3.3.

One table, ``ENCODER`` and ``DECODER``, says what each step is: a multi-head attention, an
Add & Norm or a feed-forward network, which of the layer's modules it uses, which values of
``aiayn.trace`` it starts from and proves, and its symbols. Each step recomputes its formula
with the NumPy twin (``aiayn.numpy_twin``) from the model's parameters and from the model's own
values of the previous step, and is proved before the next one is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aiayn import numpy_twin as ref
from aiayn.walkthrough import differences
from aiayn.walkthrough.doc import Formula, Group, Para, Section, arr
from aiayn.walkthrough.steps import Steps


@dataclass(frozen=True)
class Step:
    """One step of a layer; its formulas are ``FORMULAS[step]``.

    kind "attn": keys (record, query input, key/value input), tex (W suffix, query name,
    key/value name, output name, W^O's name); "norm": keys (x, sub-layer output, the sum or "-",
    output), tex (the sum's name, what it sums, the output's name); "ffn": keys (record, input,
    output), tex (the input's name, the output's name). ``text`` is the prose key shown after
    the formulas (before them with ``first``).
    """

    step: int
    kind: str
    module: str
    keys: str  # trace names, space-separated
    tex: tuple[str, ...]
    text: str | None = None
    first: bool = False


SELF, CROSS = r"^{\text{self}}", r"^{\text{cross}}"
ENCODER = (
    Step(2, "attn", "self_attn", "attn X X", ("", "X", "X", "M_E", "W^O"), "s2.text", True),
    Step(3, "norm", "norm1", "X M_E R_E H_E", ("R_E", "X_E + M_E", "H_E^{(1)}"), "s3.text"),
    Step(4, "ffn", "ffn", "ffn H_E F_E", ("H_E^{(1)}", "F_E")),
    Step(5, "norm", "norm2", "H_E F_E - Z_E", ("H_E^{(1)} + F_E",) * 2 + ("Z_E",), "s5.text"),
)
DECODER = (
    Step(7, "attn", "self_attn", "self_attn X X",
         ("", "X_D", "X_D", "M_D" + SELF, "W^O"), "s7.text"),
    Step(8, "norm", "norm1", "X M_D_self R_D_self H_D", ("R_D", "X_D + M_D" + SELF, "H_D")),
    Step(9, "attn", "cross_attn", "cross_attn H_D Z_E",
         (CROSS, "H_D", "Z_E", "M_D" + CROSS, r"W^{O,\text{cross}}"), "s9.text"),
    Step(10, "norm", "norm2", "H_D M_D_cross R_D_cross H_D_cross",
         ("R_D^{(2)}", "H_D + M_D" + CROSS, "H_D^{(2)}"), "s10.text"),
    Step(11, "ffn", "ffn", "ffn H_D_cross F_D", ("H_D^{(2)}", "F_D")),
    Step(12, "norm", "norm3", "H_D_cross F_D - Z_D",
         ("H_D^{(2)} + F_D",) * 2 + ("Z_D",), "s12.text"),
)  # fmt: skip

_D, _LN = r"d_{\text{model}}", r"\operatorname{LayerNorm}"
FORMULAS = {
    2: (
        r"Q_i = X W_{Q_i} \in \mathbb{R}^{n \times d_k},\quad K_i = X W_{K_i} \in "
        r"\mathbb{R}^{n \times d_k},\quad V_i = X W_{V_i} \in \mathbb{R}^{n \times d_v}",
        r"O_i = \operatorname{softmax}\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right) V_i,"
        r"\qquad M_E = \operatorname{Concat}(O_1, \ldots, O_h)\, W^O",
    ),
    3: (
        rf"H_E^{{(1)}} = {_LN}(X_E + \operatorname{{Dropout}}(M_E)),\qquad R_E = X_E + M_E",
        r"\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,"
        r"\quad \mu = \frac{1}{d}\sum_j x_j,\quad \sigma^2 = \frac{1}{d}\sum_j (x_j - \mu)^2",
    ),
    4: (
        r"F_E = \operatorname{FFN}(H_E^{(1)}) = \operatorname{ReLU}(H_E^{(1)} W_1 + b_1)\, "
        rf"W_2 + b_2,\quad W_1 \in \mathbb{{R}}^{{{_D} \times d_{{ff}}}},\ W_2 \in "
        rf"\mathbb{{R}}^{{d_{{ff}} \times {_D}}}",
    ),
    5: (rf"Z_E = {_LN}(H_E^{{(1)}} + F_E) \in \mathbb{{R}}^{{n \times {_D}}}",),
    7: (
        r"S = \frac{Q K^\top}{\sqrt{d_k}},\qquad S_{\text{masked}} = S + M,\qquad "
        r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}",
        rf"M_D{SELF} = \operatorname{{Concat}}(O_1, \ldots, O_h)\, W^O",
    ),
    8: (rf"H_D = {_LN}(X_D + M_D{SELF})",),
    9: (
        rf"Q = H_D W_Q{CROSS},\quad K = Z_E W_K{CROSS},\quad V = Z_E W_V{CROSS},\quad "
        r"S = \frac{Q K^\top}{\sqrt{d_k}} \in \mathbb{R}^{n_D \times n_E}",
        rf"M_D{CROSS} = \operatorname{{Concat}}(A_{{D,1}}{CROSS}, \ldots, A_{{D,h}}{CROSS})\, W^O",
    ),
    10: (rf"H_D^{{(2)}} = {_LN}(H_D + M_D{CROSS})",),
    11: (r"F_D = \operatorname{ReLU}(H_D^{(2)} W_1 + b_1)\, W_2 + b_2",),
    12: (rf"Z_D = {_LN}(H_D^{{(2)}} + F_D) \in \mathbb{{R}}^{{n_D \times {_D}}}",),
}


def attention(st: Steps, sec: Section, where: str, mha: Any, rec: dict, x_q, x_kv, rows, cols, s):
    """Per head: Q_i, K_i, V_i, S_i (masked), A_i = softmax, O_i; then Concat and W^O.  3.2.

    Returns M (Lq, D) and the twin's cache of ``mha_forward`` (a batch of one).
    """
    w_sfx, q_name, kv_name, m_name, wo_name = s.tex
    H, K, causal = mha.n_heads, mha.d_k, s.step == 7
    wqkv, wo = [arr(w) for w in (mha.w_q, mha.w_k, mha.w_v)], arr(mha.w_o)
    keep = np.tri(len(rows), len(cols), dtype=bool) if causal else None  # (Lq, Lk)
    m, cache = ref.mha_forward(x_q[None], x_kv[None], arr(mha.w_qkv), wo, H, K, keep)
    m, concat, att = m[0], cache["concat"][0], cache["att"]  # (Lq, D), (Lq, H K), per head
    if causal:
        sec.add(st.mat("M", np.where(keep, 0.0, -np.inf), rows, cols, kind="mask"))
    dcols, kcols = [str(j) for j in range(st.d)], [str(j) for j in range(K)]
    hidden = []  # the heads the view leaves out: proved all the same
    for i in range(H):
        c, j = slice(i * K, (i + 1) * K), i + 1
        q, k, v, sc, a = (att[n][0, i] for n in ("q", "k", "v", "scores", "weights"))
        o = concat[:, c]  # (Lq, K): O_i = A_i V_i
        masked = np.where(keep, sc, -np.inf) if causal else sc  # (Lq, Lk)
        proofs = [
            (rf"Q_{j} = {q_name} W_{{Q_{j}}}", q, rec["Q"]),
            (rf"K_{j} = {kv_name} W_{{K_{j}}}", k, rec["K"]),
            (rf"V_{j} = {kv_name} W_{{V_{j}}}", v, rec["V"]),
            (rf"S_{j} = Q_{j} K_{j}^\top / \sqrt{{d_k}}", sc, rec["scores"]),
            *([(rf"S_{j} + M", masked, rec["scores_masked"])] if causal else []),
            (rf"A_{j} = \operatorname{{softmax}}(S_{j})", a, rec["weights"]),
            (rf"O_{j} = A_{j} V_{j}", o, rec["O"]),
        ]
        if not st.view.shows_head(j):
            hidden.append(str(j))
            for w, h, t in proofs:
                st.prove(f"{where}, head {j}", w, h, arr(t)[0, i])
            continue
        ws = [
            st.mat(rf"W_{{{n}_{j}}}{w_sfx}", w[:, c], dcols, kcols)
            for n, w in zip("QKV", wqkv, strict=True)
        ]
        sec.add(Para(st.t("head", i=j, lo=i * K, hi=(i + 1) * K - 1)), Group(ws))
        qkv = [st.mat(f"Q_{j}", q, rows, kcols), st.mat(f"K_{j}", k, cols, kcols)]
        qkv.append(st.mat(f"V_{j}", v, cols, kcols))
        sec.add(Group(qkv) if len(rows) == len(cols) else qkv[0])
        if len(rows) != len(cols):
            sec.add(Group(qkv[1:]))
        mats = [st.mat(f"S_{j}", sc, rows, cols)]
        if causal:
            mats.append(st.mat(rf"S_{{{j},\text{{masked}}}}", masked, rows, cols, kind="mask"))
        sec.add(Group([*mats, st.mat(f"A_{j}", a, rows, cols, kind="prob")]))
        sec.add(st.mat(f"O_{j}", o, rows, kcols))
        sec.add(*(st.prove(f"{where}, head {j}", w, h, arr(t)[0, i]) for w, h, t in proofs))
    if hidden:
        sec.add(
            Para(st.t("heads.hidden", heads=st.t("sep").join(hidden), n=len(proofs) * len(hidden)))
        )
    hk = [str(j) for j in range(H * K)]
    cat = r"\operatorname{Concat}(O_1..O_h)"
    sec.add(
        Para(st.t("concat")),
        Group([st.mat(cat, concat, rows, hk), st.mat(wo_name, wo, hk, dcols)]),
        st.mat(m_name, m, rows, dcols),
        st.prove(where, cat, concat, arr(rec["concat"])[0]),
        st.prove(where, m_name + rf" = {cat}\, W^O", m, arr(rec["M"])[0]),
    )
    return m, cache


def add_norm(st: Steps, sec: Section, where: str, norm: Any, x, sub, r_model, h_model, rows, s):
    """R = x + sub, then LN(R) = gamma (R - mu) / sqrt(sigma^2 + eps) + beta, row by row.  3.1."""
    r_name, sum_tex, h_name = s.tex
    gamma, beta = arr(norm.weight), arr(norm.bias)
    r = x + sub  # (L, D)
    h, c = ref.layer_norm_forward(r, gamma, beta, st.eps)  # (L, D)
    cols = [str(j) for j in range(st.d)]
    sec.add(st.mat(r_name, r, rows, cols))
    if r_model is not None:
        sec.add(st.prove(where, f"{r_name} = {sum_tex}", r, r_model))
    sec.add(
        Group(
            [
                st.mat(r"\mu", c["mu"], rows, ["μ"]),
                st.mat(r"\sigma^2", c["var"], rows, ["σ²"]),
                st.mat(r"\hat{x} = (x - \mu)/\sqrt{\sigma^2 + \epsilon}", c["xhat"], rows, cols),
            ]
        ),
        Group([st.mat(r"\gamma", gamma, None, cols), st.mat(r"\beta", beta, None, cols)]),
        st.mat(h_name, h, rows, cols),
        st.prove(where, rf"{h_name} = \operatorname{{LN}}({r_name})", h, h_model),
    )


def ffn(st: Steps, sec: Section, where: str, mod: Any, rec: dict, x, f_model, rows, s) -> None:
    """F = ReLU(x W_1 + b_1) W_2 + b_2, position by position.  Section 3.3, Eq. (2)."""
    x_name, f_name = s.tex
    w1, b1, w2, b2 = (arr(p) for p in (mod.w_1, mod.b_1, mod.w_2, mod.b_2))
    f, c = ref.ffn_forward(x, w1, b1, w2, b2)  # (L, D)
    hidden = c["hidden"]  # (L, F)
    dcols, fcols = [str(j) for j in range(st.d)], [str(j) for j in range(w1.shape[1])]
    relu = rf"\operatorname{{ReLU}}({x_name} W_1 + b_1)"
    zeros = int((hidden == 0).sum())
    sec.add(
        Para(st.t("ffn.text", d=st.d, dff=w1.shape[1], z=zeros, nh=hidden.size)),
        st.mat("W_1", w1, dcols, fcols),
        st.mat("b_1", b1, None, fcols),
        Group([st.mat("W_2", w2, fcols, dcols), st.mat("b_2", b2, None, dcols)]),
        st.mat(relu, hidden, rows, fcols),
        st.mat(f_name, f, rows, dcols),
        st.prove(where, relu, hidden, arr(rec["hidden"])[0]),
        st.prove(where, rf"{f_name} = \operatorname{{ReLU}}(\cdot) W_2 + b_2", f, f_model),
    )


def stack(st: Steps, side: str) -> list[Section]:
    """Every step of every layer of one side ("encoder" or "decoder"), in the note's order."""
    ex, tr = st.ex, st.tr
    enc = side == "encoder"
    table, layers = (ENCODER, st.model.encoder) if enc else (DECODER, st.model.decoder)
    rows = ex.src_words if enc else ex.tgt_in_words
    out = []
    for li, layer in enumerate(layers):
        rec = (tr.encoder if enc else tr.decoder)[li]

        def val(key: str, rec: dict = rec) -> np.ndarray:
            return arr(rec[key] if key in rec else getattr(tr, key))[0]  # (L, D)

        for s in table:
            sec = Section(st.sid(s.step, li), st.title(s.step, li, len(layers)))
            where = f"step {s.step} (layer {li + 1})"
            blocks: list[Any] = [Formula(f) for f in FORMULAS[s.step]]
            if s.text:
                para = Para(st.t(s.text, eps=f"{st.eps:g}", l=li + 1, n=len(layers)))
                blocks = [para, *blocks] if s.first else [*blocks, para]
            sec.add(*blocks)
            mod, keys = getattr(layer, s.module), s.keys.split()
            if s.kind == "attn":
                x, kv = val(keys[1]), val(keys[2])  # (T or S, D)
                cols = ex.src_words if keys[2] == "Z_E" else rows
                m, cache = attention(st, sec, where, mod, rec[keys[0]], x, kv, rows, cols, s)
                if s.step == 2 and li == 0:
                    sec.add(differences.scale_aside(st, cache, rows))
                    sec.add(differences.wo_aside(st, x, cache["concat"][0], m, rows))
                if s.step == 7:
                    above = ~np.tri(len(rows), dtype=bool)  # (T, T)
                    upper = arr(rec["self_attn"]["weights"])[0][:, above]  # (H, T (T - 1) / 2)
                    what = r"A_i = 0 \text{ above the diagonal}"
                    sec.add(st.prove(where, what, np.zeros_like(upper), upper))
            elif s.kind == "norm":
                x, sub, r_key, out_key = keys
                r_model = val(r_key) if r_key != "-" else None
                add_norm(st, sec, where, mod, val(x), val(sub), r_model, val(out_key), rows, s)
                if s.step == 3 and li == 0:
                    sec.add(differences.ln_aside(st, val(x) + val(sub), mod, rows))
            else:
                ffn(st, sec, where, mod, rec[keys[0]], val(keys[1]), val(keys[2]), rows, s)
            out.append(sec)
    return out
