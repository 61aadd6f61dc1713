"""The walkthrough as one self-contained HTML page: MathML formulas, heatmaps, SVG pictures.

Nothing is fetched when the page is viewed: the LaTeX is converted to MathML here (the
``latex2mathml`` package; browsers render MathML natively), matrices are HTML tables whose cells
are coloured by value, and the positional-encoding pictures are inline SVG. No script runs.
"""

from __future__ import annotations

import html
import re
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

CSS = """
:root { --ink: #1d2430; --muted: #5b6575; --line: #d9dee6; --accent: #2563aa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.55 system-ui, -apple-system, "Segoe UI", "Noto Sans",
  "Noto Sans CJK SC", "WenQuanYi Micro Hei", sans-serif; color: var(--ink); background: #fbfbfd; }
header { padding: 28px 40px 12px; background: #fff; border-bottom: 1px solid var(--line); }
header h1 { margin: 0 0 6px; font-size: 26px; }
.badge { display: inline-block; padding: 3px 10px; border-radius: 12px; background: #e4f4e8;
  color: #17603a; font-weight: 600; font-size: 13px; }
nav { padding: 10px 40px; background: #fff; border-bottom: 1px solid var(--line);
  font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 14px; white-space: nowrap; }
main { max-width: 1180px; padding: 8px 40px 60px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 22px 0;
  padding: 6px 24px 18px; }
section h2 { font-size: 20px; margin: 14px 0 8px; }
p { max-width: 880px; margin: 8px 0; }
.formula { margin: 6px 0 8px 12px; padding: 6px 0; font-size: 17px; display: flex;
  flex-wrap: wrap; align-items: center; gap: 4px 2.2em; }
.formula math { display: block; text-align: left; max-width: 100%; }
.group { display: flex; flex-wrap: wrap; gap: 6px 26px; align-items: flex-start; }
figure { margin: 10px 0; }
figure.mat figcaption { font-size: 14px; margin-bottom: 3px; padding: 3px 0; }
.shape { color: var(--muted); font-size: 12px; margin-left: 6px; }
table.heat { border-collapse: collapse; font: 12px/1.2 ui-monospace, "DejaVu Sans Mono",
  monospace; }
table.heat td, table.heat th { padding: 3px 6px; text-align: right; }
table.heat th { color: var(--muted); font-weight: 500; }
table.heat td { min-width: 50px; border: 1px solid rgba(255,255,255,.6); }
table.data { border-collapse: collapse; font-size: 13px; margin: 10px 0; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 4px 10px;
  text-align: left; vertical-align: top; }
table.data th { background: #f3f5f8; }
.check { font-size: 13px; color: #17603a; margin: 2px 0 2px 4px; padding: 3px 0; }
.check .diff { color: var(--muted); margin-left: 10px; font-family: ui-monospace, monospace; }
aside { border-left: 4px solid #d9a43a; background: #fdf8ec; padding: 4px 18px 10px;
  margin: 16px 0; border-radius: 0 6px 6px 0; }
aside h3 { font-size: 16px; margin: 10px 0 4px; color: #7a5511; }
figure.pic figcaption { font-size: 13px; color: var(--muted); }
svg text { font: 10px sans-serif; fill: #5b6575; }
"""


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


def number(x: float, decimals: int) -> str:
    if np.isinf(x):
        return "−∞" if x < 0 else "∞"
    s = f"{x:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0.0 else s


def matrix(m: Mat, decimals: int) -> str:
    v = m.values
    r, c = v.shape
    finite = v[np.isfinite(v)]
    scale = float(np.abs(finite).max()) if finite.size else 1.0
    shape = f"{r}×{c}" if r > 1 else f"{c}"
    rows = m.rows if m.rows is not None and len(m.rows) == r else None
    cols = m.cols if m.cols is not None and len(m.cols) == c else None
    out = [
        f'<figure class="mat"><figcaption>{tex(m.name)}<span class="shape">{shape}</span>'
        '</figcaption><table class="heat">'
    ]
    if cols:
        head = "<th></th>" if rows else ""
        out.append("<tr>" + head + "".join(f"<th>{html.escape(x)}</th>" for x in cols) + "</tr>")
    for i in range(r):
        cells = []
        for j in range(c):
            bg, fg = colour(v[i, j], m.kind, scale)
            text = "0" if m.kind == "mask" and v[i, j] == 0 else number(v[i, j], decimals)
            cells.append(f'<td style="background:{bg};color:{fg}">{text}</td>')
        label = f"<th>{html.escape(rows[i])}</th>" if rows else ""
        out.append("<tr>" + label + "".join(cells) + "</tr>")
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
    nav = "".join(f'<a href="#{s.id}">{prose(s.title)}</a>' for s in doc.sections)
    n = len(doc.checks)
    badge = f"✓ {n} / {n}"
    body = "".join(section(s, decimals) for s in doc.sections)
    return (
        f'<!DOCTYPE html><html lang="{doc.lang}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(doc.title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{html.escape(doc.title)}</h1><span class="badge">{badge}</span></header>'
        f"<nav>{nav}</nav><main>{body}</main></body></html>\n"
    )
