"""The notebook course's checker: ``check("name", your_function)``.  notebooks/, docs/course.md.

The course (``notebooks/``, in English and Chinese) asks the learner to write the paper's
formulas: the positional encoding, attention, the masks, LayerNorm, the FFN, label smoothing,
Eq. (3), one beam step, ... ``check`` runs the learner's function against aiayn's own on the
study note's sentence and on random shapes, and answers in one or two sentences: the shape it
expected, the first entry that differs, and, where it recognises one, the known mistake by
name. It answers in the notebook's language: the folder the notebook runs in (``notebooks/zh``
gives Chinese), unless ``set_lang`` or the environment variable ``AIAYN_COURSE_LANG`` says
otherwise. The reference solutions live apart, in ``aiayn.course.solutions``.

>>> import torch
>>> check("causal_mask", lambda T: torch.ones(T, T).tril(-1), lang="en").mistake
'causal_hides_diagonal'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aiayn.course.checker import Exercise, Verdict, run
from aiayn.course.figures import heatmap, use_cjk_font
from aiayn.course.messages import say

LANGS = ("en", "zh")
_chosen: str | None = None


def exercises() -> dict[str, Exercise]:
    """Every exercise of the course, by name, in the order of the notebooks."""
    from aiayn.course import exercises_model, exercises_train

    found = [*exercises_model.EXERCISES, *exercises_train.EXERCISES]
    return {ex.name: ex for ex in sorted(found, key=lambda ex: ex.notebook)}


def note_example() -> Any:
    """The note's toy example (aiayn.walkthrough.example.Example): vocabulary, ids, the float64
    model in eval mode; ``.model``, ``.src``, ``.tgt_in``, ``.tgt_out``, ``.vocab``."""
    from aiayn.course.note import note

    return note()["ex"]


def set_lang(lang: str | None) -> None:
    """Answer in LANG ("en" or "zh") from now on; None: the notebook's folder decides again."""
    global _chosen
    if lang is not None and lang not in LANGS:
        raise ValueError(f"lang: must be one of {', '.join(LANGS)}, got {lang!r}")
    _chosen = lang


def current_lang() -> str:
    """set_lang's choice, else $AIAYN_COURSE_LANG, else "zh" in a folder named zh, else "en"."""
    if _chosen is not None:
        return _chosen
    env = os.environ.get("AIAYN_COURSE_LANG", "")
    if env in LANGS:
        return env
    return "zh" if Path.cwd().name == "zh" else "en"


def check(name: str, fn: Any, lang: str | None = None, limit: float = 20.0) -> Verdict:
    """Check the learner's ``fn`` for the exercise NAME; a Verdict that shows as its message.

    ``limit``: seconds the learner's function may run over all the inputs tried.
    """
    lang = lang if lang in LANGS else current_lang()
    table = exercises()
    if not isinstance(name, str) or name not in table:
        names = ", ".join(table)
        return Verdict(False, say(lang, "unknown", name=name, names=names), kind="unknown")
    ex = table[name]
    try:
        return run(ex, fn, lang, limit)
    except Exception as e:  # a fault of the checker itself: one line, never a traceback
        what = f"{type(e).__name__}: {e}"[:200]
        return Verdict(False, say(lang, "internal", name=name, what=what), kind="internal")


__all__ = [
    "Verdict",
    "check",
    "current_lang",
    "exercises",
    "heatmap",
    "note_example",
    "set_lang",
    "use_cjk_font",
]
