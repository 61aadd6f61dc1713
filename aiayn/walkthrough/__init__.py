"""The note's walkthrough: its 14 steps on its toy example, each proved.  Sections 3-6.

``build(WalkthroughConfig())`` replays the study note (d_model 6, a vocabulary of 8, 2 heads,
one layer each side) on a float64 model, proving every step against ``aiayn.trace``; then the
loss row by row, one backward pass (autograd = the NumPy twin), one optimizer step, the
positional-encoding explanation and where the note and the paper differ. ``build_trained(PATH)``
replays the same 14 steps and the loss on a trained checkpoint: a sentence (the note's "I love
you." by default), its BPE pieces and the model's own translation, every matrix proved whole and
shown in part (``View``). ``render_text`` and ``render_html`` present the resulting ``Document``.

>>> doc = build(WalkthroughConfig())
>>> [s.id for s in doc.sections][:3]
['example', 'step-1', 'step-2']
>>> all(c.diff <= c.tol for c in doc.checks)
True
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

import torch

from aiayn.errors import UserError
from aiayn.model import Trace, trace
from aiayn.walkthrough import differences, layers, positions, trained, training
from aiayn.walkthrough.doc import (
    Check,
    Document,
    Mat,
    Para,
    ProofError,
    Prover,
    Section,
    Table,
    View,
    arr,
)
from aiayn.walkthrough.example import Example, WalkthroughConfig
from aiayn.walkthrough.steps import Steps
from aiayn.walkthrough.trained import NOTE_SENTENCE, TrainedExample

__all__ = [
    "NOTE_SENTENCE",
    "TRAINED_VIEW",
    "Document",
    "Example",
    "ProofError",
    "TrainedExample",
    "View",
    "WalkthroughConfig",
    "build",
    "build_trained",
    "prove",
    "prove_trained",
    "texts",
]

# What a trained model's walkthrough shows by default: 8 rows and 8 columns of each matrix,
# heads 1 and 2, the 5 most probable tokens of each output position.
TRAINED_VIEW = View(rows=8, cols=8, heads=(1, 2), top=5)

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


def _heads(view: View, n_heads: int, cap: bool = False) -> View:
    """The view with its heads checked against the model's (``cap``: drop those beyond)."""
    if view.heads is None:
        return view
    heads = tuple(i for i in view.heads if i <= n_heads) if cap else view.heads
    bad = [i for i in heads if not 1 <= i <= n_heads]
    if bad:
        raise UserError(
            f"--heads {','.join(map(str, view.heads))}: the model has {n_heads} heads, "
            f"numbered 1 to {n_heads}"
        )
    return dataclasses.replace(view, heads=heads)


def _summary(t: Any, checks: list[Check], key: str = "summary.text") -> Section:
    worst = max(checks, key=lambda c: c.diff / c.tol if c.tol else 0.0)
    summary = Section("summary", t("summary.title"))
    ratio = f"{worst.diff / worst.tol:.1e}" if worst.tol else "0"
    diff = f"{max(c.diff for c in checks):.1e}"
    summary.add(Para(t(key, n=len(checks), diff=diff, ratio=ratio)))
    return summary


def prove(ex: Example, tr: Trace, view: View | None = None) -> Document:
    """Every section of the walkthrough for an example and the model's trace of it.

    ``view`` chooses how much of each matrix is shown (all of it by default). Raises
    ProofError at the first step whose hand computation differs from ``tr``.
    """
    t = texts(ex.cfg.lang)
    prover = Prover()
    st = Steps(ex, tr, prover, t, _heads(view or View(), ex.model.config.n_heads))
    sections = [_intro(st), st.embedding(1, "src"), *layers.stack(st, "encoder")]
    sections += [st.embedding(6, "tgt"), *layers.stack(st, "decoder")]
    sections += [*st.output(), training.loss_section(st)]
    closing = differences.closing_section(st)  # before the update changes the weights
    pos = positions.section(st)
    sections += [training.backward_section(st), training.update_section(st), pos, closing]
    sections.append(_summary(t, prover.checks))
    log.debug("walkthrough: %d checks passed", len(prover.checks))
    return Document(t("doc.title"), ex.cfg.lang, sections, prover.checks)


def build(cfg: WalkthroughConfig, view: View | None = None) -> Document:
    """Build the example's model, trace it, and prove the walkthrough (ProofError if not)."""
    ex = Example.build(cfg)
    view = _heads(view or View(), ex.model.config.n_heads)
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    return prove(ex, tr, view)


def prove_trained(ex: TrainedExample, tr: Trace, view: View = TRAINED_VIEW) -> Document:
    """The note's 14 steps and the loss for a trained model's translation and its trace.

    The steps are the toy walkthrough's (``Steps``, ``layers``, the loss of ``training``); the
    training sections (backward, update) and the closing ones stay with the toy example. Raises
    ProofError at the first step whose hand computation differs from ``tr``.
    """
    toy = texts(ex.cfg.lang)

    def t(key: str, **values: object) -> str:
        return toy(trained.TEXTS.get(key, key), **values)

    prover = Prover()
    st = Steps(ex, tr, prover, t, _heads(view, ex.model.config.n_heads))
    sections = [trained.intro(st), st.embedding(1, "src"), *layers.stack(st, "encoder")]
    sections += [st.embedding(6, "tgt"), *layers.stack(st, "decoder")]
    sections += [*st.output(), training.loss_section(st)]
    sections.append(_summary(t, prover.checks, "trained.summary.text"))
    log.debug("walkthrough of %s: %d checks passed", ex.checkpoint, len(prover.checks))
    return Document(t("trained.doc.title"), ex.cfg.lang, sections, prover.checks)


def build_trained(
    checkpoint: str | Path, cfg: WalkthroughConfig | None = None, view: View = TRAINED_VIEW
) -> Document:
    """Load a checkpoint, translate ``cfg.source`` (the note's sentence by default), trace the
    pair and prove the 14 steps (ProofError if one fails). The default view's heads 1 and 2 are
    cut to the model's heads; heads asked for beyond them are a UserError."""
    ex = TrainedExample.load(checkpoint, cfg)
    cap = view.heads == TRAINED_VIEW.heads
    view = _heads(view, ex.model.config.n_heads, cap=cap)
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    return prove_trained(ex, tr, view)
