"""The walkthrough as one self-contained HTML page: MathML formulas, heatmaps, SVG pictures.

Nothing is fetched when the page is viewed: the LaTeX is converted to MathML here (the
``latex2mathml`` package; browsers render MathML natively), matrices are HTML tables whose cells
are coloured by value, and the positional-encoding pictures are inline SVG. No script runs.
The style sheet, ``report.css``, is copied into the page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import numpy as np

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

_RED, _BLUE, _WHITE = np.array([202, 62, 48]), np.array([38, 99, 170]), np.array([255, 255, 255])
_MASK = "#d4d4d4"

CSS = (Path(__file__).parent / "report.css").read_text(encoding="utf-8")  # the page's style


def tex(tex_src: str, display: bool = False) -> str:
    """LaTeX -> MathML (the page needs no script to show it)."""
    from latex2mathml.converter import convert

    tex_src = tex_src.replace(r"\begin{pmatrix}", r"\left(\begin{matrix}")  # stretchy fences
    tex_src = tex_src.replace(r"\end{pmatrix}", r"\end{matrix}\right)")
    return convert(tex_src, display="block" if display else "inline")


def pieces(tex_src: str) -> list[str]:
    r"""A display formula cut at its top-level \quad and \qquad, so a narrow page can wrap it.

    MathML has no line breaking in browsers: each piece becomes its own <math>, and the
    pieces wrap like words. Spaces inside braces, \left..\right and environments stay.

    >>> pieces(r"a = 1,\quad b = \frac{1}{2} \qquad \left(x \quad y\right)")
    ['a = 1,', 'b = \\frac{1}{2}', '\\left(x \\quad y\\right)']
    """
    out, depth, start = [], 0, 0
    for m in re.finditer(r"\\(?:qquad|quad|left|right|begin|end)\b|[{}]", tex_src):
        tok = m.group()
        if tok in ("{", r"\left", r"\begin"):
            depth += 1
        elif tok in ("}", r"\right", r"\end"):
            depth -= 1
        elif depth == 0:
            out.append(tex_src[start : m.start()])
            start = m.end()
    out.append(tex_src[start:])
    return [p.strip() for p in out if p.strip()]


def prose(text: str) -> str:
    """Plain prose with x_y and x^y shown as sub- and superscripts."""
    out = html.escape(text, quote=False)
    out = re.sub(r"(?<![\w/.])([A-Za-zα-ωΑ-Ω])_(\([^)]*\)|[A-Za-z0-9]+)", r"\1<sub>\2</sub>", out)
    return re.sub(r"(?<=[\w)])\^(\([^)]*\)|[A-Za-z0-9]+)", r"<sup>\1</sup>", out)


def colour(v: float, kind: str, scale: float) -> tuple[str, str]:
    """(background, text colour) of one heatmap cell."""
    if not np.isfinite(v):
        return _MASK, "#333"
    if kind == "prob":
        t = float(np.clip(v, 0.0, 1.0))
        rgb = _WHITE + (_BLUE - _WHITE) * t
    else:
        t = float(np.clip(v / scale, -1.0, 1.0)) if scale > 0 else 0.0
        rgb = _WHITE + ((_RED if t > 0 else _BLUE) - _WHITE) * abs(t)
    r, g, b = (round(x) for x in rgb)
    return f"rgb({r},{g},{b})", "#fff" if abs(t) > 0.6 else "#1d2430"


def matrix(m: Mat, decimals: int) -> str:
    v = m.values
    r, c = v.shape
    finite = v[np.isfinite(v)]
    scale = float(np.abs(finite).max()) if finite.size else 1.0
    full_r, full_c = m.shape or (r, c)
    shape = f"{full_r}×{full_c}" if full_r > 1 else f"{full_c}"
    more_rows, more_cols = m.cut  # a part of a larger matrix: … and ⋮ where the rest would be
    more = '<td class="more">…</td>' if more_cols else ""
    cells, (rows, cols) = m.cells(decimals, minus="−"), m.labels()
    out = [
        f'<figure class="mat"><figcaption>{tex(m.name)}<span class="shape">{shape}</span>'
        '</figcaption><table class="heat">'
    ]
    if cols:
        head = "<th></th>" if rows else ""
        heads = "".join(f"<th>{html.escape(x)}</th>" for x in cols)
        out.append("<tr>" + head + heads + ("<th>…</th>" if more_cols else "") + "</tr>")
    for i in range(r):
        tds = []
        for j in range(c):
            bg, fg = colour(v[i, j], m.kind, scale)
            tds.append(f'<td style="background:{bg};color:{fg}">{cells[i][j]}</td>')
        label = f"<th>{html.escape(rows[i])}</th>" if rows else ""
        out.append("<tr>" + label + "".join(tds) + more + "</tr>")
    if more_rows:
        label = "<th></th>" if rows else ""
        out.append("<tr>" + label + '<td class="more">⋮</td>' * c + "</tr>")
    out.append("</table></figure>")
    return "".join(out)


def heatmap_svg(values: np.ndarray, xlabel: str, ylabel: str) -> str:
    """An inline SVG heatmap (rows top to bottom), red positive and blue negative."""
    rows, cols = values.shape
    cw = max(3, min(10, 640 // cols))
    ch = max(3, min(16, 220 // rows))
    left, top = 28, 6
    w, h = left + cols * cw + 6, top + rows * ch + 24
    scale = float(np.abs(values).max()) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img">'
    ]
    for i in range(rows):
        for j in range(cols):
            bg, _ = colour(values[i, j], "signed", scale)
            parts.append(
                f'<rect x="{left + j * cw}" y="{top + i * ch}" width="{cw}" '
                f'height="{ch}" fill="{bg}"/>'
            )
    parts.append(f'<text x="{left}" y="{h - 8}">{html.escape(xlabel)} 0</text>')
    parts.append(f'<text x="{left + cols * cw}" y="{h - 8}" text-anchor="end">{cols - 1}</text>')
    parts.append(f'<text x="2" y="{top + 10}">{html.escape(ylabel)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def check(c: Check) -> str:
    return (
        f'<div class="check">✓ {tex(c.what)}<span class="diff">max |Δ| = {c.diff:.1e}</span></div>'
    )


def block(b: Any, decimals: int) -> str:
    if isinstance(b, Para):
        return f"<p>{prose(b.text)}</p>"
    if isinstance(b, Formula):
        maths = "".join(tex(p, display=True) for p in pieces(b.tex))
        return f'<div class="formula">{maths}</div>'
    if isinstance(b, Mat):
        return matrix(b, decimals)
    if isinstance(b, Group):
        return '<div class="group">' + "".join(matrix(m, decimals) for m in b.mats) + "</div>"
    if isinstance(b, Table):
        head = "".join(f"<th>{prose(x)}</th>" for x in b.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{prose(x)}</td>" for x in row) + "</tr>" for row in b.rows
        )
        return f'<table class="data"><tr>{head}</tr>{body}</table>'
    if isinstance(b, Check):
        return check(b)
    if isinstance(b, Figure):
        return (
            f'<figure class="pic">{heatmap_svg(b.values, b.xlabel, b.ylabel)}'
            f"<figcaption>{prose(b.caption)}</figcaption></figure>"
        )
    if isinstance(b, Aside):
        inner = "".join(block(x, decimals) for x in b.blocks)
        return f"<aside><h3>{prose(b.title)}</h3>{inner}</aside>"
    raise TypeError(f"unknown block {type(b).__name__}")


def section(s: Section, decimals: int) -> str:
    kind = "step" if s.id.startswith("step-") else "extra"
    body = "".join(block(b, decimals) for b in s.blocks)
    return f'<section id="{s.id}" class="{kind}"><h2>{prose(s.title)}</h2>{body}</section>'


def render(doc: Document, decimals: int = 3) -> str:
    """The whole page."""
    # a space between the links: each is nowrap, so the spaces are where the line may wrap
    nav = " ".join(f'<a href="#{s.id}">{prose(s.title)}</a>' for s in doc.sections)
    n = len(doc.checks)
    badge = f"✓ {n} / {n}"
    body = "".join(section(s, decimals) for s in doc.sections)
    return (
        f'<!DOCTYPE html><html lang="{doc.lang}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(doc.title)}</title><style>\n{CSS}</style></head><body>"
        f'<header><h1>{html.escape(doc.title)}</h1><span class="badge">{badge}</span></header>'
        f"<nav>{nav}</nav><main>{body}</main></body></html>\n"
    )
