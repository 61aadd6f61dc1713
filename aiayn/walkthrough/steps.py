"""The note's steps 1-14, each computed by hand and proved equal to the model.  Sections 3.1-3.5.

Every step takes the previous step's values from ``aiayn.trace`` (what the PyTorch model
computed), computes the note's formula again in plain NumPy from the model's own parameters,
and checks that both agree (``Prover``); a mismatch raises ``ProofError`` naming the step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aiayn.model import Trace
from aiayn.walkthrough.doc import Formula, Group, Mat, Para, Prover, Section, Table
from aiayn.walkthrough.example import Example

Text = Callable[..., str]


def arr(x: Any) -> np.ndarray:
    """A tensor (or array) as a float64 NumPy array, batch row 0 when it has one."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def pe_table(n: int, d: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...), straight from 3.5."""
    pe = np.zeros((n, d))  # (n, D)
    for pos in range(n):
        for i in range(d // 2):
            pe[pos, 2 * i] = math.sin(pos / 10000 ** (2 * i / d))
            pe[pos, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d))
    return pe


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """softmax of each row; -inf entries get weight exactly 0."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))  # (n, m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float):
    """(mu, sigma^2, xhat, LN(x)) row by row: the note's step 3 formula."""
    mu = x.mean(axis=1, keepdims=True)  # (n, 1)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)  # (n, 1)
    xhat = (x - mu) / np.sqrt(var + eps)  # (n, D)
    return mu, var, xhat, gamma * xhat + beta


class Steps:
    """Builds the sections of steps 1-14 for one example and its trace."""

    def __init__(self, ex: Example, tr: Trace, prover: Prover, t: Text) -> None:
        self.ex, self.tr, self.prover, self.t = ex, tr, prover, t
        self.model = ex.model
        self.d = ex.model.config.d_model
        self.dk = ex.model.config.head_dim
        self.dec = ex.cfg.decimals
        self.eps = ex.model.config.layer_norm_eps
        self.facts: dict[str, Any] = {}  # numbers the later sections reuse

    def prove(self, where: str, what: str, hand: Any, model: Any):
        return self.prover.check(where, what, hand, model)

    def sid(self, step: int, layer: int) -> str:
        return f"step-{step}" if layer == 0 else f"step-{step}-layer-{layer + 1}"

    def title(self, step: int, layer: int, n: int) -> str:
        title = self.t(f"s{step}.title")
        return title if n == 1 else title + self.t("layer", l=layer + 1, n=n)

    # Step 1 and 6 -------------------------------------------------------------------------

    def embedding(self, step: int, side: str) -> Section:
        """X = sqrt(d_model) E[ids] + PE: the note's steps 1 (source) and 6 (target)."""
        ex, d = self.ex, self.d
        ws = ex.src_words if side == "src" else ex.tgt_in_words
        x_model = arr(self.tr.X_E if side == "src" else self.tr.X_D)[0]  # (n, D)
        E = arr(self.model.embedding)  # (V, D)
        rows = E[[ex.vocab.index(w) for w in ws]]  # (n, D)
        pe = pe_table(len(ws), d)  # (n, D)
        x = math.sqrt(d) * rows + pe  # (n, D)
        sym = "E" if side == "src" else "D"
        e_sym = r"E_{\text{src}}" if side == "src" else r"E_{\text{target}}"
        sec = Section(f"step-{step}", self.t(f"s{step}.title"))
        sec.add(
            Formula(
                rf"X_{sym} = \sqrt{{d_{{\text{{model}}}}}}\, {e_sym} + PE"
                rf" \in \mathbb{{R}}^{{n \times d_{{\text{{model}}}}}}"
            )
        )
        if step == 1:
            sec.add(
                Formula(
                    r"PE_{(pos,\,2i)} = \sin\left(pos / 10000^{2i/d_{\text{model}}}\right),"
                    r"\quad PE_{(pos,\,2i+1)} = \cos\left(pos / 10000^{2i/d_{\text{model}}}\right)"
                )
            )
        sec.add(Para(self.t(f"s{step}.text", sqrtd=f"{math.sqrt(d):.3f}", n=len(ws), d=d)))
        cols = [str(j) for j in range(d)]
        sec.add(
            Group(
                [Mat(e_sym, rows, ws, cols), Mat("PE", pe, [str(p) for p in range(len(ws))], cols)]
            ),
            Mat(f"X_{sym}", x, ws, cols),
            self.prove(f"step {step}", rf"X_{sym} = \sqrt{{d}}\,{e_sym} + PE", x, x_model),
        )
        return sec

    # Attention (steps 2, 7, 9) -------------------------------------------------------------

    def attention(
        self,
        sec: Section,
        where: str,
        mha: Any,
        rec: dict[str, Any],
        x_q: np.ndarray,
        x_kv: np.ndarray,
        rows: list[str],
        cols: list[str],
        causal: bool,
        names: dict[str, str],
    ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Per head: Q_i, K_i, V_i, S_i (masked), A_i = softmax, O_i; then Concat and W^O."""
        H, K = mha.n_heads, mha.d_k
        wq, wk, wv, wo = (arr(w) for w in (mha.w_q, mha.w_k, mha.w_v, mha.w_o))
        n_q, n_k = x_q.shape[0], x_kv.shape[0]
        mask = np.where(np.tril(np.ones((n_q, n_k))) > 0, 0.0, -np.inf) if causal else None
        if causal:
            sec.add(Mat("M", mask, rows, cols, kind="mask"))
        dcols = [str(j) for j in range(self.d)]
        kcols = [str(j) for j in range(K)]
        heads, weights = [], []
        for i in range(H):
            c = slice(i * K, (i + 1) * K)
            q, k, v = x_q @ wq[:, c], x_kv @ wk[:, c], x_kv @ wv[:, c]  # (n, K) each
            s = q @ k.T / math.sqrt(K)  # (n_q, n_k)
            s_masked = s + mask if causal else s  # (n_q, n_k)
            a = softmax_rows(s_masked)  # (n_q, n_k)
            o = a @ v  # (n_q, K)
            j = i + 1
            sec.add(Para(self.t("head", i=j, lo=i * K, hi=(i + 1) * K - 1)))
            sec.add(
                Group(
                    [
                        Mat(rf"W_{{Q_{j}}}{names['w']}", wq[:, c], dcols, kcols),
                        Mat(rf"W_{{K_{j}}}{names['w']}", wk[:, c], dcols, kcols),
                        Mat(rf"W_{{V_{j}}}{names['w']}", wv[:, c], dcols, kcols),
                    ]
                )
            )
            if n_q == n_k:
                sec.add(
                    Group(
                        [
                            Mat(f"Q_{j}", q, rows, kcols),
                            Mat(f"K_{j}", k, cols, kcols),
                            Mat(f"V_{j}", v, cols, kcols),
                        ]
                    )
                )
            else:
                sec.add(Mat(f"Q_{j}", q, rows, kcols))
                sec.add(Group([Mat(f"K_{j}", k, cols, kcols), Mat(f"V_{j}", v, cols, kcols)]))
            mats = [Mat(f"S_{j}", s, rows, cols)]
            if causal:
                mats.append(Mat(rf"S_{{{j},\text{{masked}}}}", s_masked, rows, cols, kind="mask"))
            mats.append(Mat(f"A_{j}", a, rows, cols, kind="prob"))
            sec.add(Group(mats), Mat(f"O_{j}", o, rows, kcols))
            w = f"{where}, head {j}"
            for what, hand, key in (
                (rf"Q_{j} = {names['q']} W_{{Q_{j}}}", q, "Q"),
                (rf"K_{j} = {names['kv']} W_{{K_{j}}}", k, "K"),
                (rf"V_{j} = {names['kv']} W_{{V_{j}}}", v, "V"),
                (rf"S_{j} = Q_{j} K_{j}^\top / \sqrt{{d_k}}", s, "scores"),
            ):
                sec.add(self.prove(w, what, hand, arr(rec[key])[0, i]))
            if causal:
                sec.add(self.prove(w, rf"S_{j} + M", s_masked, arr(rec["scores_masked"])[0, i]))
            sec.add(
                self.prove(
                    w, rf"A_{j} = \operatorname{{softmax}}(S_{j})", a, arr(rec["weights"])[0, i]
                )
            )
            sec.add(self.prove(w, rf"O_{j} = A_{j} V_{j}", o, arr(rec["O"])[0, i]))
            heads.append(o)
            weights.append(a)
        concat = np.concatenate(heads, axis=1)  # (n_q, H K)
        m = concat @ wo  # (n_q, D)
        hk_cols = [str(j) for j in range(H * K)]
        sec.add(
            Para(self.t("concat")),
            Group(
                [
                    Mat(r"\operatorname{Concat}(O_1..O_h)", concat, rows, hk_cols),
                    Mat(names.get("wo", "W^O"), wo, hk_cols, dcols),
                ]
            ),
            Mat(names["M"], m, rows, dcols),
            self.prove(where, r"\operatorname{Concat}(O_1..O_h)", concat, arr(rec["concat"])[0]),
            self.prove(
                where, names["M"] + r" = \operatorname{Concat}(O_1..O_h)\, W^O", m, arr(rec["M"])[0]
            ),
        )
        return weights, concat, m

    # Add & Norm, FFN ------------------------------------------------------------------------

    def add_norm(
        self,
        sec: Section,
        where: str,
        norm: Any,
        x: np.ndarray,
        sub: np.ndarray,
        r_model: Any,
        h_model: Any,
        rows: list[str],
        names: tuple[str, str, str],
    ):
        """R = x + sub, then LN(R) = gamma (R - mu) / sqrt(sigma^2 + eps) + beta, row by row.

        names: (R's symbol, the sum it stands for, the output's symbol), LaTeX.
        """
        r_name, sum_tex, h_name = names
        gamma, beta = arr(norm.weight), arr(norm.bias)
        r = x + sub  # (n, D)
        mu, var, xhat, h = layer_norm(r, gamma, beta, self.eps)
        cols = [str(j) for j in range(self.d)]
        sec.add(Mat(r_name, r, rows, cols))
        if r_model is not None:
            sec.add(self.prove(where, f"{r_name} = {sum_tex}", r, r_model))
        sec.add(
            Group(
                [
                    Mat(r"\mu", mu, rows, ["μ"]),
                    Mat(r"\sigma^2", var, rows, ["σ²"]),
                    Mat(r"\hat{x} = (x - \mu)/\sqrt{\sigma^2 + \epsilon}", xhat, rows, cols),
                ]
            ),
            Group([Mat(r"\gamma", gamma, None, cols), Mat(r"\beta", beta, None, cols)]),
            Mat(h_name, h, rows, cols),
            self.prove(where, rf"{h_name} = \operatorname{{LN}}({r_name})", h, h_model),
        )
        return h

    def ffn(
        self,
        sec: Section,
        where: str,
        ffn: Any,
        rec: dict[str, Any],
        x: np.ndarray,
        f_model: Any,
        rows: list[str],
        x_name: str,
        f_name: str,
    ) -> np.ndarray:
        """F = ReLU(x W_1 + b_1) W_2 + b_2, position by position.  Section 3.3."""
        w1, b1, w2, b2 = (arr(p) for p in (ffn.w_1, ffn.b_1, ffn.w_2, ffn.b_2))
        hidden = np.maximum(x @ w1 + b1, 0.0)  # (n, F)
        f = hidden @ w2 + b2  # (n, D)
        dcols = [str(j) for j in range(self.d)]
        fcols = [str(j) for j in range(w1.shape[1])]
        zeros = int((hidden == 0).sum())
        sec.add(
            Para(self.t("ffn.text", d=self.d, dff=w1.shape[1], z=zeros, nh=hidden.size)),
            Mat("W_1", w1, dcols, fcols),
            Mat("b_1", b1, None, fcols),
            Group([Mat("W_2", w2, fcols, dcols), Mat("b_2", b2, None, dcols)]),
            Mat(rf"\operatorname{{ReLU}}({x_name} W_1 + b_1)", hidden, rows, fcols),
            Mat(f_name, f, rows, dcols),
            self.prove(
                where, rf"\operatorname{{ReLU}}({x_name} W_1 + b_1)", hidden, arr(rec["hidden"])[0]
            ),
            self.prove(where, rf"{f_name} = \operatorname{{ReLU}}(\cdot) W_2 + b_2", f, f_model),
        )
        return f

    # Steps 13 and 14 --------------------------------------------------------------------------

    def output(self) -> list[Section]:
        ex, tr = self.ex, self.tr
        rows, vocab = ex.tgt_in_words, ex.vocab
        z = arr(tr.Z_D)[0]  # (T, D)
        E = arr(self.model.embedding)  # (V, D)
        logits = z @ E.T  # (T, V)
        s13 = Section("step-13", self.t("s13.title"))
        s13.add(
            Formula(r"L = Z_D E^\top \in \mathbb{R}^{n_D \times |V|}"),
            Para(self.t("s13.text", d=self.d, v=len(vocab))),
            Mat("L", logits, rows, vocab),
            self.prove("step 13", r"L = Z_D E^\top", logits, arr(tr.L)[0]),
        )
        p = softmax_rows(logits)  # (T, V)
        s14 = Section("step-14", self.t("s14.title"))
        s14.add(
            Formula(r"P_{t,v} = \frac{\exp L_{t,v}}{\sum_{v'} \exp L_{t,v'}}"),
            Para(self.t("s14.text", u=f"{1 / len(vocab):.3f}")),
            Mat("P", p, rows, vocab, kind="prob"),
            self.prove("step 14", r"P = \operatorname{softmax}(L)", p, arr(tr.P)[0]),
            self.prove("step 14", r"\sum_v P_{t,v} = 1", p.sum(axis=1), np.ones(len(rows))),
        )
        table = []
        for t, w in enumerate(rows):
            best = int(p[t].argmax())
            table.append([str(t), w, vocab[best], f"{p[t, best]:.3f}", ex.tgt_out_words[t]])
        s14.add(Table([self.t(f"s14.col{i}") for i in range(5)], table))
        self.facts.update(logits=logits, p=p)
        return [s13, s14]
