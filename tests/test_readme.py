"""The README's commands run: every ```python and ```bash block is executed, the rest is checked.

Convention of README.md and README.zh-CN.md:

- a ```python block is executed with ``exec`` in a fresh namespace, in a temporary directory;
- a ```bash block is run as one script with ``bash -e -o pipefail`` in a temporary directory,
  with this interpreter's scripts directory (the venv's ``bin``) first on PATH and one thread;
- a ```sh block or a plain ``` block is illustrative (it needs the network, a GPU, or hours)
  and is not run; every ``aiayn`` command in a ```sh or ```bash block is still parsed by the
  real argument parser, so a renamed verb or flag fails here;
- a ```text block is program output (the walkthrough's): it must be the real output, and it is
  the one kind of block in which README.zh-CN.md differs (it quotes ``--lang zh``).

The helpers below are unit-tested on small synthetic documents, so that a broken command is
shown to fail the test.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
README_ZH = REPO / "README.zh-CN.md"
PAPER_MAP = REPO / "docs" / "paper-map.md"
ZH_DOCS = sorted((REPO / "docs" / "zh").glob("*.md"))  # the study note's errata, in Chinese

RUNNABLE = {"python", "bash"}
ILLUSTRATIVE = {"", "sh", "text", "toml", "json"}


# ---------------------------------------------------------------------------------------------
# Reading a markdown file
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block: its info string (language), its text, and its first line."""

    lang: str
    code: str
    line: int  # 1-based line of the opening fence


def code_blocks(text: str) -> list[Block]:
    """The fenced (```) code blocks of a markdown text, in order.

    >>> [(b.lang, b.code) for b in code_blocks("a\\n```bash\\necho hi\\n```\\n")]
    [('bash', 'echo hi\\n')]
    """
    blocks = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            lang = stripped[3:].strip()
            start = i
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"line {start + 1}: code block is never closed")
            blocks.append(Block(lang=lang, code="".join(body), line=start + 1))
        i += 1
    return blocks


def prose(text: str) -> str:
    """The text without its fenced blocks and inline code spans (where links are not links)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            out.append("")
            continue
        out.append("" if inside else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_SRC = re.compile(r"""<(?:img|a|source)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""", re.I)


def relative_links(text: str) -> list[str]:
    """Targets of the links and images of a markdown text that point into the repository.

    >>> relative_links("[a](docs/x.md#s) ![b](img.png) [c](https://e.org) [d](#top) `[e](f)`")
    ['docs/x.md', 'img.png']
    """
    body = prose(text)
    targets = _LINK.findall(body) + _REF.findall(body) + _SRC.findall(body)
    out = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor in the same page
        out.append(target.split("#", 1)[0])
    return out


def excerpt_problems(excerpt: str, output: str) -> list[str]:
    """What keeps ``excerpt`` from being a verbatim excerpt of ``output``.

    A line "[…]" marks lines left out; the pieces between must each occur as consecutive lines
    of the output, in order. The "max |Δ|" figures of the walkthrough's checks are rounding
    noise that changes between machines (the proofs hold to 1e-9), so they are compared as
    "max |Δ| = *".

    >>> excerpt_problems("a\\nb\\n[…]\\nd", "a\\nb\\nc\\nd")
    []
    >>> excerpt_problems("a\\nc", "a\\nb\\nc")
    ['not in the output, in order: a | c']
    """

    def lines(text: str) -> list[str]:
        return [re.sub(r"max \|Δ\| = \S+", "max |Δ| = *", x).rstrip() for x in text.splitlines()]

    out = lines(output)
    problems, start = [], 0
    pieces = "\n".join(lines(excerpt)).split("\n[…]\n")
    for piece in (p.splitlines() for p in pieces):
        n = len(piece)
        found = next((i for i in range(start, len(out) - n + 1) if out[i : i + n] == piece), None)
        if found is None:
            problems.append("not in the output, in order: " + " | ".join(piece)[:200])
        else:
            start = found + n
    return problems


def missing_links(md: Path) -> list[str]:
    """The relative link targets of ``md`` that name no existing file or directory."""
    text = md.read_text(encoding="utf-8")
    return [t for t in relative_links(text) if not (md.parent / t).exists()]


def opening_problems(text: str) -> list[str]:
    """What keeps a README from opening with a title, its description, then the two commands.

    The first code block must come before any second heading and hold exactly ``make demo``
    and ``make test`` (comments aside).
    """
    problems = []
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        problems.append("the first line is not a '# title'")
    blocks = code_blocks(text)
    if not blocks:
        return [*problems, "no code block"]
    first = blocks[0]
    before = "\n".join(lines[1 : first.line - 1])
    if any(line.startswith("#") for line in before.splitlines()):
        problems.append("a heading comes before the two commands")
    words = re.sub(r"\s+", " ", before).strip()
    if len(words.split()) < 20:
        problems.append("no description (under 20 words) before the two commands")
    if "Attention Is All You Need" not in words:
        problems.append("the description does not name the paper")
    commands = [c.split("#", 1)[0].strip() for c in first.code.splitlines()]
    commands = [c for c in commands if c]
    if commands != ["make demo", "make test"]:
        problems.append(f"the first code block is {commands}, not ['make demo', 'make test']")
    return problems


# ---------------------------------------------------------------------------------------------
# Running and parsing blocks
# ---------------------------------------------------------------------------------------------


def run_python(block: Block, where: str, cwd: Path) -> dict:
    """Execute a python block in a fresh namespace with ``cwd`` as working directory."""
    namespace = {"__name__": "__readme__"}
    code = compile("\n" * block.line + block.code, where, "exec")  # tracebacks name README lines
    old = Path.cwd()
    os.chdir(cwd)
    try:
        exec(code, namespace)
    finally:
        os.chdir(old)
    return namespace


def run_bash(block: Block, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a bash block as one ``bash -e -o pipefail`` script in ``cwd`` (output captured)."""
    env = dict(os.environ)
    env["PATH"] = sysconfig.get_path("scripts") + os.pathsep + env.get("PATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def aiayn_commands(code: str) -> list[list[str]]:
    """The argument lists of every ``aiayn`` call in a shell block (``aiayn``, ``.venv/bin/aiayn``,
    ``-m aiayn``).

    >>> aiayn_commands('echo "a b" | aiayn translate --beam 4 > out  # c\\npython -m aiayn x -y')
    [['translate', '--beam', '4'], ['x', '-y']]
    >>> aiayn_commands(".venv/bin/aiayn demo --help")
    [['demo', '--help']]
    """
    text = code.replace("\\\n", " ")
    calls = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token and set(token) <= set("|;&()"):
                calls.extend(_aiayn_args(segment))
                segment = []
            else:
                segment.append(token)
    return calls


def _aiayn_args(segment: list[str]) -> list[list[str]]:
    for i, token in enumerate(segment):  # drop redirections and their targets
        if token and set(token) <= set("<>"):
            segment = segment[:i]
            break
    if segment and Path(segment[0]).name == "aiayn":  # aiayn, or a path to it (.venv/bin/aiayn)
        return [segment[1:]]
    for i in range(len(segment) - 1):
        if segment[i] == "-m" and segment[i + 1] == "aiayn":
            return [segment[i + 2 :]]
    return []


def parse_error(args: list[str]) -> str | None:
    """Why the real ``aiayn`` parser rejects ``args`` (its message), or None if it accepts them."""
    from contextlib import redirect_stderr
    from io import StringIO

    from aiayn.cli import build_parser

    err = StringIO()
    try:
        with redirect_stderr(err):
            build_parser().parse_args(args)
    except SystemExit as e:
        if e.code:
            return err.getvalue().strip().splitlines()[-1] if err.getvalue() else str(e.code)
    return None


# ---------------------------------------------------------------------------------------------
# The helpers can fail (synthetic documents)
# ---------------------------------------------------------------------------------------------

SYNTHETIC = """# demo

Some words.

```bash
echo first > first.txt
false
echo never > never.txt
```

```python
x = 1
assert x == 2, "the README is wrong"
```

```sh
aiayn train --run r --no-such-flag 3
```

[here](docs/missing.md) and [there](https://example.org) and `[code](nowhere.md)`
"""


def test_extractor_finds_blocks_languages_and_lines() -> None:
    blocks = code_blocks(SYNTHETIC)
    assert [b.lang for b in blocks] == ["bash", "python", "sh"]
    assert [b.line for b in blocks] == [5, 11, 16]
    assert blocks[0].code.splitlines()[1] == "false"
    with pytest.raises(ValueError, match="never closed"):
        code_blocks("```bash\necho\n")


def test_a_failing_bash_command_fails_and_stops_the_block(tmp_path: Path) -> None:
    result = run_bash(code_blocks(SYNTHETIC)[0], tmp_path, timeout=30)
    assert result.returncode != 0
    assert (tmp_path / "first.txt").exists()
    assert not (tmp_path / "never.txt").exists()  # bash -e: nothing after the failure runs


def test_a_failing_pipeline_fails_the_block(tmp_path: Path) -> None:
    result = run_bash(Block("bash", "false | cat\n", 1), tmp_path, timeout=30)
    assert result.returncode != 0  # -o pipefail: `echo x | aiayn ...` cannot hide a failure


def test_bash_blocks_find_the_venv_commands(tmp_path: Path) -> None:
    result = run_bash(Block("bash", "command -v aiayn\necho $OMP_NUM_THREADS\n", 1), tmp_path)
    assert result.returncode == 0, result.stderr
    found, threads = result.stdout.split()
    assert Path(found).parent == Path(sysconfig.get_path("scripts"))
    assert threads == "1"


def test_a_failing_python_block_raises_and_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="the README is wrong") as info:
        run_python(code_blocks(SYNTHETIC)[1], "SYNTHETIC.md", tmp_path)
    assert info.traceback[-1].lineno + 1 == 13  # the assert's line in the markdown (1-based)
    assert Path.cwd() != tmp_path  # the working directory is restored


def test_python_blocks_run_in_a_fresh_namespace(tmp_path: Path) -> None:
    first = run_python(Block("python", "y = 5\n", 1), "a", tmp_path)
    assert first["y"] == 5
    with pytest.raises(NameError):
        run_python(Block("python", "print(y)\n", 1), "b", tmp_path)


def test_an_unknown_flag_is_caught_without_running() -> None:
    (args,) = aiayn_commands(code_blocks(SYNTHETIC)[2].code)
    assert args == ["train", "--run", "r", "--no-such-flag", "3"]
    assert "unrecognized arguments: --no-such-flag" in parse_error(args)
    assert "invalid choice" in parse_error(["no-such-verb"])
    assert parse_error(["train", "--data", "d", "--run", "r"]) is None
    continued = "torchrun --nproc_per_node 8 -m aiayn train --run r \\\n    --bf16  # note\n"
    assert aiayn_commands(continued) == [["train", "--run", "r", "--bf16"]]


def test_an_excerpt_that_is_not_the_output_is_found() -> None:
    output = "Step 7\n\n  ✓ S   max |Δ| = 4.4e-16\nrow 1\nrow 2\nrow 3\n"
    assert excerpt_problems("Step 7\n[…]\nrow 1\nrow 2", output) == []
    assert excerpt_problems("  ✓ S   max |Δ| = 8.9e-16", output) == []  # only the noise differs
    assert excerpt_problems("row 1\nrow 3", output) != []  # a line left out without […]
    assert excerpt_problems("row 2\n[…]\nrow 1", output) != []  # out of order
    assert excerpt_problems("Step 7\n[…]\nrow 4", output) != []  # not in the output


def test_a_missing_link_target_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("x")
    md = tmp_path / "R.md"
    md.write_text(SYNTHETIC + "\n[ok](docs/here.md#part) ![img](docs/gone.png)\n")
    assert missing_links(md) == ["docs/missing.md", "docs/gone.png"]


def test_a_readme_without_description_or_with_other_commands_is_rejected() -> None:
    assert opening_problems(SYNTHETIC) != []
    words = " ".join(["word"] * 20)
    good = f"# x\n\n{words} Attention Is All You Need.\n\n```\nmake demo  # a\nmake test\n```\n"
    assert opening_problems(good) == []
    assert opening_problems(good.replace("make test", "make test\nmake lint")) != []
    assert opening_problems(good.replace("# x\n", "# x\n## Install\n")) != []
    assert opening_problems(good.replace(words, "Short.")) != []


# ---------------------------------------------------------------------------------------------
# The real README.md and README.zh-CN.md
# ---------------------------------------------------------------------------------------------

READMES = [README, README_ZH]


def _blocks(md: Path) -> list[Block]:
    return code_blocks(md.read_text(encoding="utf-8"))


@pytest.mark.parametrize("md", READMES, ids=lambda p: p.name)
def test_readme_opens_with_description_then_make_demo_and_make_test(md: Path) -> None:
    text = md.read_text(encoding="utf-8")
    problems = opening_problems(text)
    if md == README_ZH:  # the description is Chinese; the paper keeps its English title
        problems = [p for p in problems if "under 20 words" not in p]
        assert len(text.split("```", 1)[0]) > 100, "no Chinese description"
    assert problems == []
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no '{target}' target"


@pytest.mark.parametrize(
    "md", [*READMES, PAPER_MAP, *ZH_DOCS], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_relative_link_points_to_an_existing_file(md: Path) -> None:
    assert missing_links(md) == []


@pytest.mark.parametrize("md", READMES, ids=lambda p: p.name)
def test_every_code_block_has_a_known_kind(md: Path) -> None:
    unknown = [(b.line, b.lang) for b in _blocks(md) if b.lang not in RUNNABLE | ILLUSTRATIVE]
    assert unknown == [], f"blocks neither run nor illustrative: {unknown}"


def test_readme_has_runnable_blocks() -> None:
    langs = {b.lang for b in _blocks(README)}
    assert {"python", "bash"} <= langs  # otherwise this file would test nothing


def test_chinese_readme_has_the_same_code_blocks() -> None:
    """Every block, run or not, is byte-identical in README.zh-CN.md, in the same order, except
    program output (```text): there the Chinese README quotes ``aiayn walkthrough --lang zh``,
    which is checked against the real output below."""

    def blocks(md: Path) -> list[tuple[str, str]]:
        return [(b.lang, "(output)" if b.lang == "text" else b.code) for b in _blocks(md)]

    assert blocks(README_ZH) == blocks(README)


@pytest.mark.parametrize(("md", "lang"), [(README, "en"), (README_ZH, "zh")], ids=["en", "zh"])
def test_readme_walkthrough_excerpt_is_its_real_output(
    md: Path, lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiayn.cli import main

    (block,) = [b for b in _blocks(md) if b.lang == "text"]
    assert main(["walkthrough", "--lang", lang]) == 0
    assert excerpt_problems(block.code, capsys.readouterr().out) == []


@pytest.mark.parametrize("md", READMES, ids=lambda p: p.name)
def test_every_aiayn_command_parses(md: Path) -> None:
    shell = [b for b in _blocks(md) if b.lang in {"bash", "sh"}]
    calls = [args for b in shell for args in aiayn_commands(b.code)]
    assert len(calls) >= 5
    errors = {shlex.join(args): parse_error(args) for args in calls}
    assert {k: v for k, v in errors.items() if v} == {}


@pytest.mark.parametrize(
    "block", [b for b in _blocks(README) if b.lang == "python"], ids=lambda b: f"line{b.line}"
)
def test_readme_python_block_runs(block: Block, tmp_path: Path) -> None:
    run_python(block, str(README), tmp_path)


@pytest.mark.slow
def test_readme_bash_blocks_run(tmp_path: Path) -> None:
    blocks = [b for b in _blocks(README) if b.lang == "bash"]
    for block in blocks:  # one directory for all: a later block may use an earlier one's files
        result = run_bash(block, tmp_path)
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"README.md line {block.line}:\n{output[-3000:]}"
        assert "Traceback" not in output, f"README.md line {block.line}:\n{output[-3000:]}"


# ---------------------------------------------------------------------------------------------
# docs/paper-map.md names real tests, files and functions
# ---------------------------------------------------------------------------------------------


def named_tests(text: str) -> list[tuple[str, str]]:
    """(test file, test name) for every ``tests/F.py::name`` and every later ``::name``.

    A bare ``::name`` belongs to the file named last before it.

    >>> named_tests("`tests/a.py::test_x`, `::test_y` then `tests/b.py::test_z`")
    [('tests/a.py', 'test_x'), ('tests/a.py', 'test_y'), ('tests/b.py', 'test_z')]
    """
    out, current = [], None
    for file, name in re.findall(r"`(tests/[\w/]+\.py)?::(\w+)`", text):
        current = file or current
        if current is None:
            raise ValueError(f"'::{name}' comes before any test file")
        out.append((current, name))
    return out


def missing_names(text: str, root: Path) -> list[str]:
    """Tests, repository paths and code names quoted in ``text`` that do not exist under root.

    Quoted (backticked) paths under aiayn/, benchmarks/, tests/ or docs/ must exist; a quoted
    Python name (``noam_lr``, ``Transformer.embed``, ``Transformer.start``) must occur as a word
    in the code under aiayn/ or benchmarks/.
    """
    missing = []
    for file, name in named_tests(text):
        path = root / file
        if not path.exists() or not re.search(rf"^def {name}\(", path.read_text(), re.M):
            missing.append(f"{file}::{name}")
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("aiayn", "benchmarks")
        for p in sorted((root / folder).rglob("*.py"))
    )
    words = set(re.findall(r"\w+", code))
    for span in re.findall(r"`([^`\n]+)`", prose_with_code_spans(text)):
        span = span.split("(", 1)[0].strip()
        if re.fullmatch(r"(aiayn|benchmarks|tests|docs)/[\w./-]*", span):
            if not (root / span.rstrip("/")).exists():
                missing.append(span)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", span) and (
            "_" in span or "." in span or span != span.lower()
        ):
            last = span.split(".")[-1]
            if last not in words:
                missing.append(span)
    return missing


def prose_with_code_spans(text: str) -> str:
    """The text without fenced blocks (inline code spans kept)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def test_missing_tests_files_and_names_are_found(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "aiayn").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_real():\n    pass\n")
    (tmp_path / "aiayn" / "m.py").write_text("def noam_lr():\n    pass\n")
    text = (
        "`tests/test_a.py::test_real`, `::test_gone`, `tests/test_b.py::test_x`; "
        "`aiayn/m.py` `aiayn/gone.py` `noam_lr` `Transformer.vanished` `tiny` `d_gone`"
    )
    assert missing_names(text, tmp_path) == [
        "tests/test_a.py::test_gone",
        "tests/test_b.py::test_x",
        "aiayn/gone.py",
        "Transformer.vanished",
        "d_gone",
    ]


@pytest.mark.parametrize("md", ZH_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_chinese_docs_name_only_existing_tests_files_and_functions(md: Path) -> None:
    assert missing_names(md.read_text(encoding="utf-8"), REPO) == []


def test_paper_map_names_only_existing_tests_files_and_functions() -> None:
    text = PAPER_MAP.read_text(encoding="utf-8")
    assert len(named_tests(text)) >= 80  # the page really names the tests
    assert missing_names(text, REPO) == []


def test_paper_map_covers_every_section_asked_for() -> None:
    headings = re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", PAPER_MAP.read_text(encoding="utf-8"), re.M)
    wanted = ["3", "3.1", "3.2", "3.2.1", "3.2.2", "3.2.3", "3.3", "3.4", "3.5", "4"]
    wanted += ["5", "5.1", "5.2", "5.3", "5.4", "6", "6.1", "6.2", "7"]
    assert [h for h in wanted if h not in headings] == []


# ---------------------------------------------------------------------------------------------
# The figures the READMEs quote are the committed results files': one generated table.


def _refresh_docs():
    """scripts/refresh-docs.py, the one writer of the docs' generated blocks, as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "refresh_docs", REPO / "scripts" / "refresh-docs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_blocks_are_what_the_results_files_say() -> None:
    """README's results table (en, zh) and Table 3's results sections are what
    scripts/refresh-docs.py writes from the committed results files today."""
    refresh = _refresh_docs()
    for doc, blocks in refresh.blocks().items():
        text = doc.read_text(encoding="utf-8")
        for name, body in blocks.items():
            assert refresh.block(text, name) == body, f"{doc.name}: run scripts/refresh-docs.py"


@pytest.mark.parametrize("md", READMES, ids=lambda p: p.name)
def test_the_results_table_names_real_recipes_and_files_in_short_cells(md: Path) -> None:
    """A row per recipe: each cell a number or a short text, each recipe and results file named
    exists (a results file in recipes/results/ unless its path is given)."""
    block = _refresh_docs().block(md.read_text(encoding="utf-8"), "results")
    rows = [line.strip("|").split(" | ") for line in block.splitlines() if line.startswith("| ")]
    assert len(rows) >= 7
    assert max(len(cell.strip()) for row in rows for cell in row) <= 200
    for name in re.findall(r"recipes/[\w.-]+\.toml", block):
        assert (REPO / name).is_file(), name
    for name in re.findall(r"`([\w./-]+\.json)`", block):
        assert (REPO / name if "/" in name else REPO / "recipes" / "results" / name).is_file()


def test_readme_stays_short() -> None:
    """The first screen stays readable: details go to docs/ (README under about 250 lines)."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("md", [*READMES, REPO / "docs" / "training.md"], ids=lambda p: p.name)
def test_the_training_example_is_the_multi30k_recipe(md: Path) -> None:
    """The first `aiayn train` command of the READMEs and of docs/training.md, said to be the
    recipe of recipes/multi30k-small.toml, gives its model and training settings."""
    from aiayn.config import load_toml

    tables = load_toml(REPO / "recipes" / "multi30k-small.toml")
    text = md.read_text(encoding="utf-8")
    start = text.index("aiayn train --data data/m30k")
    end = text.index("\n", text.index("--max-minutes", start))
    command = shlex.split(text[start:end].replace("\\\n", " "))  # the continued lines joined
    given = {
        w[2:].replace("-", "_"): command[i + 1] for i, w in enumerate(command) if w[:2] == "--"
    }
    recipe = {**tables["model"], **tables["train"]}
    for name in ("d_model", "d_ff", "n_layers", "dropout", "warmup", "lr_scale", "max_tokens"):
        assert float(given[name]) == recipe[name], name
