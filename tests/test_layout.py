"""The package's layout (docs/paper-map.md, CONTRIBUTING.md): who may import whom.

Read from the source with ``ast``, every import counted, those inside functions too: no import
circle; the model (``aiayn.model``, ``aiayn.attention``) never reaches ``aiayn.kernels``, which
are applied from above; inference (translator, decode, evaluate, export, explore, pretrained)
never reaches ``aiayn.train``; the run directory's file names are spelled in ``aiayn.run_dir`` only,
a data directory's in ``aiayn.data.layout`` only;
benchmarks/ and tests/ never import each other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "aiayn"
INFERENCE = (
    "aiayn.translator",
    "aiayn.decode",
    "aiayn.evaluate",
    "aiayn.export",
    "aiayn.explore",
    "aiayn.pretrained",  # the shipped models: run_dir resolves their names
)
# (config.json is left out: a Hugging Face directory has one of its own, aiayn.export.hf's.)
RUN_FILES = {"metrics.jsonl", "train.lock", "model.safetensors", "trainer.pt", "meta.json"}


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that ``name`` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # a submodule, if it is one
    return found & known


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports, leaving out a submodule's import of its own
    parent packages (Python runs a package's __init__ before its submodules: no circle)."""
    modules = _modules(root)
    graph = {}
    for name, path in modules.items():
        deps = _imports(name, path, set(modules))
        graph[name] = {d for d in deps if d != name and not name.startswith(d + ".")}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module that importing ``start`` (and calling into it) may import."""
    seen, todo = set(), [m for m in graph if m == start or m.startswith(start + ".")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                found.append(sorted([v, *comp]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checks_see_a_circle_and_a_forbidden_arrow(tmp_path: Path) -> None:
    """The checks below can fail: a model that imports its kernels is a circle and an arrow."""
    pkg = tmp_path / "aiayn"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text("def ops():\n    from aiayn.kernels import FAST\n")
    (pkg / "kernels" / "__init__.py").write_text("from aiayn.kernels import ffn\n")
    (pkg / "kernels" / "ffn.py").write_text("from aiayn.model import ops\n")
    graph = import_graph(pkg)
    assert circles(graph) == [["aiayn.kernels", "aiayn.kernels.ffn", "aiayn.model"]]
    assert "aiayn.kernels" in reachable(graph, "aiayn.model")


def test_no_import_circle() -> None:
    assert circles(import_graph()) == []


@pytest.mark.parametrize("module", ["aiayn.model", "aiayn.attention"])
def test_the_model_never_imports_the_kernels(module: str) -> None:
    reached = reachable(import_graph(), module)
    assert "aiayn.config" in reached or module == "aiayn.attention"  # the walk does walk
    assert not {m for m in reached if m.startswith("aiayn.kernels")}


@pytest.mark.parametrize("module", INFERENCE)
def test_inference_imports_nothing_from_training(module: str) -> None:
    reached = reachable(import_graph(), module)
    assert "aiayn.model" in reached  # the walk does walk
    assert sorted(m for m in reached if m.startswith("aiayn.train")) == []


def _cli_importers(graph: dict[str, set[str]]) -> list[str]:
    """The modules outside aiayn.cli (and the entry point, aiayn.__main__) that import it."""
    outside = [m for m in graph if m != "aiayn.__main__" and not m.startswith("aiayn.cli")]
    return sorted(m for m in outside if any(d.startswith("aiayn.cli") for d in graph[m]))


def test_the_library_never_imports_the_cli() -> None:
    """The verbs call the library, never the reverse: no module outside aiayn/cli/ imports it
    (a runner such as aiayn.table3.run calls prepare, train and evaluate, not `main([...])`)."""
    graph = import_graph()
    assert "aiayn.cli" in graph["aiayn.__main__"]  # the walk sees an import of the CLI
    assert _cli_importers(graph) == []


def test_the_cli_check_sees_a_runner_that_calls_main(tmp_path: Path) -> None:
    pkg = tmp_path / "aiayn"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("def main(argv):\n    return 0\n")
    (pkg / "runner.py").write_text("def run():\n    from aiayn.cli import main\n    main([])\n")
    assert _cli_importers(import_graph(pkg)) == ["aiayn.runner"]


def test_the_run_directory_layout_is_spelled_in_one_module() -> None:
    """The names of a run's files appear as string constants in aiayn/run_dir.py only."""
    spelled: dict[str, set[str]] = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in RUN_FILES:
                spelled.setdefault(node.value, set()).add(name)
    assert spelled == {f: {"aiayn.run_dir"} for f in RUN_FILES}


# A data directory's names, each with the modules that may spell it: the files (exact strings)
# and the folders (``root / "text"``, or a string starting "text/"). The manifest's name is the
# storage protocol's (a checkpoint has one too); Hugging Face's own directory has a
# tokenizer.json, which the export package spells for that layout, not for a data directory.
DATA_NAMES = {
    "manifest.json": {"aiayn.storage"},
    "tokenizer.json": {"aiayn.data.layout", "aiayn.export", "aiayn.export.marian_dir"},
    "LICENSE-data.txt": {"aiayn.data.layout"},
    "text": {"aiayn.data.layout"},
    "ids": {"aiayn.data.layout"},
}
DATA_DIRS = ("text", "ids")
DATA_FOLDER = re.compile(r"(text|ids)/(train\.|valid\.|test\.|$)")  # not text/html


def _data_names(path: Path) -> list[tuple[str, str]]:
    """(name, where) for each data directory's file or folder name that PATH spells."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            folder = DATA_FOLDER.match(node.value)
            if folder or (node.value in DATA_NAMES and node.value not in DATA_DIRS):
                name = folder[1] if folder else node.value
                found.append((name, f"{node.value!r}, line {node.lineno}"))
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in DATA_DIRS
        ):
            found.append((node.right.value, f"/ {node.right.value!r}, line {node.lineno}"))
    return found


def test_the_data_directory_layout_is_spelled_in_one_module() -> None:
    """A prepared data directory's names (tokenizer.json, text/, ids/, LICENSE-data.txt) are
    spelled in aiayn/data/layout.py only, its manifest's in aiayn/storage.py: the rest of
    aiayn/, recipes/, scripts/ and benchmarks/ asks them for a path. (tests/ may spell them: a
    test holds the files on disk to what docs/data.md says they are.)"""
    spelled: dict[str, list[str]] = {}
    for folder in ("aiayn", "recipes", "scripts", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            for name, where in _data_names(path):
                if module not in DATA_NAMES[name]:
                    spelled.setdefault(module, []).append(where)
    layout = {name for name, _ in _data_names(PACKAGE / "data" / "layout.py")}
    assert layout == {"tokenizer.json", "LICENSE-data.txt"}  # the walk does see them
    assert spelled == {}


def test_the_data_layout_check_sees_a_name_and_a_folder(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text("t = root / 'text'\nf = 'ids/train.src.bin'\nm = 'manifest.json'\n")
    assert [where for _, where in _data_names(script)] == [
        "/ 'text', line 1",
        "'ids/train.src.bin', line 2",
        "'manifest.json', line 3",
    ]


# benchmarks/ and tests/ apart -----------------------------------------------------------------

REPO = PACKAGE.parent


def _crossings(path: Path, other: set[str]) -> list[str]:
    """What in PATH reaches the other folder: an import of one of its modules (OTHER, by name),
    or a change to sys.path (``sys.path.insert``, ``sys.path[:0] = ...``, ``syspath_prepend``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in other]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if (node.module or "").split(".")[0] in other:
                found.append(f"from {node.module} import")
        elif isinstance(node, ast.Attribute) and node.attr == "syspath_prepend":
            found.append("syspath_prepend")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(f"sys.path, line {node.lineno}")
    return found


def test_benchmarks_and_tests_never_import_each_other() -> None:
    """benchmarks/ measures (its own checks beside it, benchmarks/test_*.py); tests/ checks the
    product: neither imports the other's modules, nor edits sys.path to reach them."""
    bench = {p.stem for p in (REPO / "benchmarks").glob("*.py")}
    tests = {p.stem for p in (REPO / "tests").glob("*.py")} | {"tests"}
    crossing = {}
    for folder, other in (("benchmarks", tests), ("tests", bench)):
        for path in sorted((REPO / folder).glob("*.py")):
            if found := _crossings(path, other):
                crossing[f"{folder}/{path.name}"] = found
    assert "run" in bench  # the walk does walk
    assert "bad_inputs" in tests
    assert crossing == {}


def test_the_crossing_check_sees_an_import_and_a_path_edit(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text("import sys\nsys.path.insert(0, 'benchmarks')\nfrom run import main\n")
    assert sorted(_crossings(script, {"run"})) == ["from run import", "sys.path, line 2"]


# the product apart from the lab ---------------------------------------------------------------


LAB = "experiments"


def _lab_crossings(path: Path, lab: set[str]) -> list[str]:
    """What in PATH reaches experiments/: an import of one of its modules (LAB, by name) or a
    path into it (a string starting with "experiments/")."""
    found = [f for f in _crossings(path, lab) if not f.startswith(("sys.path", "syspath"))]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and str(node.value).startswith(f"{LAB}/"):
            found.append(f"{node.value!r}, line {node.lineno}")
    return found


def test_the_product_never_imports_the_lab() -> None:
    """aiayn/, tests/ and recipes/ never import experiments/ (the lab: dated, frozen folders, the
    recipe search among them) nor name a path into it: a research round edits its own folder."""
    lab = {LAB} | {p.stem for p in (REPO / LAB).glob("*/*.py")}
    crossing = {}
    for folder in ("aiayn", "tests", "recipes"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if found := _lab_crossings(path, lab):
                crossing[str(path.relative_to(REPO))] = found
    assert {"multi30k_trials", "demo_trials", "dead_relu"} <= lab  # the walk does walk
    assert crossing == {}


def test_the_lab_check_sees_an_import_and_a_path(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text("import multi30k_trials\nRECORDS = 'experiments/x/results'\n")
    found = _lab_crossings(script, {"multi30k_trials"})
    assert found == ["import multi30k_trials", "'experiments/x/results', line 2"]


def test_every_package_is_in_the_wheel() -> None:
    """pyproject.toml lists its packages by name (recipes/ is installed as aiayn.recipes): every
    package under aiayn/ is listed, so none is left out of `pip install .`."""
    import tomllib

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found | {"aiayn.recipes"} == set(setuptools["packages"])
    assert setuptools["package-dir"] == {"aiayn.recipes": "recipes"}
    assert (REPO / "recipes" / "__init__.py").is_file()


def test_pretrained_sits_between_the_loader_and_the_run_directory() -> None:
    graph = import_graph()
    assert "aiayn.pretrained" in graph["aiayn.run_dir"]  # one home: resolve_checkpoint asks it
    reached = reachable(graph, "aiayn.pretrained")
    assert "aiayn.weights" in reached  # the walk does walk
    later = ("aiayn.run_dir", "aiayn.data", "aiayn.train", "aiayn.translator", "aiayn.cli")
    assert sorted(m for m in reached if m.startswith(later)) == []


# tests/: support modules in one place, imported one way; no test file imports another --------

TESTS = REPO / "tests"
TEST_SCRIPTS = {"fault_trials", "count_bad_inputs"}  # run by hand (CONTRIBUTING.md)


def _is_support(stem: str) -> bool:
    """A module of tests/ that is not a test file: a support module, a table or a script."""
    return stem.endswith("_support") or stem.startswith("bad_inputs") or stem in TEST_SCRIPTS


def _test_import_problems(path: Path, local: set[str]) -> list[str]:
    """Each import in PATH of a module of tests/ (LOCAL: their names) not written
    ``from tests.NAME import ...``, or of a test file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in local | {"tests"}:
                    found.append(f"import {a.name}, line {node.lineno}")
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level or parts[0] in local or (parts[0] == "tests" and len(parts) != 2):
                found.append(
                    f"from {'.' * node.level}{node.module or ''} import, line {node.lineno}"
                )
            elif parts[0] == "tests" and parts[1].startswith("test_"):
                found.append(f"from {node.module} import (a test file), line {node.lineno}")
    return found


def test_every_module_of_tests_is_a_test_file_or_a_support_module() -> None:
    """tests/ holds test files, conftest.py and support modules (*_support.py, the bad-input
    tables, two scripts); a *_support.py lives in tests/ and nowhere else."""
    stems = {p.stem for p in TESTS.glob("*.py")}
    other = sorted(s for s in stems if not s.startswith("test_") and s != "conftest")
    assert "translator_support" in other  # the walk does walk
    assert [s for s in other if not _is_support(s)] == []
    elsewhere = [
        str(p.relative_to(REPO))
        for folder in ("aiayn", "benchmarks", "recipes", "scripts", "examples", "tests")
        for p in (REPO / folder).rglob("*_support.py")
        if p.parent != TESTS
    ]
    assert elsewhere == []


def test_tests_import_support_modules_one_way_and_never_a_test_file() -> None:
    """``from tests.NAME import ...`` only: never a bare ``import NAME`` (it works only while
    tests/ is on sys.path), ``from tests import NAME`` or a relative import; never a test file."""
    local = {p.stem for p in TESTS.glob("*.py")}
    problems = {}
    for path in sorted(TESTS.glob("*.py")):
        if found := _test_import_problems(path, local):
            problems[path.name] = found
    assert problems == {}


def test_the_test_import_check_sees_each_other_way(tmp_path: Path) -> None:
    script = tmp_path / "test_x.py"
    script.write_text(
        "import cases\nfrom cases import qkv\nfrom tests import fault_trials\n"
        "from tests.test_decode import PrefixLM\nfrom tests.decode_support import PrefixLM\n"
    )
    assert _test_import_problems(script, {"cases", "fault_trials", "test_decode"}) == [
        "import cases, line 1",
        "from cases import, line 2",
        "from tests import, line 3",
        "from tests.test_decode import (a test file), line 4",
    ]


def _test_map() -> tuple[set[str], set[str]]:
    """The modules and the test files that CONTRIBUTING.md's test map names: in each row, a
    path (`aiayn/x.py`), or a folder (`aiayn/data/`) and the file names after it (`bpe.py`)."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Where the tests are", 1)[1].split("\n## ", 1)[0]
    code: set[str] = set()
    tests: set[str] = set()
    for row in section.splitlines():
        if not row.startswith("| `") and not row.startswith("| the "):
            continue
        cells = row.strip().strip("|").split("|")
        folder = ""
        for token in re.findall(r"`([^`]+)`", cells[0]):
            if token.endswith("/"):
                folder = token
            elif token.endswith(".py"):
                code.add(token if "/" in token else folder + token)
        for token in re.findall(r"`([^`]+)`", row):
            if re.fullmatch(r"(\w+/)?test_\w+\.py", token):
                tests.add(token.rpartition("/")[2])
    return code, tests


def test_the_test_map_names_every_module_and_every_test_file() -> None:
    """CONTRIBUTING.md's "Where the tests are" names every aiayn/**/*.py and every test file
    (tests/test_*.py, benchmarks/test_*.py), and nothing that is not there."""
    code, tests = _test_map()
    modules = {
        str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts
    }
    test_files = {
        p.name for folder in ("tests", "benchmarks") for p in (REPO / folder).glob("test_*.py")
    }
    assert "aiayn/data/layout.py" in code  # a folder's files are read
    assert sorted(modules - code) == []  # a module the map leaves out
    assert sorted(code - modules) == []  # a module the map names that is not there
    assert sorted(test_files - tests) == []
    assert sorted(tests - test_files) == []


def test_the_lab_is_dated_folders_with_a_readme_that_pytest_leaves_out() -> None:
    """Each folder of the lab is dated, YYYY-MM-what, with its README.md (rounds, protocol,
    verdicts); pytest's testpaths (make test) do not reach into it."""
    import tomllib

    folders = sorted(p for p in (REPO / LAB).iterdir() if p.is_dir() and p.name[0] not in "._")
    assert folders  # the walk does walk
    assert [p.name for p in folders if not re.fullmatch(r"\d{4}-\d{2}-[a-z0-9-]+", p.name)] == []
    assert [p.name for p in folders if not (p / "README.md").is_file()] == []
    pytest_ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    assert [t for t in pytest_ini["ini_options"]["testpaths"] if t.startswith(LAB)] == []
