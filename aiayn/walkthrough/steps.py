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
from aiayn.walkthrough.doc import Formula, Group, Kind, Mat, Para, Prover, Section, Table, View, arr
from aiayn.walkthrough.example import Example

Text = Callable[..., str]


class Steps:
    """The example, its trace, the prover and the prose; builds steps 1, 6, 13 and 14.

    ``view`` says how much of each matrix is shown (all of it by default); the proofs always
    compare whole matrices.
    """

    def __init__(
        self, ex: Example, tr: Trace, prover: Prover, t: Text, view: View | None = None
    ) -> None:
        self.ex, self.tr, self.prover, self.t = ex, tr, prover, t
        self.view = view or View()
        self.model = ex.model
        self.d = ex.model.config.d_model
        self.dk = ex.model.config.d_k
        self.dec = ex.cfg.decimals
        self.eps = ex.model.config.layer_norm_eps
        self.facts: dict[str, Any] = {}  # numbers the later sections reuse

    def prove(self, where: str, what: str, hand: Any, model: Any):
        return self.prover.check(where, what, hand, model)

    def mat(
        self,
        name: str,
        values: Any,
        rows: list[str] | None = None,
        cols: list[str] | None = None,
        kind: Kind = "signed",
    ) -> Mat:
        """A matrix as the view shows it (its first rows and columns; the whole by default)."""
        return self.view.mat(Mat(name, values, rows, cols, kind))

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
        E = arr(self.model.embedding)  # (V, D)
        ids = (ex.src if side == "src" else ex.tgt_in).numpy()  # (1, n)
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
                [
                    self.mat(e_sym, rows, ws, cols),
                    self.mat("PE", pe, [str(p) for p in range(len(ws))], cols),
                ]
            ),
            self.mat(f"X_{sym}", x, ws, cols),
            self.prove(f"step {step}", rf"X_{sym} = \sqrt{{d}}\,{e_sym} + PE", x, x_model),
        )
        return sec

    # Steps 13 and 14 --------------------------------------------------------------------------

    def output(self) -> list[Section]:
        """L = Z_D E^T and P = softmax(L): steps 13 and 14.

        With ``view.top`` (a large vocabulary) L and P are shown in the columns of the target's
        tokens only, and a table lists each row's most probable tokens; both are proved whole.
        """
        ex, tr, top = self.ex, self.tr, self.view.top
        rows, vocab = ex.tgt_in_words, ex.vocab
        logits = ref.output_forward(arr(tr.Z_D), arr(self.model.embedding))[0]  # (T, V)
        keep = list(dict.fromkeys(ex.tgt_out[0].tolist()))  # the target's token ids, in order

        def shown(name: str, values: np.ndarray, kind: Kind = "signed") -> Mat:
            if top is None:
                return self.mat(name, values, rows, vocab, kind)
            part = values[:, keep]  # (T, the target's distinct tokens)
            return self.view.mat(
                Mat(name, part, rows, [vocab[i] for i in keep], kind, values.shape)
            )

        s13 = Section("step-13", self.t("s13.title"))
        s13.add(
            Formula(r"L = Z_D E^\top \in \mathbb{R}^{n_D \times |V|}"),
            Para(self.t("s13.text", d=self.d, v=len(vocab))),
            *([Para(self.t("s13.columns", v=len(vocab)))] if top is not None else []),
            shown("L", logits),
            self.prove("step 13", r"L = Z_D E^\top", logits, arr(tr.L)[0]),
        )
        p = ref.softmax_forward(logits)  # (T, V)
        s14 = Section("step-14", self.t("s14.title"))
        text = ("s14.text", {"u": f"{1 / len(vocab):.3f}"}) if top is None else ("s14.top", {})
        s14.add(
            Formula(r"P_{t,v} = \frac{\exp L_{t,v}}{\sum_{v'} \exp L_{t,v'}}"),
            Para(self.t(text[0], **text[1], v=len(vocab), k=top)),
            shown("P", p, kind="prob"),
            self.prove("step 14", r"P = \operatorname{softmax}(L)", p, arr(tr.P)[0]),
            self.prove("step 14", r"\sum_v P_{t,v} = 1", p.sum(axis=1), np.ones(len(rows))),
        )
        table = []
        for t, w in enumerate(rows):
            if top is None:
                best = int(p[t].argmax())
                table.append([str(t), w, vocab[best], f"{p[t, best]:.3f}", ex.tgt_out_words[t]])
                continue
            y = int(ex.tgt_out[0, t])
            order = np.argsort(-p[t], kind="stable")[:top]  # (top,): the most probable first
            best = "  ".join(f"{vocab[i]} {p[t, i]:.3f}" for i in order)
            table.append([str(t), w, ex.tgt_out_words[t], f"{p[t, y]:.3f}", best])
        s14.add(Table(self.header("s14" if top is None else "s14.top"), table))
        self.facts.update(logits=logits, p=p)
        return [s13, s14]
