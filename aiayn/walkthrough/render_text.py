"""The walkthrough for a terminal: formulas in Unicode, matrices as aligned numbers.

``render(doc)`` returns the whole text; ``tex_to_text`` turns the small LaTeX subset the
walkthrough uses into readable Unicode (the HTML page renders the same LaTeX as MathML).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from aiayn.walkthrough.doc import (
    Aside,
    Check,
    Document,
    Figure,
    Formula,
    Group,
    Mat,
    Para,
    Section,
    Table,
)

WIDTH = 100

# LaTeX commands -> Unicode; a command not listed stands for itself (\log -> log).
_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "omega": "ω", "theta": "θ", "Delta": "Δ",
    "times": " × ", "cdot": " · ", "odot": " ⊙ ", "in": " ∈ ", "le": " ≤ ", "ge": " ≥ ",
    "ne": " ≠ ", "approx": " ≈ ", "leftarrow": " ← ", "to": " → ", "infty": "∞", "sum": "Σ",
    "partial": "∂", "ldots": "…", "dots": "…", "lVert": "‖", "rVert": "‖", "top": "ᵀ",
    "nabla": "∇", "left": "", "right": "", "mathrel": "", "displaystyle": "", "!": "",
    "quad": "\x00", "qquad": "\x00\x00", ",": " ", ";": " ", " ": " ", "\\": "; ",
}  # fmt: skip
_WRAPPERS = {"text", "operatorname", "mathrm", "texttt", "mathcal", "mathbf", "boldsymbol"}
_ACCENTS = {"bar": "\u0304", "overline": "\u0304", "hat": "\u0302", "tilde": "\u0303"}
_FIGURE = {"en": "figure in the HTML report", "zh": "图见 HTML 报告"}
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _command(s: str, i: int) -> tuple[str, int]:
    """Read a command name after the backslash at i: letters, or one other character."""
    j = i + 1
    while j < len(s) and s[j].isalpha():
        j += 1
    if j == i + 1:
        return s[i + 1 : j + 1], j + 1
    return s[i + 1 : j], j


def _argument(s: str, i: int) -> tuple[str, int]:
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        text, i = _sequence(s, i + 1)
        return text, i + 1
    if s[i] == "\\":
        name, j = _command(s, i)
        return _SYMBOLS.get(name, name), j
    return s[i], i + 1


def _simple(text: str) -> bool:
    """One visual unit: no spaces or operators outside one pair of parentheses."""
    return re.fullmatch(r"[^\s+\-−/=,;()]+|[^\s+\-−/=,;()]*\([^()]*\)", text) is not None


def _script(kind: str, text: str) -> str:
    if kind == "_":
        return "_" + text.replace("_", "") if _simple(text.replace("_", "")) else f"_({text})"
    if text == "ᵀ" or text == "":
        return text
    if re.fullmatch(r"-?\d+", text):
        return text.translate(_SUPERSCRIPT)
    return "^" + text if _simple(text) else f"^({text})"


def _environment(s: str, i: int) -> tuple[str, int]:
    """\\begin{name} ... \\end{name}: cases as {a (b); ...}, matrices as [a, b; c, d]."""
    name, i = _argument(s, i)
    end = s.index(r"\end{" + name + "}", i)
    rows = [r for r in re.split(r"\\\\", s[i:end]) if r.strip()]
    cells = [[tex_to_text(c) for c in r.split("&")] for r in rows]
    if name == "cases":
        parts = []
        for value, *cond in cells:
            k = cond[0].removeprefix("if ") if cond else ""
            parts.append(f"{value} if {k}" if k and k != "otherwise" else f"{value} otherwise")
        text = "{ " + "; ".join(parts) + " }"
    else:
        text = "[" + "; ".join(", ".join(c) for c in cells) + "]"
    return text, end + len(r"\end{" + name + "}")


def _sequence(s: str, i: int) -> tuple[str, int]:
    out = []
    while i < len(s) and s[i] != "}":
        c = s[i]
        if c == "{":
            text, i = _sequence(s, i + 1)
            out.append(text)
            i += 1
        elif c in "^_":
            text, i = _argument(s, i + 1)
            out.append(_script(c, text))
        elif c == "\\":
            name, i = _command(s, i)
            if name == "begin":
                text, i = _environment(s, i)
                out.append(text)
            elif name in ("text", "texttt"):  # verbatim: an underscore there is a letter
                end = s.index("}", i)
                out.append(s[s.index("{", i) + 1 : end].replace("-", "\x01"))  # a hyphen
                i = end + 1
            elif name in _WRAPPERS:
                text, i = _argument(s, i)
                out.append(text)
            elif name == "mathbb":
                text, i = _argument(s, i)
                out.append({"R": "ℝ", "N": "ℕ", "Z": "ℤ"}.get(text, text))
            elif name in _ACCENTS:
                text, i = _argument(s, i)
                out.append(text + _ACCENTS[name] if len(text) == 1 else f"{text}\u0304")
            elif name == "sqrt":
                text, i = _argument(s, i)
                out.append("√" + text if _simple(text) else f"√({text})")
            elif name == "frac":
                num, i = _argument(s, i)
                den, i = _argument(s, i)
                num = num if _simple(num) else f"({num})"
                den = den if _simple(den) else f"({den})"
                out.append(f"{num}/{den} ")
            else:
                out.append(_SYMBOLS.get(name, name))
        else:
            out.append(c)
            i += 1
    return "".join(out), i


def tex_to_text(tex: str) -> str:
    """The LaTeX of a formula as Unicode text.

    >>> tex_to_text(r"\\operatorname{softmax}\\left(\\frac{Q_i K_i^\\top}{\\sqrt{d_k}}\\right) V_i")
    'softmax((Q_i K_iᵀ)/√d_k) V_i'
    >>> tex_to_text(r"X_E = \\sqrt{d_{\\text{model}}}\\, E_{\\text{src}} + PE")
    'X_E = √d_model E_src + PE'
    >>> tex_to_text(r"W_{Q_1}, \\sigma^2, H_E^{(1)}")
    'W_Q1, σ², H_E^(1)'
    """
    text = re.sub(r" {2,}", " ", _sequence(tex, 0)[0].replace("-", "−").replace("\x01", "-"))
    text = re.sub(r" ?\x00 ?", "  ", text)
    return re.sub(r"([(\[]) | ([)\],])", r"\1\2", text).strip()


def width(text: str) -> int:
    """Columns a string takes in a terminal (CJK characters take two, accents none)."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return total


def _pad(text: str, n: int, right: bool = False) -> str:
    fill = " " * max(0, n - width(text))
    return fill + text if right else text + fill


_NO_START = set("，。、：；！？）》」』”’…,.;:!?)")
_NO_END = set("（《「『“‘(")


def _can_break(text: str, k: int) -> bool:
    """May a line end before text[k]? After a space, or next to a CJK character."""
    a, b = text[k - 1], text[k]
    if b in _NO_START or a in _NO_END:
        return a == " "
    return a == " " or width(a) == 2 or width(b) == 2


def wrap(text: str, limit: int = WIDTH, indent: str = "") -> list[str]:
    """Wrap at spaces, or next to CJK characters (not before their punctuation), by width."""
    lines: list[str] = []
    room = max(10, limit - width(indent))
    while width(text) > room:
        used, best = 0, 0
        for k, ch in enumerate(text):
            used += width(ch)
            if used > room:
                break
            if k > 0 and _can_break(text, k):
                best = k
        if best == 0:
            best = max(1, k)
        lines.append(text[:best].rstrip())
        text = text[best:].lstrip()
    if text.strip():
        lines.append(text.rstrip())
    return [indent + line for line in lines]


def matrix_lines(m: Mat, decimals: int) -> list[str]:
    """Title with the shape, column labels, then one line per row.

    A matrix shown in part (``Mat.shape``) gives its whole shape in the title, and a column of
    … and a row of ⋮ where columns and rows are left out.
    """
    r, c = m.shape or m.values.shape
    shape = f"({r}×{c})" if r > 1 else f"({c})"
    more_rows, more_cols = m.cut
    cells, (rows, cols) = m.cells(decimals), m.labels()
    w = max([width(x) for row in cells for x in row] + [width(x) for x in (cols or [])])
    lw = max((width(x) for x in rows), default=0) if rows else 0
    lead = _pad("", lw) + (" " if rows else "")
    tail = " …" if more_cols else ""
    lines = [f"{tex_to_text(m.name)}  {shape}"]
    if cols:
        lines.append(lead + " ".join(_pad(x, w, right=True) for x in cols) + tail)
    for k, row in enumerate(cells):
        label = (_pad(rows[k], lw) + " ") if rows else ""
        lines.append(label + " ".join(_pad(x, w, right=True) for x in row) + tail)
    if more_rows:
        lines.append(lead + " ".join(_pad("⋮", w, right=True) for _ in cells[0]))
    return lines


def side_by_side(blocks: list[list[str]], gap: int = 4, limit: int = WIDTH) -> list[str]:
    """Lay blocks of lines out left to right, starting a new band when the width runs out."""
    out: list[str] = []
    band: list[list[str]] = []

    def flush() -> None:
        if not band:
            return
        widths = [max(width(x) for x in b) for b in band]
        for k in range(max(len(b) for b in band)):
            parts = [_pad(b[k] if k < len(b) else "", w) for b, w in zip(band, widths, strict=True)]
            out.append((" " * gap).join(parts).rstrip())
        out.append("")
        band.clear()

    used = 0
    for b in blocks:
        bw = max(width(x) for x in b)
        if band and used + gap + bw > limit:
            flush()
            used = 0
        used = bw if not band else used + gap + bw
        band.append(b)
    flush()
    return out


def table_lines(t: Table, limit: int = WIDTH) -> list[str]:
    """Aligned columns; a last column too wide for the terminal wraps under itself."""
    widths = [max(width(x) for x in col) for col in zip(t.header, *t.rows, strict=True)]
    lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = min(widths[-1], max(20, limit - lead))

    def lines(cells: list[str]) -> list[str]:
        *first, last = cells
        head = "  ".join(_pad(c, w) for c, w in zip(first, widths, strict=False))
        tail = wrap(last, widths[-1]) or [""]
        gap = "  " if first else ""
        out = [(head + gap + tail[0]).rstrip()]
        out += [(" " * (lead + len(gap) - (2 if first else 0)) + x).rstrip() for x in tail[1:]]
        return out

    rule = "  ".join("─" * w for w in widths)
    return [*lines(t.header), rule, *(x for r in t.rows for x in lines(r)), ""]


def check_line(c: Check) -> str:
    return f"  ✓ {tex_to_text(c.what)}   max |Δ| = {c.diff:.1e}"


def block_lines(b: Any, decimals: int, lang: str = "en") -> list[str]:
    if isinstance(b, Para):
        return [*wrap(b.text), ""]
    if isinstance(b, Formula):
        return [*wrap(tex_to_text(b.tex), indent="    "), ""]
    if isinstance(b, Mat):
        return [*matrix_lines(b, decimals), ""]
    if isinstance(b, Group):
        return side_by_side([matrix_lines(m, decimals) for m in b.mats])
    if isinstance(b, Table):
        return table_lines(b)
    if isinstance(b, Check):
        return [check_line(b)]
    if isinstance(b, Figure):
        return [*wrap(f"[{_FIGURE.get(lang, _FIGURE['en'])}: {b.caption}]"), ""]
    if isinstance(b, Aside):
        inner = [x for blk in b.blocks for x in block_lines(blk, decimals, lang)]
        return ["┌─ " + b.title, *("│ " + x if x else "│" for x in inner), "└─", ""]
    raise TypeError(f"unknown block {type(b).__name__}")


def section_lines(s: Section, decimals: int, lang: str = "en") -> list[str]:
    head = [s.title, "═" * min(WIDTH, width(s.title)), ""]
    body: list[str] = []
    for b in s.blocks:
        if isinstance(b, Check):
            if body and body[-1] == "":
                body.pop()  # a check follows its matrix directly
            body.append(check_line(b))
            continue
        if body and body[-1].startswith("  ✓"):
            body.append("")
        body += block_lines(b, decimals, lang)
    while body and body[-1] == "":
        body.pop()
    return [*head, *body, "", ""]


def render(doc: Document, decimals: int = 3) -> str:
    """The whole walkthrough as text."""
    lines = [doc.title, "━" * width(doc.title), "", ""]
    for s in doc.sections:
        lines += section_lines(s, decimals, doc.lang)
    return "\n".join(lines).rstrip() + "\n"
