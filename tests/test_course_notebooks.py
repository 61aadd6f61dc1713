"""The course's notebooks (notebooks/): built from one source per notebook, the same code in
English and Chinese, every notebook runs top to bottom with the solutions filled in, and every
exercise stub fails with the checker's guiding message, not a traceback.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from aiayn.course import exercises
from aiayn.course.messages import TEXTS

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
spec = importlib.util.spec_from_file_location("course_build", NOTEBOOKS / "build.py")
build = importlib.util.module_from_spec(spec)
sys.modules["course_build"] = build  # dataclasses look their module up while it is loaded
spec.loader.exec_module(build)

NAMES = [p.stem for p in build.sources()]


def _load(lang: str, name: str) -> dict:
    return json.loads((NOTEBOOKS / lang / f"{name}.ipynb").read_text(encoding="utf-8"))


def _code(nb: dict) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_are_eight_notebooks_in_two_languages() -> None:
    assert len(NAMES) == 8
    for lang in ("en", "zh"):
        assert sorted(p.stem for p in (NOTEBOOKS / lang).glob("*.ipynb")) == NAMES


def test_the_committed_notebooks_are_the_builds_output() -> None:
    stale = [str(p.relative_to(REPO)) for p, text in build.built().items()
             if p.read_text(encoding="utf-8") != text]  # fmt: skip
    assert stale == [], "run: python notebooks/build.py"


@pytest.mark.parametrize("name", NAMES)
def test_code_cells_are_identical_and_the_prose_is_translated(name: str) -> None:
    en, zh = _load("en", name), _load("zh", name)
    assert _code(en) == _code(zh)
    md = lambda nb: [c for c in nb["cells"] if c["cell_type"] == "markdown"]  # noqa: E731
    assert len(md(en)) == len(md(zh)) > 0
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for e, z in zip(md(en), md(zh), strict=True):
        assert cjk.search("".join(z["source"])), "a Chinese cell without Chinese"
        assert not cjk.search("".join(e["source"]).replace("我", "").replace("爱", "")
                              .replace("你", ""))  # fmt: skip


def test_the_sources_parse_and_a_bad_source_is_refused(tmp_path: Path) -> None:
    cells = build.parse(build.sources()[0])
    assert {c.kind for c in cells} == {"en", "zh", "code", "exercise"}
    bad = tmp_path / "09_bad.py"
    bad.write_text("# %% [markdown en]\nnot a comment\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="must start with '#'"):
        build.parse(bad)
    assert build.CJK_BREAK.sub(r"\1", "第一行，\n第二行\nthird") == "第一行，第二行\nthird"


def test_every_exercise_is_asked_once_and_ships_as_a_stub() -> None:
    asked = []
    for name in NAMES:
        for cell in _load("en", name)["cells"]:
            ex = cell["metadata"].get("exercise")
            if ex:
                asked.append(ex)
                text = "".join(cell["source"])
                assert "raise NotImplementedError" in text
                assert text.rstrip().endswith(f'check("{ex}", {ex})')
                assert exercises()[ex].notebook == int(name[:2])
    assert sorted(asked) == sorted(exercises())
    assert len(asked) >= 20


def test_no_notebook_downloads_anything() -> None:
    for name in NAMES:
        code = "\n".join(_code(_load("en", name)))
        for word in ("http", "urlopen", "urlretrieve", "requests", "download", "pip install"):
            assert word not in code, f"{name}: {word}"


def test_the_solved_notebook_has_solutions_instead_of_stubs() -> None:
    nb = build.solved(_load("en", NAMES[0]))
    cells = [c for c in nb["cells"] if c["metadata"].get("exercise")]
    assert cells
    for cell in cells:
        text = "".join(cell["source"])
        assert "NotImplementedError" not in text
        assert text.startswith(f"def {cell['metadata']['exercise']}(")


def test_the_pages_formulas_are_mathml_and_code_keeps_its_dollars() -> None:
    page = ('<div data-mime-type="text/markdown"><p>$d_k$ and $$\\sqrt{d_k}$$</p></div>'
            '<pre>print("$5")</pre>')  # fmt: skip
    out = build.typeset(page)
    assert out.count("<math") == 2
    assert "$d_k$" not in out
    assert 'print("$5")' in out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_html_pages_are_there(lang: str) -> None:
    """Each page links the one shared stylesheet and carries no copy of it."""
    for name in NAMES:
        page = (REPO / "docs" / "course" / lang / f"{name}.html").read_text(encoding="utf-8")
        assert f'<link rel="stylesheet" href="../{build.STYLESHEET}">' in page, name
        assert "<style" not in page, name
    assert (REPO / "docs" / "course" / build.STYLESHEET).stat().st_size > 10_000


def test_share_styles_keeps_the_order_and_leaves_one_link() -> None:
    page = "<head><style>a{}</style>\n<script>x</script><style>b{}</style></head><p>c</p>"
    out, css = build.share_styles(page)
    assert css == "a{}\nb{}\n"
    assert (
        out
        == '<head><link rel="stylesheet" href="../course.css">\n<script>x</script></head><p>c</p>'
    )
    assert build.share_styles("<p>no style</p>") == ("<p>no style</p>", "")


# --- Running the notebooks (nbclient, a fresh kernel each) ---------------------------------------


def _errors(nb: dict) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in nb["cells"] for o in c.get("outputs", [])
            if o.get("output_type") == "error"]  # fmt: skip


def _text(cell: dict) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append("".join(o.get("text", "")))
        out.append("".join(o.get("data", {}).get("text/plain", "")))
    return "".join(out)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's environment: notebook 6 trains 100 steps, one thread (a shared machine)."""
    monkeypatch.setenv("AIAYN_COURSE_STEPS", "100")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("AIAYN_COURSE_LANG", raising=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_top_to_bottom_with_the_solutions(name: str, quick: None) -> None:
    nb = build.execute(build.solved(_load("en", name)), "en", timeout=300)
    assert _errors(nb) == []
    for cell in nb["cells"]:
        if cell["metadata"].get("exercise"):
            assert _text(cell).startswith("✓"), _text(cell)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_stub_fails_with_the_checkers_guiding_message(lang: str, quick: None) -> None:
    setup = "import math\nfrom collections import Counter\n\nimport torch\n\n"
    setup += "from aiayn.course import check\n"
    cells = [{"cell_type": "code", "execution_count": None, "id": "setup", "metadata": {},
              "outputs": [], "source": setup}]  # fmt: skip
    for name in NAMES:
        cells += [{**c, "id": f"{name[:2]}-{c['id']}"} for c in _load(lang, name)["cells"]
                  if c["metadata"].get("exercise")]  # fmt: skip
    nb = build.execute({**_load(lang, NAMES[0]), "cells": cells}, lang, timeout=120)
    assert _errors(nb) == []
    todo = TEXTS[lang]["todo"].split("{name}")[1].split("`")[0]  # " is not written yet: ..."
    for cell in nb["cells"][1:]:
        text = _text(cell)
        assert text.startswith(f"✗ {cell['metadata']['exercise']}{todo}"), text
        assert "Traceback" not in text
