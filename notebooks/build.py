"""Write the course's notebooks, in English and Chinese, from one source per notebook.

    python notebooks/build.py            # notebooks/src/*.py -> notebooks/en/*.ipynb, zh/*.ipynb
    python notebooks/build.py --check    # exit 1 if a committed notebook is not the build's
    python notebooks/build.py --html     # run each notebook, solutions filled in, into
                                         # docs/course/en/*.html and docs/course/zh/*.html

A source (``notebooks/src/NN_name.py``) is a Python file in cells, each opened by a line:

    # %% [markdown en]       prose in English, each line commented with "# "
    # %% [markdown zh]       the same prose in Chinese
    # %%                     code, the same in both languages
    # %% [exercise NAME]     code the learner completes: a stub raising NotImplementedError,
                             then check("NAME", NAME); aiayn.course.solutions.NAME replaces the
                             stub when the notebook runs with the solutions filled in

Code cells are identical in the two languages: the checker answers in the language of the
folder the notebook runs in (notebooks/zh: Chinese).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOURCES = HERE / "src"
SOLUTIONS = REPO / "aiayn" / "course" / "solutions.py"
HTML = REPO / "docs" / "course"
LANGS = ("en", "zh")
MARKER = re.compile(r"^# %%(?: \[(markdown en|markdown zh|exercise [a-z_0-9]+)\])?\s*$")
# A soft line break between two Chinese characters (or full-width punctuation) would show as a
# space; the Chinese prose is written in short lines (ruff counts a character as two columns).
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
CJK_BREAK = re.compile(f"([{_CJK}])\n(?=[{_CJK}])")
KERNEL = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


@dataclass(frozen=True)
class Cell:
    kind: str  # "en", "zh" (markdown), "code" or "exercise"
    text: str
    exercise: str = ""


def parse(path: Path) -> list[Cell]:
    """The cells of a source file, in order."""
    cells: list[Cell] = []
    kind, name, lines = None, "", []

    def close() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind in LANGS:
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.splitlines())
            body = CJK_BREAK.sub(r"\1", body)  # a line break between Chinese characters: none
        cells.append(Cell(kind, body, name))

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = MARKER.match(line)
        if m:
            close()
            tag = m.group(1) or "code"
            kind = tag.split()[-1] if tag.startswith("markdown") else tag.split()[0]
            name = tag.split()[1] if tag.startswith("exercise") else ""
            lines = []
        elif kind is None:
            if line.strip():
                raise SystemExit(f"{path.name}:{number}: text before the first '# %%' cell")
        else:
            if kind in LANGS and line.strip() and not line.startswith("#"):
                raise SystemExit(f"{path.name}:{number}: a markdown line must start with '#'")
            lines.append(line)
    close()
    return cells


def notebook(cells: list[Cell], lang: str) -> dict:
    """The notebook (nbformat 4 as JSON) of LANG: its prose and every code cell."""
    out = []
    for cell in cells:
        if cell.kind in LANGS and cell.kind != lang:
            continue
        n = len(out)
        source = cell.text.splitlines(keepends=True)
        if cell.kind in LANGS:
            out.append({"cell_type": "markdown", "id": f"c{n:02d}", "metadata": {},
                        "source": source})  # fmt: skip
            continue
        meta = {"tags": ["exercise"], "exercise": cell.exercise} if cell.exercise else {}
        out.append({"cell_type": "code", "execution_count": None, "id": f"c{n:02d}",
                    "metadata": meta, "outputs": [], "source": source})  # fmt: skip
    return {"cells": out, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}


def dumps(nb: dict) -> str:
    return json.dumps(nb, ensure_ascii=False, indent=1) + "\n"


def solution(name: str) -> str:
    """The source of aiayn.course.solutions.NAME (read, not imported)."""
    text = SOLUTIONS.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node) or ""
    raise SystemExit(f"aiayn/course/solutions.py has no function {name}")


def solved(nb: dict) -> dict:
    """The notebook with each exercise's stub replaced by its solution (the check kept)."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        name = cell["metadata"].get("exercise")
        if name:
            text = "".join(cell["source"])
            check = text[text.index(f'check("{name}"') :]
            cell["source"] = (solution(name) + "\n\n\n" + check).splitlines(keepends=True)
    return nb


def sources() -> list[Path]:
    return sorted(SOURCES.glob("[0-9][0-9]_*.py"))


def built() -> dict[Path, str]:
    """Every notebook file the sources give, with its text."""
    out = {}
    for src in sources():
        cells = parse(src)
        for lang in LANGS:
            out[HERE / lang / (src.stem + ".ipynb")] = dumps(notebook(cells, lang))
    return out


CPU_CELL = (
    "import resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\nprint(_u.ru_utime + _u.ru_stime)"
)


def execute(nb: dict, lang: str, timeout: int = 600) -> dict:
    """Run NB in a fresh kernel in notebooks/LANG (the checker answers in LANG).

    The notebook comes back with its outputs and, in its metadata, the CPU seconds its kernel
    used ("cpu_seconds", user + system: a figure that a busy machine inflates less than the
    wall time), measured by one more cell that is then removed.
    """
    import nbclient
    import nbformat

    node = nbformat.reads(json.dumps(nb), as_version=4)
    node.cells.append(nbformat.v4.new_code_cell(CPU_CELL))
    where = {"metadata": {"path": str(HERE / lang)}}
    client = nbclient.NotebookClient(node, timeout=timeout, kernel_name="python3", resources=where)
    client.execute()
    last = node.cells.pop()
    out = json.loads(nbformat.writes(node))
    out["metadata"]["cpu_seconds"] = float(last.outputs[0]["text"])
    return out


_PROSE = re.compile(r'(data-mime-type="text/markdown">)(.*?)(</div>)', re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)


def typeset(page: str) -> str:
    """The formulas of the page's prose as MathML, so that it shows them offline too
    (nbconvert leaves them to MathJax, loaded from a CDN).  Uses aiayn[html]'s latex2mathml."""
    import html

    from aiayn.walkthrough.render_html import tex

    def formula(m: re.Match) -> str:
        display = m.group(1) is not None
        try:
            return tex(html.unescape(m.group(1) if display else m.group(2)), display=display)
        except Exception:  # TeX that latex2mathml cannot read: left to MathJax, online
            return m.group(0)

    return _PROSE.sub(lambda m: m.group(1) + _MATH.sub(formula, m.group(2)) + m.group(3), page)


_STYLE = re.compile(r"<style[^>]*>(.*?)</style>\s*", re.S)
STYLESHEET = "course.css"  # docs/course/course.css: nbconvert's styles, one copy for every page


def share_styles(page: str) -> tuple[str, str]:
    """(page, css): the page's <style> blocks taken out into one stylesheet, in their order, and
    a link to ../course.css where the first stood (nbconvert writes the same ~7,300 lines of CSS
    into every page)."""
    css = "\n".join(m.group(1).strip("\n") for m in _STYLE.finditer(page)) + "\n"
    first = _STYLE.search(page)
    if first is None:
        return page, ""
    link = f'<link rel="stylesheet" href="../{STYLESHEET}">\n'
    head, tail = page[: first.start()], page[first.start() :]
    return head + link + _STYLE.sub("", tail), css


def render_html(nb: dict, title: str) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()
    body, _ = exporter.from_notebook_node(
        nbformat.reads(json.dumps(nb), as_version=4), resources={"metadata": {"name": title}}
    )
    return typeset(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--html", action="store_true", help="also run and render to HTML")
    parser.add_argument("--only", default="", help="with --html: notebooks whose name has this")
    parser.add_argument("--lang", choices=LANGS, help="with --html: this language only")
    args = parser.parse_args(argv)
    files = built()
    if args.check:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text("utf-8") != text]
        for p in stale:
            print(f"{p.relative_to(REPO)}: not the build's output; run python notebooks/build.py")
        return 1 if stale else 0
    for path, text in files.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if args.html:
        import time

        for path in sorted(files):
            if args.only not in path.name or args.lang not in (None, path.parent.name):
                continue
            lang = path.parent.name
            start = time.perf_counter()
            nb = execute(solved(json.loads(files[path])), lang)
            seconds, cpu = time.perf_counter() - start, nb["metadata"].pop("cpu_seconds")
            out = HTML / lang / (path.stem + ".html")
            out.parent.mkdir(parents=True, exist_ok=True)
            page, css = share_styles(render_html(nb, path.stem))
            out.write_text(page, encoding="utf-8")
            (HTML / STYLESHEET).write_text(css, encoding="utf-8")
            print(f"{out.relative_to(REPO)}: ran in {seconds:.1f} s ({cpu:.1f} CPU s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
