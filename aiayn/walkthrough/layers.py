"""The note's steps 2-5 (each encoder layer) and 7-12 (each decoder layer).  Sections 3.1-3.3.

Built from the primitives of ``steps.Steps``; each step starts from the model's own values of
the previous step (from ``aiayn.trace``) and is proved before the next one is shown.
"""

from __future__ import annotations

import numpy as np

from aiayn.walkthrough import differences
from aiayn.walkthrough.doc import Formula, Para, Section
from aiayn.walkthrough.steps import Steps, arr


def encoder(st: Steps) -> list[Section]:
    """Steps 2-5 for every encoder layer: self-attention, Add & Norm, FFN, Add & Norm.  3.1."""
    ex, tr = st.ex, st.tr
    rows, n = ex.src_words, len(st.model.encoder)
    out = []
    for li, layer in enumerate(st.model.encoder):
        rec = tr.encoder[li]
        x = arr(rec["X"])[0]  # (S, D)
        s2 = Section(st.sid(2, li), st.title(2, li, n))
        s2.add(
            Para(st.t("s2.text")),
            Formula(
                r"Q_i = X W_{Q_i} \in \mathbb{R}^{n \times d_k},\quad "
                r"K_i = X W_{K_i} \in \mathbb{R}^{n \times d_k},\quad "
                r"V_i = X W_{V_i} \in \mathbb{R}^{n \times d_v}"
            ),
            Formula(
                r"O_i = \operatorname{softmax}\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right)"
                r" V_i,\qquad M_E = \operatorname{Concat}(O_1, \ldots, O_h)\, W^O"
            ),
        )
        names = {"w": "", "q": "X", "kv": "X", "M": "M_E"}
        _weights, concat, m = st.attention(
            s2,
            f"step 2 (layer {li + 1})",
            layer.self_attn,
            rec["attn"],
            x,
            x,
            rows,
            rows,
            False,
            names,
        )
        if li == 0:
            s2.add(differences.scale_aside(st, x, layer.self_attn, rows))
            s2.add(differences.wo_aside(st, x, concat, m, rows))
        m = arr(rec["M_E"])[0]  # each step starts from the model's own previous values
        s3 = Section(st.sid(3, li), st.title(3, li, n))
        s3.add(
            Formula(
                r"H_E^{(1)} = \operatorname{LayerNorm}(X_E + \operatorname{Dropout}(M_E)),"
                r"\qquad R_E = X_E + M_E"
            ),
            Formula(
                r"\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + "
                r"\epsilon}} + \beta,\quad \mu = \frac{1}{d}\sum_j x_j,\quad "
                r"\sigma^2 = \frac{1}{d}\sum_j (x_j - \mu)^2"
            ),
            Para(st.t("s3.text", eps=f"{st.eps:g}")),
        )
        st.add_norm(
            s3,
            f"step 3 (layer {li + 1})",
            layer.norm1,
            x,
            m,
            arr(rec["R_E"])[0],
            arr(rec["H_E"])[0],
            rows,
            ("R_E", "X_E + M_E", "H_E^{(1)}"),
        )
        if li == 0:
            s3.add(differences.ln_aside(st, x + m, layer.norm1, rows))
        s4 = Section(st.sid(4, li), st.title(4, li, n))
        s4.add(
            Formula(
                r"F_E = \operatorname{FFN}(H_E^{(1)}) = \operatorname{ReLU}(H_E^{(1)} W_1"
                r" + b_1)\, W_2 + b_2,\quad W_1 \in \mathbb{R}^{d_{\text{model}} \times "
                r"d_{ff}},\ W_2 \in \mathbb{R}^{d_{ff} \times d_{\text{model}}}"
            )
        )
        h = arr(rec["H_E"])[0]  # (S, D)
        f = st.ffn(
            s4,
            f"step 4 (layer {li + 1})",
            layer.ffn,
            rec["ffn"],
            h,
            arr(rec["F_E"])[0],
            rows,
            "H_E^{(1)}",
            "F_E",
        )
        f = arr(rec["F_E"])[0]  # (S, D)
        s5 = Section(st.sid(5, li), st.title(5, li, n))
        s5.add(
            Formula(
                r"Z_E = \operatorname{LayerNorm}(H_E^{(1)} + F_E) \in "
                r"\mathbb{R}^{n \times d_{\text{model}}}"
            ),
            Para(st.t("s5.text", l=li + 1, n=n)),
        )
        st.add_norm(
            s5,
            f"step 5 (layer {li + 1})",
            layer.norm2,
            h,
            f,
            None,
            arr(rec["Z_E"])[0],
            rows,
            ("H_E^{(1)} + F_E", "H_E^{(1)} + F_E", "Z_E"),
        )
        out += [s2, s3, s4, s5]
    return out


def decoder(st: Steps) -> list[Section]:
    """Steps 7-12 for every decoder layer: masked self-attention, cross-attention, FFN.  3.1."""
    ex, tr = st.ex, st.tr
    rows, src = ex.tgt_in_words, ex.src_words
    z_e = arr(tr.Z_E)[0]  # (S, D)
    n = len(st.model.decoder)
    out = []
    for li, layer in enumerate(st.model.decoder):
        rec = tr.decoder[li]
        x = arr(rec["X"])[0]  # (T, D)
        w = f"(layer {li + 1})"
        s7 = Section(st.sid(7, li), st.title(7, li, n))
        s7.add(
            Formula(
                r"S = \frac{Q K^\top}{\sqrt{d_k}},\qquad S_{\text{masked}} = S + M,\qquad "
                r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}"
            ),
            Formula(r"M_D^{\text{self}} = \operatorname{Concat}(O_1, \ldots, O_h)\, W^O"),
            Para(st.t("s7.text")),
        )
        names = {"w": "", "q": "X_D", "kv": "X_D", "M": r"M_D^{\text{self}}"}
        st.attention(
            s7, f"step 7 {w}", layer.self_attn, rec["self_attn"], x, x, rows, rows, True, names
        )
        above = np.triu(np.ones((len(rows), len(rows))), 1) > 0
        upper = arr(rec["self_attn"]["weights"])[0][:, above]  # (H, number above)
        s7.add(
            st.prove(
                f"step 7 {w}",
                r"A_i = 0 \text{ above the diagonal}",
                np.zeros_like(upper),
                upper,
            )
        )
        s8 = Section(st.sid(8, li), st.title(8, li, n))
        s8.add(Formula(r"H_D = \operatorname{LayerNorm}(X_D + M_D^{\text{self}})"))
        h = st.add_norm(
            s8,
            f"step 8 {w}",
            layer.norm1,
            x,
            arr(rec["M_D_self"])[0],
            arr(rec["R_D_self"])[0],
            arr(rec["H_D"])[0],
            rows,
            ("R_D", r"X_D + M_D^{\text{self}}", "H_D"),
        )
        h = arr(rec["H_D"])[0]  # (T, D): the model's own H_D feeds step 9
        s9 = Section(st.sid(9, li), st.title(9, li, n))
        s9.add(
            Formula(
                r"Q = H_D W_Q^{\text{cross}},\quad K = Z_E W_K^{\text{cross}},\quad "
                r"V = Z_E W_V^{\text{cross}},\quad S = \frac{Q K^\top}{\sqrt{d_k}} "
                r"\in \mathbb{R}^{n_D \times n_E}"
            ),
            Formula(
                r"M_D^{\text{cross}} = \operatorname{Concat}(A_{D,1}^{\text{cross}}, \ldots,"
                r" A_{D,h}^{\text{cross}})\, W^O"
            ),
            Para(st.t("s9.text")),
        )
        names = {"w": r"^{\text{cross}}", "q": "H_D", "kv": "Z_E", "M": r"M_D^{\text{cross}}"}
        names["wo"] = r"W^{O,\text{cross}}"
        cross, _, m_cross = st.attention(
            s9,
            f"step 9 {w}",
            layer.cross_attn,
            rec["cross_attn"],
            h,
            z_e,
            rows,
            src,
            False,
            names,
        )
        m_cross = arr(rec["M_D_cross"])[0]  # (T, D)
        st.facts.setdefault("cross", cross)
        s10 = Section(st.sid(10, li), st.title(10, li, n))
        s10.add(
            Formula(r"H_D^{(2)} = \operatorname{LayerNorm}(H_D + M_D^{\text{cross}})"),
            Para(st.t("s10.text")),
        )
        h2 = st.add_norm(
            s10,
            f"step 10 {w}",
            layer.norm2,
            h,
            m_cross,
            arr(rec["R_D_cross"])[0],
            arr(rec["H_D_cross"])[0],
            rows,
            ("R_D^{(2)}", r"H_D + M_D^{\text{cross}}", "H_D^{(2)}"),
        )
        h2 = arr(rec["H_D_cross"])[0]  # (T, D)
        s11 = Section(st.sid(11, li), st.title(11, li, n))
        s11.add(Formula(r"F_D = \operatorname{ReLU}(H_D^{(2)} W_1 + b_1)\, W_2 + b_2"))
        f = st.ffn(
            s11,
            f"step 11 {w}",
            layer.ffn,
            rec["ffn"],
            h2,
            arr(rec["F_D"])[0],
            rows,
            "H_D^{(2)}",
            "F_D",
        )
        f = arr(rec["F_D"])[0]  # (T, D)
        s12 = Section(st.sid(12, li), st.title(12, li, n))
        s12.add(
            Formula(
                r"Z_D = \operatorname{LayerNorm}(H_D^{(2)} + F_D) \in "
                r"\mathbb{R}^{n_D \times d_{\text{model}}}"
            ),
            Para(st.t("s12.text", l=li + 1, n=n)),
        )
        st.add_norm(
            s12,
            f"step 12 {w}",
            layer.norm3,
            h2,
            f,
            None,
            arr(rec["Z_D"])[0],
            rows,
            ("H_D^{(2)} + F_D", "H_D^{(2)} + F_D", "Z_D"),
        )
        out += [s7, s8, s9, s10, s11, s12]
    return out
