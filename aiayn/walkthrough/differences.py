"""Where the note and the paper differ: the paper's version beside what the note's would compute.

Sections 3.1, 3.2.1, 3.2.2, 5.3, 5.4 and 6.1. The asides stand beside their steps (the scale of
step 2, W^O, LayerNorm's parameters, what p(y_t) is); the closing section covers the rest
(N = 6 layers, where dropout goes, padding masks, the schedule, beam search) and checks the
padding claim on the model.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from aiayn import numpy_twin as ref
from aiayn.model import Transformer
from aiayn.train.schedule import noam_lr
from aiayn.walkthrough.doc import Aside, Formula, Group, Mat, Para, Section, Table, arr

if TYPE_CHECKING:
    from aiayn.walkthrough.steps import Steps


def _entropy(a: np.ndarray) -> float:
    """Mean entropy of the rows of a (nats)."""
    return float(-(a * np.log(np.where(a > 0, a, 1.0))).sum(axis=-1).mean())


def scale_aside(st: Steps, cache: dict, rows: list[str]) -> Aside:
    """Softmax with sqrt(d_k) (the paper, Eq. 1) against sqrt(d_model) (the note's step 2)."""
    att, d = cache["att"], st.d
    H, K = att["q"].shape[1], att["q"].shape[-1]
    table, pairs = [], []
    for i in range(H):  # the step's weights, and the softmax of its scores scaled as in the note
        s_note = att["scores"][0, i] * math.sqrt(K) / math.sqrt(d)  # (n, n): Q_i K_i^T / sqrt(d)
        pair = att["weights"][0, i], ref.softmax_forward(s_note)  # (n, n) each
        tops, ents = (f"{a.max(axis=1).mean():.3f}" for a in pair), map(_entropy, pair)
        table.append([str(i + 1), *tops, *(f"{e:.3f}" for e in ents)])
        pairs.append(pair)
    sq = {"sdk": f"{math.sqrt(K):.3f}", "sd": f"{math.sqrt(d):.3f}", "r": f"{math.sqrt(d / K):.3f}"}
    j = (st.view.heads or (1,))[0]  # the first head shown
    i = j - 1
    box = Aside(st.t("scale.title"))
    box.blocks += [
        Formula(
            r"\text{paper: } \operatorname{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}}\right)"
            r"\qquad \text{note: } \operatorname{softmax}\left(\frac{Q K^\top}"
            r"{\sqrt{d_{\text{model}}}}\right)"
        ),
        Para(st.t("scale.text", dk=K, d=d, h=H, u=f"{math.log(len(rows)):.3f}", n=len(rows), **sq)),
        Group(
            [
                st.mat(rf"A_{j}\ (\sqrt{{d_k}})", pairs[i][0], rows, rows, kind="prob"),
                st.mat(rf"A_{j}\ (\sqrt{{d_{{\text{{model}}}}}})", pairs[i][1], rows, rows, "prob"),
            ]
        ),
        Table(st.header("scale"), table),
        Para(st.t("scale.why")),
    ]
    return box


def wo_aside(st: Steps, x: np.ndarray, concat: np.ndarray, m: np.ndarray, rows: list[str]) -> Aside:
    """M_E = Concat(heads) W^O (3.2.2) against the note's Concat(heads) alone."""
    d, hv = st.d, concat.shape[1]
    cols = [str(j) for j in range(d)]
    box = Aside(st.t("wo.title"))
    box.blocks += [
        Formula(
            r"\text{paper: } M_E = \operatorname{Concat}(O_1, \ldots, O_h)\, W^O,\ "
            r"W^O \in \mathbb{R}^{h d_v \times d_{\text{model}}}\qquad \text{note: } "
            r"M_E = \operatorname{Concat}(O_1, \ldots, O_h)"
        ),
        Para(st.t("wo.text", dv=hv // max(1, st.model.config.n_heads), d=d, p=d * hv)),
        Group(
            [
                st.mat(r"\text{note: } X_E + \operatorname{Concat}", x + concat, rows, cols),
                st.mat(r"\text{paper: } X_E + \operatorname{Concat}\, W^O", x + m, rows, cols),
            ]
        ),
    ]
    return box


def ln_aside(st: Steps, r: np.ndarray, norm: Any, rows: list[str]) -> Aside:
    """gamma and beta are learned, epsilon is a constant: the effect of epsilon, measured."""
    gamma, beta = arr(norm.weight), arr(norm.bias)
    with_eps = ref.layer_norm_forward(r, gamma, beta, st.eps)[0]  # (S, D)
    without = ref.layer_norm_forward(r, gamma, beta, 0.0)[0]  # (S, D)
    dd = f"{float(np.abs(with_eps - without).max()):.1e}"
    box = Aside(st.t("ln.title"))
    box.blocks += [
        Formula(
            r"\text{learned: } \gamma, \beta \in \mathbb{R}^{d_{\text{model}}}\qquad "
            r"\text{constant: } \epsilon"
        ),
        Para(st.t("ln.text", d=st.d, eps=f"{st.eps:g}", dd=dd)),
    ]
    return box


def padding_demo(st: Steps) -> tuple[list[Any], float]:
    """A padded batch gives the unpadded pair's outputs exactly: the mask of section 3.2.3."""
    from aiayn import trace

    ex, model, pad = st.ex, st.model, st.model.config.pad_id
    src, tgt_in = ex.src, ex.tgt_in  # (1, S), (1, T)
    padded = torch.cat([src, torch.full((1, 2), pad)], dim=1)  # (1, S + 2)
    with torch.no_grad():
        alone = model(src, tgt_in)  # (1, T, V)
        batch = model(padded, tgt_in)  # (1, T, V)
        tr = trace(model, padded, tgt_in)
    keep = (padded != pad)[0].numpy().astype(np.float64)  # (S + 2,)
    words = [*ex.src_words, "·", "·"]
    diff = float((alone - batch).abs().max())
    w = arr(tr.decoder[0]["cross_attn"]["weights"])[0, 0]  # (T, S + 2)
    blocks = [
        Mat(r"\text{keep}", keep, None, words, kind="prob"),
        Mat(r"A_{D,1}^{\text{cross}}\ (\text{padded})", w, ex.tgt_in_words, words, kind="prob"),
    ]
    return blocks, diff


def closing_section(st: Steps) -> Section:
    """The differences not shown beside a step: N, dropout, padding, schedule, beam search."""
    cfg = st.model.config
    sec = Section("differences", st.t("diff.title"))
    items = [[str(i), st.t(f"diff.item{i}")] for i in range(1, 8)]
    sec.add(Para(st.t("diff.intro")), Table(st.header("diff"), items))
    # 5. N = 6
    n_here = st.model.num_parameters()
    six = Transformer(dataclasses.replace(cfg, n_layers=6, n_dec_layers=None)).num_parameters()
    sec.add(Para(st.t("diff.layers", n=cfg.n_layers, p=f"{n_here:,}", p6=f"{six:,}")))
    # 6. dropout
    N = cfg.n_layers
    sec.add(Para(st.t("diff.dropout", here=2 + 5 * N, six=2 + 5 * 6)))
    # 7. padding, schedule, beam search
    blocks, diff = padding_demo(st)
    sec.add(Para(st.t("diff.padding", pad=st.ex.vocab[cfg.pad_id])), *blocks)
    sec.add(st.prover.check("differences", r"\text{padded batch} = \text{pair alone}", diff, 0.0))
    lrs = [
        [str(s), *(f"{noam_lr(s, d, 4000):.4e}" for d in (cfg.d_model, 512))]
        for s in (1, 1000, 4000, 8000, 100000)
    ]
    sec.add(
        Para(st.t("diff.schedule")),
        Formula(
            r"\text{lrate} = d_{\text{model}}^{-0.5} \cdot \min\left(\text{step}^{-0.5},\ "
            r"\text{step} \cdot \text{warmup}^{-1.5}\right)"
        ),
        Table(["step", f"d_model = {cfg.d_model}", "d_model = 512"], lrs),
        Para(st.t("diff.beam")),
    )
    return sec
