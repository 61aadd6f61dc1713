"""The note's walkthrough: its 14 steps on its toy example, each proved.  Sections 3-6.

``build(WalkthroughConfig())`` replays the study note (d_model 6, a vocabulary of 8, 2 heads,
one layer each side) on a float64 model, proving every step against ``aiayn.trace``; then the
loss row by row, one backward pass (autograd = the NumPy twin), one optimizer step, the
positional-encoding explanation and where the note and the paper differ. ``render_text`` and
``render_html`` present the resulting ``Document``.

>>> doc = build(WalkthroughConfig())
>>> [s.id for s in doc.sections][:3]
['example', 'step-1', 'step-2']
>>> all(c.diff <= c.tol for c in doc.checks)
True
"""

from __future__ import annotations

import logging
import math

import torch

from aiayn.model import Trace, trace
from aiayn.walkthrough import differences, layers, positions, training
from aiayn.walkthrough.doc import Document, Mat, Para, ProofError, Prover, Section, Table, arr
from aiayn.walkthrough.example import Example, WalkthroughConfig
from aiayn.walkthrough.steps import Steps

__all__ = ["Document", "Example", "ProofError", "WalkthroughConfig", "build", "prove", "texts"]

log = logging.getLogger(__name__)


def texts(lang: str):
    """The prose of a language: t(key, **values) -> str."""
    if lang == "zh":
        from aiayn.walkthrough.text_zh import TEXT
    else:
        from aiayn.walkthrough.text_en import TEXT

    def t(key: str, **values: object) -> str:
        return TEXT[key].format(**values)

    return t


def _intro(st: Steps) -> Section:
    ex, cfg, mcfg = st.ex, st.ex.cfg, st.model.config
    sizes = {"d": mcfg.d_model, "h": mcfg.n_heads, "dk": mcfg.d_k, "dff": mcfg.d_ff}
    words = {"enc": " ".join(ex.src_words), "n": len(ex.src_words)}
    words |= {"dec": " ".join(ex.tgt_in_words), "out": " ".join(ex.tgt_out_words)}
    sec = Section("example", st.t("intro.title"))
    sec.add(
        Para(st.t("intro.text")),
        Para(st.t("intro.settings", **sizes, n=mcfg.n_layers, seed=cfg.seed, dec=cfg.decimals)),
        Para(st.t("intro.pair", src=cfg.source, tgt=cfg.target, **words)),
        Para(st.t("intro.vocab", v=len(ex.vocab), pad=ex.vocab[mcfg.pad_id])),
        Table(st.header("intro"), [[str(i), w] for i, w in enumerate(ex.vocab)]),
        Mat("E", arr(st.model.embedding), ex.vocab, [str(j) for j in range(mcfg.d_model)]),
        Para(st.t("intro.rows", sqrtd=f"{math.sqrt(mcfg.d_model):.3f}")),
    )
    return sec


def prove(ex: Example, tr: Trace) -> Document:
    """Every section of the walkthrough for an example and the model's trace of it.

    Raises ProofError at the first step whose hand computation differs from ``tr``.
    """
    t = texts(ex.cfg.lang)
    prover = Prover()
    st = Steps(ex, tr, prover, t)
    sections = [_intro(st), st.embedding(1, "src"), *layers.stack(st, "encoder")]
    sections += [st.embedding(6, "tgt"), *layers.stack(st, "decoder")]
    sections += [*st.output(), training.loss_section(st)]
    closing = differences.closing_section(st)  # before the update changes the weights
    pos = positions.section(st)
    sections += [training.backward_section(st), training.update_section(st), pos, closing]
    checks = prover.checks
    worst = max(checks, key=lambda c: c.diff / c.tol if c.tol else 0.0)
    summary = Section("summary", t("summary.title"))
    ratio = f"{worst.diff / worst.tol:.1e}" if worst.tol else "0"
    diff = f"{max(c.diff for c in checks):.1e}"
    summary.add(Para(t("summary.text", n=len(checks), diff=diff, ratio=ratio)))
    sections.append(summary)
    log.debug("walkthrough: %d checks passed", len(checks))
    return Document(t("doc.title"), ex.cfg.lang, sections, checks)


def build(cfg: WalkthroughConfig) -> Document:
    """Build the example's model, trace it, and prove the walkthrough (ProofError if not)."""
    ex = Example.build(cfg)
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    return prove(ex, tr)
