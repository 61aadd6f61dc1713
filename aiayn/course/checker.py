"""The checker: run a learner's function against aiayn's own and say what is wrong.

An ``Exercise`` names aiayn's function (``reference``), the inputs to try (``cases``: the
study note's sentence first, then random shapes) and the known mistakes (``Mistake``: the wrong
function a learner often writes, run on the same inputs; when the learner's output equals it,
the mistake is named). ``run`` returns a ``Verdict`` of one or two sentences in the learner's
language; nothing the learner's function does (a wrong type, an exception, NaN, the wrong
shape, a loop that never ends) reaches the learner as a traceback from aiayn's code.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from aiayn.course.messages import say


@dataclass(frozen=True)
class Case:
    """One input to try: the arguments and how to name them ("the note's sentence", shapes)."""

    args: tuple[Any, ...]
    where: dict[str, str]  # lang -> "on the note's sentence (...)"


@dataclass(frozen=True)
class Mistake:
    """A known mistake: its key (messages.MISTAKES) and the wrong function, same signature."""

    key: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class Exercise:
    """A function the learner writes, checked against ``reference`` (aiayn's own)."""

    name: str
    notebook: int
    reference: Callable[..., Any]
    cases: Callable[[], list[Case]]
    hint: dict[str, str]  # lang -> the formula to write, for the "not written yet" answer
    mistakes: tuple[Mistake, ...] = ()
    atol: float = 1e-4
    rtol: float = 1e-4


@dataclass(frozen=True)
class Verdict:
    """The checker's answer: ``ok``, the message, and the known mistake's key (or None)."""

    ok: bool
    message: str
    mistake: str | None = None
    kind: str = "ok"  # ok, todo, type, raised, timeout, shape, nan, value, unknown
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#b3261e"
        text = self.message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return (
            f'<div style="color:{colour};font-family:monospace;white-space:pre-wrap">{text}</div>'
        )


class _TimeUp(BaseException):
    """Raised inside the learner's function when the time limit is reached."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with _TimeUp after ``seconds`` (main thread only, else no limit;
    no limit either where there is no SIGALRM, as on Windows)."""
    main = threading.current_thread() is threading.main_thread()
    if not main or seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise _TimeUp

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _clone(x: Any) -> Any:
    """A copy of the arguments, so that a learner's in-place edit cannot change the next run."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(_clone(v) for v in x)
    return x


def _array(x: Any) -> np.ndarray | None:
    """A tensor, array, number or bool as a float64 array; None for anything else."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return x.astype(np.float64)
    if isinstance(x, bool | int | float | np.number):
        return np.asarray(float(x))
    return None


def _parts(x: Any, n: int) -> list[np.ndarray | None] | None:
    """The learner's output as n arrays (n = 1: one value), or None if it is not that."""
    if n == 1:
        return [_array(x)]
    if isinstance(x, tuple | list) and len(x) == n:
        return [_array(v) for v in x]
    return None


def _same(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Entry by entry: equal within tolerance (NaN = NaN, inf = inf of the same sign)."""
    return np.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True)


def _shape(a: np.ndarray) -> str:
    return "()" if a.ndim == 0 else "(" + ", ".join(str(n) for n in a.shape) + ")"


def _num(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.4g}"


def _learner_line(exc: BaseException) -> int | None:
    """The line of the learner's own code where ``exc`` was raised (not in a library)."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        name = frame.filename
        if "site-packages" in name or "/aiayn/" in name or name.startswith("/usr/lib"):
            continue
        return frame.lineno
    return None


def _kind_of(reference: Any) -> str:
    return "tensor" if isinstance(reference, torch.Tensor | np.ndarray) else "number"


def _matches(ex: Exercise, case: Case, got: list[np.ndarray], n: int) -> str | None:
    """The key of the first known mistake whose output equals the learner's, or None."""
    for m in ex.mistakes:
        try:
            with time_limit(10.0):
                wrong = _parts(m.fn(*_clone(case.args)), n)
        except Exception:  # a mistake that does not apply to this input
            continue
        if wrong is None or any(w is None for w in wrong):
            continue
        if all(
            w.shape == g.shape and bool(_same(g, w, ex.atol, ex.rtol).all())
            for w, g in zip(wrong, got, strict=True)
        ):
            return m.key
    return None


def run(ex: Exercise, fn: Any, lang: str, limit: float = 20.0) -> Verdict:
    """Check ``fn`` against ``ex.reference`` on every case; the first problem is the answer."""
    t = lambda key, **kw: say(lang, key, name=ex.name, **kw)  # noqa: E731
    if not callable(fn):
        return Verdict(False, t("not_callable", got=type(fn).__name__), kind="type")
    cases = ex.cases()
    for case in cases:
        where = case.where[lang]
        expected = ex.reference(*_clone(case.args))
        n = len(expected) if isinstance(expected, tuple) else 1
        want = _parts(expected, n)
        assert want is not None
        assert all(w is not None for w in want)
        try:
            with time_limit(limit):
                out = fn(*_clone(case.args))
        except NotImplementedError:
            return Verdict(False, t("todo", hint=ex.hint[lang]), kind="todo")
        except _TimeUp:
            return Verdict(False, t("timeout", limit=f"{limit:g}", where=where), kind="timeout")
        except Exception as e:
            line = _learner_line(e)
            at = t("at_line", line=line) if line else ""
            what = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
            return Verdict(False, t("raised", what=what[:200], at=at, where=where), kind="raised")
        got = _parts(out, n)
        if got is None or any(g is None for g in got):
            kind = _kind_of(expected[0] if n > 1 else expected)
            shapes = ", ".join(_shape(w) for w in want)
            if n > 1:
                return Verdict(
                    False,
                    t("not_tuple", n=n, got=type(out).__name__, shapes=shapes, where=where),
                    kind="type",
                )
            key = "wrong_type_tensor" if kind == "tensor" else "wrong_type_number"
            return Verdict(False, t(key, got=type(out).__name__, shape=shapes), kind="type")
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            part = t("part", i=i + 1) if n > 1 else ""
            if g.shape != w.shape:
                mistake = _matches(ex, case, got, n)
                msg = t("shape", part=part, got=_shape(g), want=_shape(w), where=where)
                return _with_mistake(msg, mistake, lang, "shape")
            bad_nan = np.isnan(g) & ~np.isnan(w)
            if bad_nan.any():
                idx = tuple(int(k) for k in np.argwhere(bad_nan)[0])
                mistake = _matches(ex, case, got, n)
                shown = f"[{', '.join(map(str, idx))}]"
                msg = t("nan", part=part, idx=shown, want=_num(float(w[idx])), where=where)
                return _with_mistake(msg, mistake, lang, "nan")
            close = _same(g, w, ex.atol, ex.rtol)
            if not close.all():
                idx = tuple(int(k) for k in np.argwhere(~close)[0])
                mistake = _matches(ex, case, got, n)
                shown = f"[{', '.join(map(str, idx))}]" if idx else ""
                msg = t(
                    "value",
                    part=part,
                    idx=shown,
                    got=_num(float(g[idx])),
                    want=_num(float(w[idx])),
                    where=where,
                )
                return _with_mistake(msg, mistake, lang, "value")
    return Verdict(True, t("ok", n=len(cases)), kind="ok")


def _with_mistake(msg: str, mistake: str | None, lang: str, kind: str) -> Verdict:
    if mistake is None:
        return Verdict(False, msg, kind=kind)
    gap = "" if lang == "zh" else " "
    return Verdict(False, msg + gap + say(lang, "known", what=say(lang, mistake)), mistake, kind)
