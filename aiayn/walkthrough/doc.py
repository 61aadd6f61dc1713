"""The walkthrough as data: sections of prose, formulas, matrices and checks; the prover.

The steps build a ``Document``; ``render_text`` prints it for a terminal and ``render_html``
writes it as one self-contained page. Formulas and matrix names are LaTeX (the renderers turn
them into Unicode or MathML); prose is plain text in the chosen language.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Kind = Literal["signed", "prob", "mask"]


class ProofError(RuntimeError):
    """A step's hand computation differs from what the model computed."""


@dataclass
class Para:
    text: str


@dataclass
class Formula:
    tex: str


@dataclass
class Mat:
    """A matrix (or a vector, shown as one row) with optional row and column labels."""

    name: str  # LaTeX
    values: np.ndarray
    rows: list[str] | None = None
    cols: list[str] | None = None
    kind: Kind = "signed"  # colours: signed (diverging), prob (0..1), mask (0 / -inf)
    shape: tuple[int, int] | None = None  # the whole matrix's shape when a part is shown

    def __post_init__(self) -> None:
        v = np.array(self.values, dtype=np.float64)  # a copy: later steps change the weights
        self.values = v[None, :] if v.ndim == 1 else v

    @property
    def cut(self) -> tuple[bool, bool]:
        """(rows left out, columns left out): the values are the first part of a larger matrix."""
        if self.shape is None:
            return False, False
        r, c = self.values.shape
        return r < self.shape[0], c < self.shape[1]

    def labels(self) -> tuple[list[str] | None, list[str] | None]:
        """The row and the column labels, each None where it does not fit the values' shape."""
        r, c = self.values.shape
        rows = self.rows if self.rows is not None and len(self.rows) == r else None
        return rows, self.cols if self.cols is not None and len(self.cols) == c else None

    def cells(self, decimals: int, minus: str = "-") -> list[list[str]]:
        """The entries as text (``number``); a mask's 0 is shown as a plain 0."""
        mask = self.kind == "mask"
        return [
            ["0" if mask and x == 0 else number(x, decimals, minus) for x in row]
            for row in self.values
        ]


@dataclass(frozen=True)
class View:
    """How much of each matrix a walkthrough shows; every value is proved in full regardless.

    ``rows`` and ``cols``: the first rows and columns shown (None: all); ``heads``: the heads
    shown, numbered from 1 as the note numbers them (None: all); ``top``: step 14 lists each
    row's ``top`` most probable tokens and shows L and P only in the columns of the target's
    tokens (None: every column, as for the toy vocabulary).
    """

    rows: int | None = None
    cols: int | None = None
    heads: tuple[int, ...] | None = None
    top: int | None = None

    def shows_head(self, i: int) -> bool:
        """Is head i (from 1) shown?"""
        return self.heads is None or i in self.heads

    def mat(self, m: Mat) -> Mat:
        """m cut to its first ``rows`` rows and ``cols`` columns (the labels with them)."""
        r, c = m.values.shape
        nr = r if self.rows is None or r == 1 else min(r, self.rows)
        nc = c if self.cols is None else min(c, self.cols)
        if (nr, nc) == (r, c):
            return m
        rows, cols = m.labels()
        return Mat(
            m.name,
            m.values[:nr, :nc],
            rows[:nr] if rows is not None else None,
            cols[:nc] if cols is not None else None,
            m.kind,
            m.shape or (r, c),
        )


@dataclass
class Group:
    """Matrices shown side by side."""

    mats: list[Mat]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Check:
    what: str  # LaTeX
    diff: float
    tol: float


@dataclass
class Figure:
    """A heatmap picture for the HTML page (drawn as inline SVG); the terminal shows the caption.

    values (rows, cols) are drawn with rows top to bottom and columns left to right.
    """

    values: np.ndarray
    caption: str
    xlabel: str = ""
    ylabel: str = ""


Block = Para | Formula | Mat | Group | Table | Check | Figure


@dataclass
class Aside:
    """A box 'the note and the paper': what the note's version would compute, and why."""

    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Block | Aside] = field(default_factory=list)

    def add(self, *blocks: Block | Aside) -> Section:
        self.blocks.extend(blocks)
        return self


@dataclass
class Document:
    title: str
    lang: str
    sections: list[Section]
    checks: list[Check]


def number(x: float, decimals: int, minus: str = "-") -> str:
    """A matrix entry: fixed decimals, -inf as -∞ (with ``minus``), no negative zero."""
    if np.isinf(x):
        return minus + "∞" if x < 0 else "∞"
    s = f"{x:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0.0 else s


def arr(x: Any) -> np.ndarray:
    """A tensor (or array) as a float64 NumPy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


class Prover:
    """Compares each hand-computed value with the model's; a mismatch raises ProofError.

    The tolerance is relative to the size of the values: |hand - model| <= tol * max(1, |model|).
    Infinite entries (masked scores) must match exactly.
    """

    def __init__(self, tol: float = 1e-9) -> None:
        self.tol = tol
        self.checks: list[Check] = []

    def check(
        self, where: str, what: str, hand: Any, model: Any, tol: float | None = None
    ) -> Check:
        """Check hand == model and return the Check block (also kept in ``checks``)."""
        tol = self.tol if tol is None else tol
        a, b = arr(hand), arr(model)
        if a.shape != b.shape:
            raise ProofError(f"{where}: {what}: shape {a.shape} by hand, {b.shape} in the model")
        finite = np.isfinite(b)
        if not np.array_equal(np.isfinite(a), finite) or not np.array_equal(a[~finite], b[~finite]):
            raise ProofError(f"{where}: {what}: the infinite (masked) entries differ")
        diff = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
        scale = max(1.0, float(np.abs(b[finite]).max())) if finite.any() else 1.0
        if not diff <= tol * scale:
            raise ProofError(
                f"{where}: {what}: the hand computation differs from the model by {diff:.3g} "
                f"(tolerance {tol * scale:.3g})"
            )
        c = Check(what, diff, tol * scale)
        self.checks.append(c)
        return c
