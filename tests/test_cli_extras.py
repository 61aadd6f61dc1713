"""Every optional dependency a verb imports, hidden one at a time: one line naming its install.

`aiayn.cli.EXTRAS` lists the modules of pyproject.toml's extras that the verbs import;
each test hides one (``sys.modules[name] = None`` makes its import fail as if it were not
installed) and runs the verb that needs it in-process.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from aiayn.cli import EXTRAS, main
from aiayn.errors import UserError, require

REPO = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    """The module names of each optional extra of pyproject.toml (the browser tests' aside)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    names = {k: [re.split(r"[<>=!~ \[;]", r)[0] for r in v] for k, v in extras.items()}
    del names["dev"]  # pytest, hypothesis, ruff: the tests' and lint's, never a verb's
    names.pop("course", None)  # JupyterLab for the notebooks of notebooks/ (make course), no verb's
    names["explore"].remove("selenium")  # the explorer's browser tests only
    return names


def test_the_table_of_optional_modules_is_pyprojects_extras() -> None:
    from_pyproject = {m: extra for extra, mods in _extras().items() for m in mods}
    assert from_pyproject == EXTRAS


# (hidden module, the verb's arguments); {ckpt} and {tmp} are filled in. The checkpoint need not
# exist: the extra is checked before anything is read.
VERBS = [
    ("starlette", ["explore", "--checkpoint", "{ckpt}", "--no-browser", "--port", "0"]),
    ("uvicorn", ["explore", "--checkpoint", "{ckpt}", "--no-browser", "--port", "0"]),
    ("ctranslate2", ["export", "--checkpoint", "{ckpt}", "--format", "ctranslate2",
                     "--out", "{tmp}/o"]),
    ("onnx", ["export", "--checkpoint", "{ckpt}", "--format", "onnx", "--out", "{tmp}/o"]),
    ("onnxruntime", ["export", "--checkpoint", "{ckpt}", "--format", "onnx", "--out", "{tmp}/o"]),
    ("ctranslate2", ["translate", "--checkpoint", "{ckpt}", "--engine", "ctranslate2"]),
    ("onnxruntime", ["translate", "--checkpoint", "{ckpt}", "--engine", "onnx"]),
    ("onnxruntime", ["evaluate", "--checkpoint", "{ckpt}", "--engine", "onnx", "--src", "{tmp}/s",
                     "--ref", "{tmp}/s"]),
    ("transformers", ["export", "--checkpoint", "{ckpt}", "--format", "hf", "--out", "{tmp}/o"]),
    ("sentencepiece", ["export", "--checkpoint", "{ckpt}", "--format", "hf", "--out", "{tmp}/o"]),
    ("transformers", ["import-hf", "--model", "{tmp}", "--out", "{tmp}/o/m.safetensors"]),
    ("sentencepiece", ["import-hf", "--model", "{tmp}", "--out", "{tmp}/o/m.safetensors"]),
    ("matplotlib", ["plot", "{tmp}", "--out", "{tmp}/o"]),
    ("matplotlib", ["translate", "--checkpoint", "{ckpt}", "--attention", "{tmp}/o"]),
    ("matplotlib", ["table3", "--out", "{tmp}/o", "--steps", "20"]),
    ("num2words", ["prepare", "--source", "numbers", "--lang-pair", "en-de", "--out", "{tmp}/o"]),
    ("latex2mathml", ["walkthrough", "--html", "{tmp}/o/w.html"]),
]  # fmt: skip


def hide(monkeypatch, name: str) -> None:
    """Make ``import name`` (and its submodules, and aiayn modules that hold it) fail."""
    for key in list(sys.modules):
        if key == name or key.startswith(name + "."):
            monkeypatch.delitem(sys.modules, key)
    monkeypatch.setitem(sys.modules, name, None)
    for holder in ("aiayn.explore.app", "aiayn.export.ct2", "aiayn.export.ort"):
        monkeypatch.delitem(sys.modules, holder, raising=False)


@pytest.mark.parametrize(
    ("module", "argv"), VERBS, ids=[f"{a[0]}-{m}" for m, a in VERBS]
)  # fmt: skip
def test_a_missing_extra_is_one_line_naming_its_install(
    module, argv, tmp_path, monkeypatch, capsys
) -> None:
    assert module in EXTRAS
    (tmp_path / "s").write_text("a\n", encoding="utf-8")
    filled = [a.format(ckpt=tmp_path / "model.safetensors", tmp=tmp_path) for a in argv]
    hide(monkeypatch, module)
    assert main(filled) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"aiayn {argv[0]}: error: {module} is not installed; install it with: "
        f"pip install 'aiayn[{EXTRAS[module]}]'\n"
    )
    assert "Traceback" not in captured.out
    assert not (tmp_path / "o").exists()


def test_an_extra_imported_unchecked_still_gives_the_one_line(monkeypatch, capsys) -> None:
    """The net in aiayn.cli.main: a verb that forgot require() still answers in one line."""
    from aiayn.cli import demo

    def forgot(args) -> int:
        import uvicorn  # noqa: F401

        return 0

    hide(monkeypatch, "uvicorn")
    monkeypatch.setattr(demo, "run", forgot)
    assert main(["demo", "--run", "x"]) == 2
    assert capsys.readouterr().err == (
        "aiayn demo: error: uvicorn is not installed; install it with: "
        "pip install 'aiayn[explore]'\n"
    )


def test_require_returns_the_module_or_a_user_error(monkeypatch) -> None:
    from aiayn import export

    assert require("tomllib", "serve") is tomllib  # any importable module is returned
    hide(monkeypatch, "onnx")
    with pytest.raises(UserError, match=r"^onnx is not installed; .*'aiayn\[serve\]'$"):
        require("onnx", "serve")
    with pytest.raises(UserError, match=r"^onnx is not installed; .*'aiayn\[serve\]'$"):
        export.require("onnx")  # the library's engines name their extra themselves
    assert EXTRAS["onnx"] == export.EXTRA


def test_the_core_imports_without_the_plot_numbers_and_html_extras() -> None:
    """matplotlib, num2words and latex2mathml are extras because nothing imports them at a
    module's top: every module of aiayn (every verb with them) imports while they are hidden.
    (In a fresh interpreter: this one has imported them already.)"""
    import subprocess

    hidden = [m for m, extra in EXTRAS.items() if extra in ("plot", "numbers", "html")]
    script = f"""
import importlib, pkgutil, sys
for name in {hidden!r}:
    sys.modules[name] = None
import aiayn
from aiayn.cli import build_parser
build_parser()
for info in pkgutil.walk_packages(aiayn.__path__, "aiayn."):
    if info.name not in ("aiayn.__main__", "aiayn.reference"):
        importlib.import_module(info.name)
print(len(sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(hidden) == ["latex2mathml", "matplotlib", "num2words"]
