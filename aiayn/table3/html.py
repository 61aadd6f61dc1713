"""The Table 3 report as one self-contained HTML page (OUT/report.html beside OUT/report.md).

The page is the Markdown report rendered: headings, paragraphs, pipe tables, bold, code,
links and images, the only Markdown ``aiayn table3`` writes (any other line is kept as an
escaped paragraph, so nothing is lost). Images are embedded as data URIs, so the page opens
anywhere, with no file beside it; it runs no script.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")
_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)")
_NUMBER = re.compile(r"^[-+]?[\d.,]+(e[-+]?\d+)?(M|K)?( \[.*\])?( \(p [\d.]+\))?$|^1/[\d,]+$")

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1.5rem; color: #1d2430; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccd3dd; padding: 0.25rem 0.5rem; white-space: nowrap; }
th { background: #eef2f7; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.paper td { color: #5a6576; background: #fafbfc; }
img { max-width: 100%; height: auto; display: block; margin: 1rem 0; }
code { background: #eef2f7; padding: 0 0.2rem; border-radius: 3px; }
"""


def _inline(text: str) -> str:
    """Escape ``text`` and render its **bold**, `code` and [links](url)."""
    out, last = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[last : m.start()]))
        bold, code, label, url = m.groups()
        if bold is not None:
            out.append(f"<strong>{_inline(bold)}</strong>")
        elif code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        else:
            out.append(f'<a href="{html.escape(url, quote=True)}">{_inline(label)}</a>')
        last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, body = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    rows = ["<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"]
    for cells in body:
        paper = ' class="paper"' if len(cells) > 1 and cells[1] == "paper" else ""
        tds = []
        for c in cells:
            num = ' class="num"' if _NUMBER.match(c.replace("**", "")) else ""
            tds.append(f"<td{num}>{_inline(c)}</td>")
        rows.append(f"<tr{paper}>" + "".join(tds) + "</tr>")
    return '<div class="table"><table>\n' + "\n".join(rows) + "\n</table></div>"


def _image(alt: str, src: str, base: Path) -> str:
    path = base / src
    if src.endswith(".png") and path.is_file():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        src = f"data:image/png;base64,{data}"
    return f'<img alt="{html.escape(alt, quote=True)}" src="{html.escape(src, quote=True)}">'


def render(markdown: str, base: Path, title: str = "Table 3, rerun at CPU scale") -> str:
    """The HTML page of ``markdown`` (report.md's text); images are read from ``base``."""
    blocks: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            blocks.append(_table(lines[i:j]))
            i = j
        elif m := re.match(r"^(#{1,3}) (.*)$", line):
            level = len(m.group(1))
            blocks.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
            i += 1
        elif m := _IMAGE.match(line.strip()):
            blocks.append(_image(m.group(1), m.group(2), base))
            i += 1
        else:
            j = i + 1  # a paragraph runs to a blank line, a table, a heading or an image
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("|", "#")):
                if _IMAGE.match(lines[j].strip()):
                    break
                j += 1
            blocks.append("<p>" + _inline(" ".join(lines[i:j])) + "</p>")
            i = j
    body = "\n".join(blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )
