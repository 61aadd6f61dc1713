"""`aiayn demo` checks every step it runs: a failed sub-step is one line and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import aiayn.data
import aiayn.train
from aiayn.cli import demo, main


@pytest.fixture
def trained() -> SimpleNamespace:
    """What the faked steps report: the corpus prepared, and the stop event train logs."""
    stop = {"event": "stop", "step": 1000, "reason": "reached max_steps=1000"}
    return SimpleNamespace(source="numbers", stop=stop)


@pytest.fixture
def fake_steps(monkeypatch, tmp_path: Path, trained: SimpleNamespace):
    """Every verb the demo calls, faked: returns the calls and the exit code to give each verb."""
    calls: list[list[str]] = []
    exit_codes: dict[str, int] = {}

    def fake_cli(argv: list[str], quiet: bool = False) -> int:
        calls.append(argv)
        verb = argv[0]
        if verb == "train":
            run = Path(argv[argv.index("--run") + 1])
            run.mkdir(parents=True)
            (run / "metrics.jsonl").write_text(json.dumps(trained.stop) + "\n")
        if verb == "evaluate":
            report = Path(argv[argv.index("--json") + 1])
            bleu, chr_f = (
                {"score": 12.3, "signature": "tok:13a"},
                {"score": 45.6, "signature": "nc:6"},
            )
            report.write_text(json.dumps({"sacrebleu": bleu, "chrf": chr_f}))
            Path(argv[argv.index("--hyps") + 1]).write_text("eins\nzwei\n", encoding="utf-8")
        return exit_codes.get(verb, 0)

    prepared = SimpleNamespace(texts=lambda split: (["one", "two"], ["eins", "zwei"]))
    monkeypatch.setattr(demo, "_cli", fake_cli)
    monkeypatch.setattr(demo, "_prepare", lambda args, data: trained.source)
    monkeypatch.setattr(aiayn.data, "load_prepared", lambda path: prepared)
    monkeypatch.setattr(aiayn.train, "list_checkpoints", lambda run: ["a", "b"])
    return calls, exit_codes, ["demo", "--run", str(tmp_path / "runs" / "demo"), "--no-progress"]


def test_demo_prints_every_output_when_every_step_succeeds(fake_steps, capsys) -> None:
    calls, _, argv = fake_steps
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert {c[0] for c in calls} >= {"train", "average", "evaluate", "translate", "plot"}
    assert "walkthrough" in {c[0] for c in calls}
    for line in ("training curves:", "attention heatmaps:", "walkthrough report:"):
        assert line in out
    assert "sacreBLEU 12.3  (tok:13a)" in out
    assert "chrF2     45.6  (nc:6)" in out  # beside BLEU: characters, for any target language


@pytest.mark.parametrize(
    ("verb", "line"),
    [
        ("translate", "attention heatmaps:"),
        ("plot", "training curves:"),
        ("walkthrough", "walkthrough report:"),
    ],
)
def test_a_failed_sub_step_is_one_line_and_a_non_zero_exit(fake_steps, capsys, verb, line) -> None:
    _, exit_codes, argv = fake_steps
    exit_codes[verb] = 1
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert line not in captured.out  # the path of what was not written is not printed
    others = {"attention heatmaps:", "training curves:", "walkthrough report:"} - {line}
    for other in others:
        assert other in captured.out  # what was written still is
    assert "sacreBLEU 12.3" in captured.out  # and so is the score
    errors = [e for e in captured.err.splitlines() if e.strip()]
    assert errors == [errors[0]]
    assert errors[0].startswith("aiayn demo: error: ")
    assert f"aiayn {verb} (exit 1) failed" in errors[0]
    assert "Traceback" not in captured.err


def test_two_failed_sub_steps_are_named_in_one_line(fake_steps, capsys) -> None:
    _, exit_codes, argv = fake_steps
    exit_codes.update(plot=1, walkthrough=3)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "aiayn plot (exit 1), aiayn walkthrough (exit 3) failed" in err


def test_the_demo_says_beside_its_bleu_when_the_minutes_cut_the_training_short(
    fake_steps, trained, capsys
) -> None:
    _, _, argv = fake_steps
    assert main(argv) == 0
    assert "cut short" not in capsys.readouterr().out  # the 1000 steps were trained
    trained.stop.update(step=730, reason="reached max_minutes=60.0")
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("sacreBLEU 12.3"))
    assert out[at + 1].startswith("chrF2     45.6")
    assert out[at + 2] == (
        "  cut short: the 60-minute cap stopped the training at step 730 of 1000, so this "
        "BLEU is below that of 1000 steps; give more --minutes"
    )
    # --steps 0: the minutes are the budget, not a cap that cut anything short.
    assert main([*argv, "--steps", "0"]) == 0
    assert "cut short" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("corpus", "sentence"),
    [
        ("multi30k", "A dog runs through the grass."),
        ("packaged", "Click OK to close the dialog."),
        ("numbers", "three hundred and twelve"),
    ],
)
def test_the_demo_prints_a_sentence_to_translate_like_its_corpus(
    fake_steps, trained, capsys, corpus, sentence
) -> None:
    _, _, argv = fake_steps
    trained.source = corpus
    assert main(argv) == 0
    out = capsys.readouterr().out
    model = Path(argv[2]) / "average.safetensors"
    assert f'  echo "{sentence}" | .venv/bin/aiayn translate --checkpoint {model}\n' in out
