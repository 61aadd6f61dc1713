"""Every figure docs/faq.md and examples/ quote comes from a committed results file, as the
README's do (tests/test_readme.py): a figure typed from memory, or left behind when a result
changed, fails here. A figure is a number with a decimal part or with thousands separated by
commas (versions such as 2.13.0 and section numbers are not figures).
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAQ = REPO / "docs" / "faq.md"
RESULTS = REPO / "recipes" / "results"
FIGURE = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+\.\d+)(?!\.?\d|\w)")
SECTION = re.compile(r"[Ss]ections? \d+(?:\.\d+)*")
PAPER = {"0.6"}  # the paper's length-penalty alpha (section 6.1): a setting, not a result


def figures(text: str) -> list[str]:
    """The figures of TEXT as written."""
    return FIGURE.findall(SECTION.sub("", text))


def from_results() -> dict[str, str]:
    """Each figure the FAQ may quote, as written -> the results file it comes from."""
    out = {}
    demo = json.loads((RESULTS / "demo-multi30k.json").read_text(encoding="utf-8"))
    out[f"{demo['sacrebleu']['score']:.1f}"] = "demo-multi30k.json"
    out[f"{demo['demo']['steps']:,}"] = "demo-multi30k.json"
    # the 60-minute finals, decoded with the recipe's beam and alpha (as README's table)
    decode = json.loads((RESULTS / "multi30k-decode.json").read_text(encoding="utf-8"))["test"]
    for seed in (1, 2):
        final = decode[f"multi30k-final-60min-dropout0.2-seed{seed}.json"]
        out[f"{final['sacrebleu']['score']:.1f}"] = "multi30k-decode.json"
    return out


def prose(path: Path) -> str:
    """What a Python file says to its reader: its docstrings and comments."""
    source = path.read_text(encoding="utf-8")
    docs = [
        ast.get_docstring(node) or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
    ]
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = [t.string for t in tokens if t.type == tokenize.COMMENT]
    return "\n".join(docs + comments)


def test_the_figure_pattern_sees_figures_and_skips_versions_and_sections() -> None:
    text = "36.7 sacreBLEU from 17,507 sentences (torch==2.13.0, Section 6.1), 39.2."
    assert figures(text) == ["36.7", "17,507", "39.2"]


def test_every_figure_of_the_faq_comes_from_a_results_file() -> None:
    text = FAQ.read_text(encoding="utf-8")
    known = from_results()
    found = figures(text)
    assert len(set(found) & set(known)) >= 3  # the demo's and the 60-minute recipe's BLEU
    assert sorted(set(found) - set(known)) == []
    for figure in found:  # and the page names the file each figure comes from
        assert f"recipes/results/{known[figure]}" in text, figure


def test_every_figure_of_the_examples_comes_from_a_results_file() -> None:
    known = from_results()
    examples = sorted((REPO / "examples").glob("*.py"))
    assert examples
    for path in examples:
        assert sorted(set(figures(prose(path))) - set(known) - PAPER) == [], path.name
