"""Bad CLI inputs answered in one line (issue 16): the table of tests/bad_inputs.py, run
in-process, a few through a real process, and what translate does with long lines, --nbest
and Ctrl-C at start-up."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiayn.cli import main
from tests.bad_inputs import all_cases, build_world, fill, problems, run_case
from tests.bad_inputs_hf import CASES as HF_CASES

REPO = Path(__file__).resolve().parents[1]
CASES = all_cases()
VERBS = ("prepare", "train", "average", "translate", "evaluate", "walkthrough", "plot", "demo",
         "table3")  # fmt: skip
DOORS = ("import-hf", "export")  # issue 53's, where their extras are installed (bad_inputs_hf)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return build_world(tmp_path_factory.mktemp("world"))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_is_refused_in_one_line(case, world, tmp_path) -> None:
    outcome = run_case(case, world, tmp_path)
    assert problems(case, outcome, world, tmp_path) == [], outcome.err


def test_the_table_covers_every_verb_and_kind_of_input() -> None:
    assert len(CASES) >= 250
    by_verb = collections.Counter(c.argv[0] for c in CASES if c.argv)
    for verb in VERBS:
        assert by_verb[verb] >= 8, (verb, by_verb[verb])
    for verb in (v for v in DOORS if v in {c.argv[0] for c in HF_CASES}):
        assert by_verb[verb] >= 8, (verb, by_verb[verb])
    assert sum(c.toml is not None for c in CASES) >= 60  # TOML configs
    for placeholder in ("{dir}", "{empty}", "{binary}", "{latin1}", "{text}", "{json}"):
        assert sum(placeholder in " ".join(c.argv) for c in CASES) >= 3, placeholder


def test_refused_inputs_write_nothing(world, tmp_path) -> None:
    out = tmp_path / "a.safetensors"
    assert main(["average", world["mismatch"], "--last", "1", "--out", str(out)]) == 2
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


# Cases that get far (a valid model, refused at the last check, or inside the write) and the
# two ways an output is named: a file, and a directory that would be made with its parents.
LATE = ("import-hf-config-vocab_size-vs-weights", "import-hf-spm-empty-to-dir",
        "import-hf-weights-bin-evil-zip", "export-hf-of-import", "export-ct2-dv",
        "export-tokenizer-other")  # fmt: skip


@pytest.mark.parametrize("case", [c for c in CASES if c.id in LATE], ids=lambda c: c.id)
def test_a_refused_import_or_export_leaves_no_output(case, world, tmp_path) -> None:
    """import-hf and export write through a temporary beside --out: a refusal leaves no file,
    no directory (the parents export made for --out included) and no temporary."""
    outcome = run_case(case, world, tmp_path)
    assert problems(case, outcome, world, tmp_path) == [], outcome.err
    out = Path(fill(case.argv[case.argv.index("--out") + 1], world, tmp_path))
    assert not (tmp_path / out.relative_to(tmp_path).parts[0]).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_toml_values_are_converted_to_the_field_types(tmp_path) -> None:
    import argparse

    from aiayn import ModelConfig, TrainConfig
    from aiayn.cli.common import config_from_args, load_toml

    path = tmp_path / "ok.toml"
    path.write_text('[model]\nd_k = "none"\n[train]\nlr_scale = 2\nwarmup = 10\n')
    tables = load_toml(path)
    args = argparse.Namespace()
    assert config_from_args(TrainConfig, args, toml=tables).lr_scale == 2.0
    assert isinstance(config_from_args(TrainConfig, args, toml=tables).lr_scale, float)
    assert config_from_args(ModelConfig, args, toml=tables).d_k_override is None


@pytest.mark.slow
def test_bad_inputs_through_a_real_process(world, tmp_path) -> None:
    """The same answers from `python -m aiayn` (the interpreter's own error path)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    chosen = {"prepare-num-pairs=-1", "train-config-latin1", "translate-checkpoint-binary",
              "train-resume-trainer-pickled"}  # fmt: skip
    for case in (c for c in CASES if c.id in chosen):
        tmp = tmp_path / case.id
        tmp.mkdir()
        if case.setup is not None:
            case.setup(tmp, world)
        argv = [fill(a, world, tmp) for a in case.argv]
        proc = subprocess.run(
            [sys.executable, "-m", "aiayn", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 2, (case.id, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, (case.id, lines)
        assert fill(case.expect, world, tmp) in lines[0]


# translate: long lines and --nbest ----------------------------------------------------------


def _translate(
    world, tmp_path, capsys, lines: list[str], *flags: str, status: int = 0
) -> tuple[list[str], str]:
    inp = tmp_path / "in.txt"
    inp.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    argv = ["translate", "--checkpoint", world["model"], "--input", str(inp), "--max-len-b", "2"]
    assert main([*argv, *flags]) == status
    captured = capsys.readouterr()
    return captured.out.splitlines(), captured.err


def test_a_line_over_the_limit_is_skipped_with_its_line_number(world, tmp_path, capsys) -> None:
    lines = ["a b c", "a b c d e f g h i j k l m n o p", "", "d e"]
    out, err = _translate(world, tmp_path, capsys, lines, "--max-input-tokens", "8", status=3)
    assert len(out) == 4  # one output line per input line
    assert out[1] == ""  # the skipped line's output is empty
    first, last = err.strip().splitlines()  # the skipped line, then the count at the end
    assert "in.txt: line 2:" in first
    assert "over the limit of 8 (--max-input-tokens)" in first
    assert "line 1:" not in err
    assert "line 4:" not in err
    assert last == (
        "aiayn translate: 1 of 4 line(s) not translated (over the limit of 8 tokens, "
        "--max-input-tokens): their output is empty; exit status 3"
    )


@pytest.mark.parametrize("nbest", [2, 3])
def test_nbest_gives_exactly_n_lines_per_input_line(world, tmp_path, capsys, nbest) -> None:
    lines = ["a b c", "", "a b c d e f g h i j k l m n o p", "d"]
    out, _ = _translate(
        world, tmp_path, capsys, lines, "--beam", "4", "--nbest", str(nbest),
        "--max-input-tokens", "8", status=3,
    )  # fmt: skip
    assert len(out) == nbest * len(lines)
    indices = [int(x.split(" ||| ")[0]) for x in out]
    assert indices == [i for i in range(len(lines)) for _ in range(nbest)]
    empty = out[nbest : 2 * nbest]  # the empty line: the empty sentence, then placeholders
    assert empty[0].startswith("1 |||  ||| logprob=")
    assert "-inf" not in empty[0]
    assert all(x == "1 |||  ||| logprob=-inf length=0 ||| -inf" for x in empty[1:])
    skipped = out[2 * nbest : 3 * nbest]  # over the limit: placeholders only
    assert all(x == "2 |||  ||| logprob=-inf length=0 ||| -inf" for x in skipped)


def test_a_megabyte_line_is_skipped_not_decoded(world, tmp_path, capsys) -> None:
    """The default limit (1024 tokens) keeps a 1 MB line away from the search."""
    big = ("a b c d " * 130_000)[:1_000_000]
    out, err = _translate(world, tmp_path, capsys, ["a b", big, "c"], status=3)
    assert len(out) == 3
    assert out[1] == ""
    assert "line 2:" in err
    assert "over the limit of 1024" in err


def test_the_default_limit_follows_a_learned_position_table(world) -> None:
    import dataclasses

    from aiayn.cli import translate as cli_translate
    from aiayn.config import DecodeConfig
    from aiayn.translator import DEFAULT_INPUT_LIMIT, Translator, load_translator

    assert cli_translate.DEFAULT_INPUT_LIMIT == DEFAULT_INPUT_LIMIT
    tr = load_translator(world["model"], DecodeConfig())
    assert tr.input_limit == DEFAULT_INPUT_LIMIT
    assert Translator(tr.model, tr.tokenizer, tr.config, max_input_tokens=5).input_limit == 5
    tr.model.config = dataclasses.replace(tr.model.config, positions="learned", max_positions=64)
    assert tr.input_limit == 63  # the table's size less EOS
    assert Translator(tr.model, tr.tokenizer, tr.config, max_input_tokens=500).input_limit == 63


# Ctrl-C outside the training loop ----------------------------------------------------------


def test_importing_the_cli_does_not_import_torch() -> None:
    """What makes Ctrl-C at start-up catchable: main() runs before `import torch` does."""
    code = "import sys, aiayn, aiayn.cli; print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.stdout.strip() == "False", proc.stderr


def test_ctrl_c_stops_at_once_while_a_verb_loads_and_raises_where_it_cleans_up(
    world, monkeypatch
) -> None:
    """The policy of aiayn.cli._signals, seen from inside the verbs (main thread, in-process).

    Loading a model imports parts of torch lazily; a KeyboardInterrupt raised there can be
    swallowed or end the process with status -2 (seen in CI), so loading must stop at once.
    """
    from aiayn.cli import _signals
    from aiayn.cli import prepare as cli_prepare
    from aiayn.cli import translate as cli_translate
    from aiayn.errors import UserError

    seen = {}

    def record(name):
        def stand_in(*args, **kwargs):
            seen[name] = signal.getsignal(signal.SIGINT)
            raise UserError("stopped by the test")

        return stand_in

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli_translate, "translator_from_args", record("translate"))
    assert main(["translate", "--checkpoint", world["model"]]) == 2
    monkeypatch.setattr("aiayn.data.prepare.prepare", record("prepare"))
    assert main(["prepare", "--source", "numbers", "--out", str(world["dir"]) + "/p"]) == 2
    assert seen == {"translate": _signals._exit_at_once, "prepare": signal.default_int_handler}
    assert signal.getsignal(signal.SIGINT) is before  # restored on the way out
    assert cli_prepare.interruptible is _signals.interruptible


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 2.0, 2.5, 3.0, 6.0])
def test_ctrl_c_at_start_up_is_one_line_and_130(world, delay) -> None:
    """SIGINT at moments spread over the start-up (imports, loading) and the wait on stdin.

    Loading ends at about 2.3 s here; before the fix, 1 in 60 interruptions near 2.5 s ended
    with status -2 and 2 in 80 were swallowed (status 0), so a pass here is evidence, not proof:
    the test above pins the policy itself.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "aiayn", "translate", "--checkpoint", world["model"]]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    text = err.decode()
    assert "Traceback" not in text
    assert proc.returncode == 130, text
    assert text.strip().splitlines()[-1].endswith("interrupted")
    assert len(text.strip().splitlines()) == 1, text


@pytest.mark.slow
def test_the_count_script_reports_the_table() -> None:
    """tests/count_bad_inputs.py, whose line docs/reliability-inputs.md quotes."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.count_bad_inputs", "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(CASES[::10])
    assert f"{n} bad inputs, 0 tracebacks, 0 silent (0 unclear)" in proc.stdout


def test_the_docs_quote_the_size_of_the_table() -> None:
    import re

    quoted = [
        int(m.group(1))
        for page in (REPO / "docs").glob("*.md")
        for m in re.finditer(r"(\d+) bad inputs, 0 tracebacks, 0 silent", page.read_text())
    ]
    assert quoted, "no docs page quotes the figure of tests/count_bad_inputs.py"
    assert set(quoted) == {len(CASES)}
