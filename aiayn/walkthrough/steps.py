"""The note's steps 1, 6, 13 and 14, and what every step shares.  Sections 3.1-3.5.

Every step takes the previous step's values from ``aiayn.trace`` (what the PyTorch model
computed), computes the note's formula again with the NumPy twin (``aiayn.numpy_twin``) from the
model's own parameters, and checks that both agree (``Prover``); a mismatch raises
``ProofError`` naming the step. The layers' steps 2-5 and 7-12 are in ``layers``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aiayn import numpy_twin as ref
from aiayn.model import Trace
from aiayn.walkthrough.doc import Formula, Group, Mat, Para, Prover, Section, Table, arr
from aiayn.walkthrough.example import Example

Text = Callable[..., str]


class Steps:
    """The example, its trace, the prover and the prose; builds steps 1, 6, 13 and 14."""

    def __init__(self, ex: Example, tr: Trace, prover: Prover, t: Text) -> None:
        self.ex, self.tr, self.prover, self.t = ex, tr, prover, t
        self.model = ex.model
        self.d = ex.model.config.d_model
        self.dk = ex.model.config.d_k
        self.dec = ex.cfg.decimals
        self.eps = ex.model.config.layer_norm_eps
        self.facts: dict[str, Any] = {}  # numbers the later sections reuse

    def prove(self, where: str, what: str, hand: Any, model: Any):
        return self.prover.check(where, what, hand, model)

    def header(self, name: str) -> list[str]:
        """A table's header: the cells of the text ``name.cols``."""
        return self.t(f"{name}.cols").split(" | ")

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
        E, ids = arr(self.model.embedding), ex.ids(ws).numpy()  # (V, D), (1, n)
        x = ref.embed_forward(ids, E)[0][0]  # (n, D)
        rows, pe = E[ids[0]], ref.positions(len(ws), d)  # (n, D) each: what x sums
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

    # Steps 13 and 14 --------------------------------------------------------------------------

    def output(self) -> list[Section]:
        ex, tr = self.ex, self.tr
        rows, vocab = ex.tgt_in_words, ex.vocab
        logits = ref.output_forward(arr(tr.Z_D), arr(self.model.embedding))[0]  # (T, V)
        s13 = Section("step-13", self.t("s13.title"))
        s13.add(
            Formula(r"L = Z_D E^\top \in \mathbb{R}^{n_D \times |V|}"),
            Para(self.t("s13.text", d=self.d, v=len(vocab))),
            Mat("L", logits, rows, vocab),
            self.prove("step 13", r"L = Z_D E^\top", logits, arr(tr.L)[0]),
        )
        p = ref.softmax_forward(logits)  # (T, V)
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
        s14.add(Table(self.header("s14"), table))
        self.facts.update(logits=logits, p=p)
        return [s13, s14]
