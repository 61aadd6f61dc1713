"""The Multi30k recipe search (benchmarks/multi30k_trials.py): stages, choices, resuming."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import multi30k  # noqa: E402
import multi30k_trials as mt  # noqa: E402

M = 20.0


@pytest.fixture(autouse=True)
def finals_like_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine running the tests measures as fast as the finals' (330 GFLOP/s in
    final_record): the hour round's machine check (unlike_machine) does not depend on it."""
    monkeypatch.setattr(mt, "cpu_peak", lambda: 330.0)


def fake(recipe: mt.Recipe) -> float:
    """A made-up valid sacreBLEU: small shape, 2048 tokens, dropout 0.3 and seed 2 help."""
    s = 30.0 + {"tiny": 0.0, "mid": 1.0, "small": 2.0}[recipe.shape]
    s += 0.5 * (recipe.max_tokens == 2048) + 0.3 * (recipe.dropout == 0.3)
    s += -abs(recipe.lr_scale - 0.5) + 0.1 * (recipe.seed == 2)
    return s


def record(recipe: mt.Recipe, value: float | None = None) -> dict:
    v = fake(recipe) if value is None else value
    return {
        "name": mt.trial_name(recipe, M),
        "valid_sacrebleu_by_averaged": {"1": v - 1, "3": v},
        "averaged_checkpoints": 3,
        "steps": 1000,
    }


def fill(trials: dict, value=None) -> None:
    """Record every missing trial until the plan chooses (the search run to its end)."""
    while True:
        _, chosen, missing = mt.plan(trials, M)
        if chosen is not None:
            return
        for r in missing:
            trials[mt.trial_name(r, M)] = record(r, None if value is None else value(r))


def test_names_are_one_per_setting() -> None:
    base = mt.Recipe()
    name = mt.trial_name(base, M)
    assert name == (
        "20 min: tiny, 4096 tokens, lr x0.5, warm-up 400, rsqrt, dropout 0.1, BPE 8000, seed 1"
    )
    values = ("small", 2048, 1.0, 800, "linear", 0.3, 4000, 2, True, True, True, 0.1, 0.1)
    fields = dataclasses.fields(base)
    others = {
        mt.trial_name(dataclasses.replace(base, **{f.name: v}), M)
        for f, v in zip(fields, values, strict=True)
    }
    assert len(others | {name}) == len(fields) + 1
    assert mt.trial_name(base, 60) != name
    pre_ln = dataclasses.replace(base, norm_first=True)  # named and flagged only when set
    assert mt.trial_name(pre_ln, M) == f"{name}, pre-LN"
    assert "--norm-first" not in base.flags()
    assert pre_ln.flags()[:-4] == [*base.flags()[:-4], "--norm-first"]
    for field, suffix, flag in (("bf16", "bf16", "--bf16"), ("lowercase", "lowercased", None)):
        r = dataclasses.replace(base, **{field: True})
        assert mt.trial_name(r, M) == f"{name}, {suffix}"
        assert r.flags()[:-4] == [*base.flags()[:-4], flag or f"--{field}"]
    both = dataclasses.replace(base, norm_first=True, bf16=True, lowercase=True)
    assert mt.trial_name(both, M) == f"{name}, pre-LN, bf16, lowercased"
    extra = dataclasses.replace(base, attn_dropout=0.1, ffn_dropout=0.05)  # only when above 0
    assert mt.trial_name(extra, M) == f"{name}, attention dropout 0.1, ReLU dropout 0.05"
    tail = ["--attn-dropout", "0.1", "--ffn-dropout", "0.05"]
    assert extra.flags()[:-4] == [*base.flags()[:-4], *tail]
    assert "--attn-dropout" not in base.flags()
    assert "--ffn-dropout" not in base.flags()


def test_an_empty_record_starts_with_the_shapes() -> None:
    walked, chosen, missing = mt.plan({}, M)
    assert chosen is None
    assert [r.shape for r in missing] == ["tiny", "mid", "small"]
    assert [stage for stage, _ in walked] == ["shape"]


def test_each_stage_starts_from_the_best_so_far_and_seeds_decide() -> None:
    trials: dict = {}
    fill(trials)
    walked, chosen, _ = mt.plan(trials, M)
    stages = dict(walked)
    # the second stage varies the winner of the first, and so on
    assert all(r.shape == "small" for r in stages["batch tokens"])
    assert all(r.max_tokens == 2048 for r in stages["peak learning rate"])
    assert {r.lr_scale for r in stages["peak learning rate"]} == {0.5, 0.25, 1.0}
    assert {r.dropout for r in stages["dropout"]} == {0.1, 0.0, 0.2, 0.3}
    assert chosen == mt.Recipe(shape="small", max_tokens=2048, dropout=0.3)
    # the base recipe is not run twice: one record per distinct trial
    assert len(trials) == len({mt.trial_name(r, M) for _, rs in walked for r in rs})
    # the two leaders ran a second seed
    assert {r.seed for r in stages["seeds"]} == {1, 2}
    assert len(stages["seeds"]) == 4


def test_a_tie_keeps_the_base_and_two_seeds_can_reverse_a_lead() -> None:
    trials: dict = {}
    fill(trials, value=lambda r: 30.0)  # nothing matters: every stage keeps its base
    assert mt.plan(trials, M)[1] == mt.Recipe()
    # The leader on seed 1 loses on the mean of two seeds.
    trials = {}

    lucky = mt.Recipe(shape="small")

    def value(r: mt.Recipe) -> float:
        if dataclasses.replace(r, seed=1) == lucky:
            return 33.0 if r.seed == 1 else 29.0  # first on seed 1, a mean of 31
        return fake(r)

    fill(trials, value)
    walked, chosen, _ = mt.plan(trials, M)
    assert lucky in dict(walked)["seeds"]  # it led on seed 1
    assert chosen == mt.Recipe(shape="small", max_tokens=2048)  # 32.5 and 32.6: the mean wins


def test_main_runs_what_is_missing_in_order_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trials.jsonl"
    ran: list[str] = []

    def run_trial(recipe, minutes, args):  # what benchmarks/multi30k.py --record does
        ran.append(mt.trial_name(recipe, minutes))
        with path.open("a") as f:
            f.write(json.dumps(record(recipe)) + "\n")
        return 0

    monkeypatch.setattr(mt, "run_trial", run_trial)
    common = ["--trials-file", str(path), "--minutes", f"{M:g}"]
    assert mt.main([*common, "--max-trials", "2"]) == 0
    assert [n.split(": ")[1].split(",")[0] for n in ran] == ["tiny", "mid"]
    assert "to run next" in capsys.readouterr().out
    assert mt.main(common) == 0  # a later session goes on where the file stops
    assert len(ran) == len(set(ran)) > 2  # no trial run twice
    out = capsys.readouterr().out
    assert "chosen on valid: --shape small --max-tokens 2048" in out
    before = len(ran)
    assert mt.main([*common, "--plan"]) == 0
    assert len(ran) == before
    # A failed trial stops the search with one line and a non-zero exit.
    monkeypatch.setattr(mt, "run_trial", lambda *a: 1)
    assert mt.main(["--trials-file", str(tmp_path / "other.jsonl")]) == 1
    assert "the trial failed: 20 min: tiny" in capsys.readouterr().out


def test_a_trial_runs_multi30k_with_its_settings_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(mt.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    args = mt.argparse.Namespace(
        runs=str(tmp_path), trials_file="t.jsonl", multi30k_dir="DIR", threads=0
    )
    recipe = mt.Recipe(shape="small", dropout=0.3)
    assert mt.run_trial(recipe, M, args) == 0
    cmd = calls[-1]
    assert cmd[cmd.index("--record") + 1] == mt.trial_name(recipe, M)
    assert cmd[cmd.index("--shape") + 1] == "small"
    assert "--no-test" in cmd
    assert cmd[cmd.index("--data") + 1] == str(tmp_path / "data-bpe8000")
    assert "--resume" not in cmd
    Path(cmd[cmd.index("--run") + 1]).mkdir()  # killed half-way: the next call resumes it
    mt.run_trial(recipe, M, args)
    assert "--resume" in calls[-1]


def test_a_broken_trials_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_text(json.dumps(record(mt.Recipe())) + "\nnot json\n")
    with pytest.raises(SystemExit, match=r"trials.jsonl:2: not a trial record"):
        mt.read_trials(path)
    with pytest.raises(SystemExit):
        mt.main(["--minutes", "0", "--trials-file", str(path)])


def test_the_committed_trials_file_reads() -> None:
    """The records before this search (no settings of their own) read and are never matched."""
    trials = mt.read_trials(mt.TRIALS_FILE)
    assert len(trials) >= 4
    walked, _, _ = mt.plan(trials, M)
    assert walked


def test_the_docs_table_marks_what_each_stage_kept_and_what_is_to_run(tmp_path: Path) -> None:
    trials: dict = {}
    _, _, missing = mt.plan(trials, M)
    for r in missing[:2]:  # the shape stage half done
        trials[mt.trial_name(r, M)] = record(r)
    table = mt.markdown(trials, M)
    assert f"| shape | {mt.trial_name(missing[2], M)} | to run |" in table
    trials[mt.trial_name(missing[0], M)]["train_nll"] = {"500": 4.0, "1000": 3.25}
    assert " | 3.250 |" in mt.markdown(trials, M)  # the last logged training loss
    assert "kept" not in table  # no stage decided yet
    assert table.rstrip().endswith("1 trial(s) of the next stage still to run; the search goes on.")
    fill(trials)
    table = mt.markdown(trials, M)
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    kept = [line for line in rows if ", kept |" in line]
    assert len(kept) == len(mt.STAGES)  # one value kept a stage; the seeds stage keeps none
    small = mt.trial_name(mt.Recipe(shape="small"), M)
    figures = "| 1,000 | 31.00 | 32.00 |  |  | **32.00 (last 3)**, kept |  |"
    assert f"| shape | {small} {figures}" in rows
    assert "Chosen on valid: `--shape small --max-tokens 2048" in table
    assert "dropout 0.3, BPE 8000: 32.85" in table  # the leader's mean of seeds 1 and 2
    doc = tmp_path / "training.md"
    doc.write_text(f"before\n{mt.BEGIN}\nold\n{mt.END}\nafter\n")
    mt.write_docs(trials, M, doc)
    assert doc.read_text() == f"before\n{mt.BEGIN}\n{table}{mt.END}\nafter\n"


def test_the_docs_table_is_the_committed_trials_file() -> None:
    """docs/training.md shows every trial of the search as benchmarks/results records it."""
    text = mt.DOCS.read_text(encoding="utf-8")
    region = text[text.index(mt.BEGIN) + len(mt.BEGIN) + 1 : text.index(mt.END)]
    assert region == mt.markdown(mt.read_trials(mt.TRIALS_FILE), M), (
        "run: python benchmarks/multi30k_trials.py --docs"
    )
    finals = text[
        text.index(mt.FINALS_BEGIN) + len(mt.FINALS_BEGIN) + 1 : text.index(mt.FINALS_END)
    ]
    _, chosen, _ = mt.plan(mt.read_trials(mt.TRIALS_FILE), M)
    assert finals == mt.finals_markdown(chosen, mt.FINAL_MINUTES), (
        "run: python benchmarks/multi30k_trials.py --docs"
    )
    converged = text[
        text.index(mt.CONVERGED_BEGIN) + len(mt.CONVERGED_BEGIN) + 1 : text.index(mt.CONVERGED_END)
    ]
    assert converged == mt.converged_markdown(
        chosen, mt.read_trials(mt.CONVERGED_TRIALS), mt.RESULTS
    ), "run: python benchmarks/multi30k_trials.py --docs"
    hour = text[text.index(mt.HOUR_BEGIN) + len(mt.HOUR_BEGIN) + 1 : text.index(mt.HOUR_END)]
    assert hour == mt.hour_markdown(chosen, mt.read_trials(mt.TRIALS_FILE)), (
        "run: python benchmarks/multi30k_trials.py --docs"
    )
    decode = text[
        text.index(mt.DECODE_BEGIN) + len(mt.DECODE_BEGIN) + 1 : text.index(mt.DECODE_END)
    ]
    assert decode == mt.decode_markdown(), "run: python benchmarks/multi30k_trials.py --docs"
    literature = text[
        text.index(mt.LITERATURE_BEGIN) + len(mt.LITERATURE_BEGIN) + 1 : text.index(
            mt.LITERATURE_END
        )
    ]
    assert literature == mt.literature_markdown(), (
        "run: python benchmarks/multi30k_trials.py --docs"
    )


def test_the_finals_table_reads_each_results_file(tmp_path: Path) -> None:
    """Each final's one test score in both flavours, its valid choice in bold; the rest to run."""
    assert "not chosen" in mt.finals_markdown(None, 60.0, tmp_path)
    sig = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    valid = {n: {"sacrebleu": {"score": v}} for n, v in (("1", 35.0), ("10", 37.25), ("3", 36.5))}
    summary = {
        "steps": 10123,
        "training_minutes": 59.98,
        "valid": valid,
        "averaged_checkpoints": 10,
        "sacrebleu": {"score": 39.456, "signature": sig},
        "lowercase_bleu": {"score": 40.01, "signature": sig.replace("mixed", "lc")},
        "moses_bleu": {"score": 41.5, "tokenizer": "sacremoses 0.1.1: ...", "lang": "de"},
        "chrf": {"score": 63.2},
        "machine": {"matmul_peak_gflops": 197.7},
    }
    (tmp_path / "multi30k-final-60min-seed2.json").write_text(json.dumps(summary))
    table = mt.finals_markdown(mt.Recipe(shape="small"), 60.0, tmp_path)
    rows = table.splitlines()
    assert rows[2] == "| final-60min-seed1 | to run | | | | | | | |"
    assert rows[3] == (
        "| `multi30k-final-60min-seed2.json` | 10,123 | 60.0 | 1: 35.00, 3: 36.50, **10: 37.25** "
        "| **39.46** | 40.01 | **41.50** | 63.20 | 197.7 |"
    )
    assert rows[4] == "| converged | to run | | | | | | | |"
    assert f"cased: `{sig}`" in table
    assert "Moses: `sacremoses 0.1.1: ... (target language de)`" in table
    del summary["moses_bleu"]
    summary["curve"] = [
        {"step": 8000, "valid_sacrebleu": 37.5},
        {"step": 9000, "valid_sacrebleu": 38.25},
        {"step": 10000, "valid_sacrebleu": 38.25},
        {"step": 11000, "valid_sacrebleu": 38.0},
    ]
    (tmp_path / "multi30k-converged.json").write_text(json.dumps(summary))
    table = mt.finals_markdown(mt.Recipe(), 60.0, tmp_path)
    assert "| 40.01 | not measured |" in table
    # the converged run's checks, the earliest of the tied best in bold (where patience counts)
    assert table.rstrip().endswith(
        "`multi30k-converged.json`, valid sacreBLEU of the latest checkpoint alone at each check "
        "(update: BLEU; the best in bold): 8,000: 37.50, **9,000: 38.25**, 10,000: 38.25, "
        "11,000: 38.00."
    )


def test_the_benchmarks_defaults_are_the_recipe_the_search_chose() -> None:
    """benchmarks/multi30k.py without flags trains what the committed trials chose on valid:
    the search's recipe, with the converged round's dropout once that round has chosen."""
    chosen = mt.chosen_recipe()
    assert chosen is not None, "the search is not finished"
    defaults = multi30k._parser().parse_args([])
    for field in dataclasses.fields(mt.Recipe):
        assert getattr(defaults, field.name) == getattr(chosen, field.name), field.name


def test_the_finals_wait_for_the_search_then_run_once_each_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, results = tmp_path / "trials.jsonl", tmp_path / "results"
    common = ["--trials-file", str(path), "--results", str(results), "--runs", str(tmp_path / "t")]
    calls: list[list[str]] = []

    def call(cmd: list[str]) -> int:  # what benchmarks/multi30k.py does: RUN/multi30k.json
        calls.append(cmd)
        run = Path(cmd[cmd.index("--run") + 1])
        run.mkdir(parents=True, exist_ok=True)
        (run / "multi30k.json").write_text(json.dumps({"flags": cmd}))
        return 0

    monkeypatch.setattr(mt.subprocess, "call", call)
    assert mt.main([*common, "--finals"]) == 2  # no search yet: nothing runs
    assert "the search is not finished" in capsys.readouterr().out
    assert calls == []
    trials: dict = {}
    fill(
        trials,
        value=lambda r: (
            fake(dataclasses.replace(r, lr_decay="rsqrt")) + 0.2 * (r.lr_decay == "linear")
        ),
    )
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    assert mt.main([*common, "--finals"]) == 0
    names = sorted(p.name for p in results.iterdir())
    assert names == [
        "multi30k-converged.json",
        "multi30k-final-60min-seed1.json",
        "multi30k-final-60min-seed2.json",
    ]
    seeds = [c[c.index("--seed") + 1] for c in calls]
    assert seeds == ["1", "2", "1"]
    assert all("--no-test" not in c and "--record" not in c for c in calls)  # test scored once
    assert [c[c.index("--lr-decay") + 1] for c in calls] == ["linear", "linear", "rsqrt"]
    converged = calls[2]
    assert converged[converged.index("--steps") + 1 :][:4] == [
        "8000",
        "--patience",
        "2000",
        "--check-every",
    ]
    assert calls[0][calls[0].index("--minutes") + 1] == "60"
    # Run again: every final is recorded, nothing runs; a final lost half-way resumes.
    assert mt.main([*common, "--finals"]) == 0
    assert len(calls) == 3
    (results / "multi30k-converged.json").unlink()
    assert mt.main([*common, "--finals"]) == 0
    assert len(calls) == 4
    assert "--resume" in calls[-1]
    monkeypatch.setattr(mt.subprocess, "call", lambda cmd: 1)
    (results / "multi30k-converged.json").unlink()
    assert mt.main([*common, "--finals"]) == 1
    assert "the final run failed" in capsys.readouterr().out
    assert not (results / "multi30k-converged.json").exists()


def test_the_recorded_command_holds_no_path_of_the_machine(monkeypatch, tmp_path: Path) -> None:
    """Results files are committed: the local Multi30k copy is DIR, a project file is relative
    to the project, another absolute run or data directory is RUN or DATA."""
    argv = ["--run", str(tmp_path / "run"), "--data", str(tmp_path / "data"), "--minutes", "60"]
    argv += ["--multi30k-dir", "/somewhere/multi30k"]
    argv += ["--trials-file", str(ROOT / "benchmarks" / "results" / "t.jsonl")]
    monkeypatch.setattr(sys, "argv", ["multi30k.py", *argv])
    args = multi30k._parser().parse_args(argv)
    assert multi30k._command(args) == (
        "python benchmarks/multi30k.py --run RUN --data DATA --minutes 60 --multi30k-dir DIR "
        "--trials-file benchmarks/results/t.jsonl"
    )
    relative = ["--run", "runs/m30k", "--minutes", "60"]
    monkeypatch.setattr(sys, "argv", ["multi30k.py", *relative])
    args = multi30k._parser().parse_args(relative)
    assert multi30k._command(args) == "python benchmarks/multi30k.py --run runs/m30k --minutes 60"
    named = ["--no-test", "--record", "60 min: small, dropout 0.2"]
    monkeypatch.setattr(sys, "argv", ["multi30k.py", *named])
    args = multi30k._parser().parse_args(named)
    assert multi30k._command(args) == (  # a name with spaces reruns as one word
        "python benchmarks/multi30k.py --no-test --record '60 min: small, dropout 0.2'"
    )


def test_no_committed_results_file_names_a_path_of_this_machine() -> None:
    """Every committed results file names paths relative to the project, or placeholders."""
    import re

    machine_path = re.compile(r"(?<![\w.])/(?:home|root|work|tmp|Users|mnt|opt)/")
    found = []
    for p in (ROOT / "benchmarks" / "results").rglob("*"):
        text = p.read_text(encoding="utf-8", errors="replace") if p.is_file() else ""
        if str(ROOT) in text or machine_path.search(text):
            found.append(str(p.relative_to(ROOT)))
    assert found == []


def test_a_training_stopped_before_its_budget_stops_the_benchmark(monkeypatch, capsys) -> None:
    """A SIGTERM saves and ends `aiayn train` with status 0: the benchmark must not score that
    checkpoint as if the budget were reached (a convergence check off its grid), but stop."""
    step = {"now": 13192}
    monkeypatch.setattr(multi30k, "aiayn", lambda argv: 0)
    monkeypatch.setattr(multi30k, "_meta", lambda run: {"step": step["now"], "elapsed_s": 60.0})
    args = multi30k._parser().parse_args(["--steps", "8000", "--patience", "2000"])
    assert multi30k._train_to(Path("r"), Path("d"), args, 14000.0) is False
    assert "training stopped before update 14,000; --resume goes on" in capsys.readouterr().out
    step["now"] = 14000
    assert multi30k._train_to(Path("r"), Path("d"), args, 14000.0) is True
    # a budget of minutes: a training stopped at 1 of 2 minutes by a signal is not a 2-minute
    # run; one that --max-minutes stopped is, though its elapsed_s (training only) falls a few
    # seconds short of the wall time the flag measures (59.96 of 60 minutes, seen in a final)
    args = multi30k._parser().parse_args(["--minutes", "2"])
    reason = {"now": ""}
    monkeypatch.setattr(multi30k, "_stop_reason", lambda run: reason["now"])
    assert multi30k._train_to(Path("r"), Path("d"), args, 2.0) is False
    assert "training stopped before 2 training minutes" in capsys.readouterr().out
    reason["now"] = "max_minutes"
    assert multi30k._train_to(Path("r"), Path("d"), args, 2.0) is True
    # resumed at 1.99 of 2 minutes after --max-minutes stopped it: reached, nothing trains
    monkeypatch.setattr(multi30k, "aiayn", lambda argv: pytest.fail(f"trained: {argv}"))
    monkeypatch.setattr(multi30k, "_meta", lambda run: {"step": 900, "elapsed_s": 119.4})
    assert multi30k._train_to(Path("r"), Path("d"), args, 2.0) is True
    reason["now"] = ""  # a signal at 1.99 minutes: the rest still trains
    with pytest.raises(pytest.fail.Exception, match="trained"):
        multi30k._train_to(Path("r"), Path("d"), args, 2.0)


def test_the_training_wall_time_sums_every_command_of_the_run(monkeypatch, tmp_path) -> None:
    """training_command_minutes counts every `aiayn train` of RUN, resumes included: counting
    the last command alone gave a final resumed to score test 0.00004 minutes."""
    run = tmp_path / "run"
    run.mkdir()
    step = {"now": 0}

    def train(argv: list[str]) -> int:
        step["now"] = int(argv[argv.index("--max-steps") + 1])
        # a budget of updates lifts any minutes limit a resumed --minutes trial stored
        assert argv[argv.index("--max-minutes") + 1] == "0"
        return 0

    clock = iter([10.0, 40.0, 100.0, 145.0])
    monkeypatch.setattr(multi30k.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(multi30k, "aiayn", train)
    monkeypatch.setattr(multi30k, "_meta", lambda r: {"step": step["now"], "elapsed_s": 1.0})
    args = multi30k._parser().parse_args(["--steps", "1000", "2000"])
    assert multi30k._train_to(run, Path("d"), args, 1000.0) is True
    assert multi30k._wall(run) == 30.0
    assert multi30k._train_to(run, Path("d"), args, 2000.0) is True  # a resume: 45 s more
    assert multi30k._wall(run) == 75.0
    (run / multi30k.WALL_FILE).write_text("not json")
    assert multi30k._wall(run) == 0.0  # unreadable: counted from here on, not a traceback


def test_the_stop_reason_is_read_from_the_runs_metrics(tmp_path) -> None:
    """The last stop event of RUN/metrics.jsonl says why the latest training ended."""
    metrics = tmp_path / "metrics.jsonl"
    events = [
        {"event": "stop", "step": 735, "reason": "interrupted by a signal"},
        {"event": "stop", "step": 15177, "reason": "reached max_minutes=56.9993"},
    ]
    metrics.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert multi30k._stop_reason(tmp_path) == "max_minutes"
    metrics.write_text("".join(json.dumps(e) + "\n" for e in reversed(events)))
    assert multi30k._stop_reason(tmp_path) == ""


def test_a_finished_trial_becomes_a_final_scoring_test_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume without --no-test on a finished valid-only trial trains nothing, keeps the
    average the trial chose on valid and scores test2016 once with it; a second --resume
    scores nothing; the trial's own command is kept beside the final's."""
    run, data = tmp_path / "run", tmp_path / "data"
    run.mkdir()
    data.mkdir()
    (data / "manifest.json").write_text(
        json.dumps({"complete": True, "options": {"vocab_size": 10000}})
    )
    trial = {
        "budget_steps": 8000,
        "steps": 15000,
        "valid": {"1": {"sacrebleu": {"score": 39.0}}, "10": {"sacrebleu": {"score": 40.0}}},
        "averaged_checkpoints": 10,
        "curve": [{"step": 8000, "valid_sacrebleu": 38.0}],
        "machine": {"matmul_peak_gflops": 356.0},
        "command": "python benchmarks/multi30k.py --no-test --record T",
        "protocol": "valid only",
    }
    trial["budgets"] = [dict(trial)]
    (run / "multi30k.json").write_text(json.dumps(trial))
    (run / "average-8000steps-last10.safetensors").write_bytes(b"")
    calls: list[list[str]] = []

    def aiayn(argv: list[str]) -> int:
        calls.append(argv)
        assert argv[0] == "evaluate", argv  # nothing is trained or averaged again
        report = {"sacrebleu": {"score": 40.5, "signature": "s"}, "decode": {"beam": 4}}
        report["lowercase_bleu"] = {"score": 40.8, "signature": "l", "label": "lc"}
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(report))
        return 0

    monkeypatch.setattr(multi30k, "aiayn", aiayn)
    monkeypatch.setattr(multi30k, "_meta", lambda r: {"step": 0, "elapsed_s": 0.0})
    argv = ["--run", str(run), "--data", str(data), "--steps", "8000", "--patience", "2000"]
    monkeypatch.setattr(sys, "argv", ["multi30k.py", *argv, "--resume"])
    assert multi30k.main() == 0
    assert len(calls) == 1
    evaluate = calls[0]
    assert evaluate[evaluate.index("--split") + 1] == "test"
    assert evaluate[evaluate.index("--checkpoint") + 1].endswith(
        "average-8000steps-last10.safetensors"
    )
    summary = json.loads((run / "multi30k.json").read_text())
    assert summary["sacrebleu"]["score"] == 40.5
    assert summary["averaged_checkpoints"] == 10
    assert summary["valid"] == trial["valid"]
    assert summary["curve"] == trial["curve"]
    assert summary["trial_command"] == trial["command"]
    assert "--resume" in summary["command"]
    assert "scored once afterwards" in summary["protocol"]
    assert "test2016: sacreBLEU 40.50" in capsys.readouterr().out
    assert multi30k.main() == 0  # once: a second --resume keeps the score
    assert len(calls) == 1
    # A trial whose chosen average was deleted cannot be made a final.
    (run / "multi30k.json").write_text(json.dumps(trial))
    (run / "average-8000steps-last10.safetensors").unlink()
    assert multi30k.main() == 1
    assert "cannot be tested" in capsys.readouterr().out


def converged_record(recipe: mt.Recipe, chosen: float) -> dict:
    return {
        "name": mt.converged_name(recipe),
        "valid_sacrebleu_by_averaged": {"1": chosen - 0.5, "10": chosen},
        "averaged_checkpoints": 10,
        "steps": 15000,
        "training_minutes": 61.25,
        "curve": [{"step": 8000, "valid_sacrebleu": 38.0}, {"step": 9000, "valid_sacrebleu": 39.5}],
    }


def test_the_converged_dropout_round_runs_valid_only_then_tests_the_winner_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--converged trains dropout 0.2 and 0.3 to convergence with --no-test and records them;
    the highest valid figure (the converged final's included) wins; a winning trial's run is
    resumed without --no-test (test2016 once) and its summary copied; nothing runs twice."""
    path, conv, results = tmp_path / "t.jsonl", tmp_path / "c.jsonl", tmp_path / "results"
    runs = tmp_path / "runs" / "m30k-trials"
    common = ["--trials-file", str(path), "--converged-trials-file", str(conv)]
    common += ["--results", str(results), "--runs", str(runs), "--converged"]
    trials: dict = {}
    fill(trials, value=lambda r: fake(dataclasses.replace(r, dropout=0.1)))  # keeps 0.1
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    assert chosen.dropout == 0.1
    calls: list[list[str]] = []
    figures = {"0.2": 40.25, "0.3": 39.75}

    def call(cmd: list[str]) -> int:  # benchmarks/multi30k.py: a trial records, a final tests
        calls.append(cmd)
        run = Path(cmd[cmd.index("--run") + 1])
        run.mkdir(parents=True, exist_ok=True)
        dropout = cmd[cmd.index("--dropout") + 1]
        if "--no-test" in cmd:
            r = dataclasses.replace(chosen, lr_decay="rsqrt", seed=1, dropout=float(dropout))
            assert cmd[cmd.index("--record") + 1] == mt.converged_name(r)
            with conv.open("a") as f:
                f.write(json.dumps(converged_record(r, figures[dropout])) + "\n")
        else:
            summary = {"dropout": dropout, "steps": 15700, "training_minutes": 60.0}
            summary |= {"valid": {"5": {"sacrebleu": {"score": 40.0}}}, "averaged_checkpoints": 5}
            summary |= {"sacrebleu": {"score": 40.5, "signature": "c"}, "chrf": {"score": 63.0}}
            summary |= {"lowercase_bleu": {"score": 40.75, "signature": "l"}}
            summary |= {"moses_bleu": {"score": 41.0, "tokenizer": "m", "lang": "de"}}
            summary |= {"machine": {"matmul_peak_gflops": 356.0}}
            (run / "multi30k.json").write_text(json.dumps(summary))
        return 0

    monkeypatch.setattr(mt.subprocess, "call", call)
    assert mt.chosen_recipe(path, conv, results, M) == chosen  # the round is not complete
    with pytest.raises(SystemExit):  # one after the other, not both at once
        mt.main([*common, "--finals"])
    assert "pass one" in capsys.readouterr().err
    assert mt.main(common) == 2  # the converged final first
    assert "run --finals first" in capsys.readouterr().out
    results.mkdir()
    final = {
        "valid": {"1": {"sacrebleu": {"score": 39.0}}, "10": {"sacrebleu": {"score": 39.9}}},
        "averaged_checkpoints": 10,
        "steps": 12000,
        "training_minutes": 55.0,
        "curve": [{"step": 8000, "valid_sacrebleu": 39.1}],
    }
    (results / "multi30k-converged.json").write_text(json.dumps(final))
    assert mt.main(common) == 0
    assert [c[c.index("--dropout") + 1] for c in calls] == ["0.2", "0.3", "0.2", "0.2", "0.2"]
    assert ["--no-test" in c for c in calls] == [True, True, False, False, False]
    # then the 60-minute finals again with the winner's dropout, two seeds
    assert [c[c.index("--seed") + 1] for c in calls[3:]] == ["1", "2"]
    assert all(c[c.index("--minutes") + 1] == "60" for c in calls[3:])
    assert sorted(p.name for p in results.glob("multi30k-final-60min-dropout0.2-seed*.json")) == [
        "multi30k-final-60min-dropout0.2-seed1.json",
        "multi30k-final-60min-dropout0.2-seed2.json",
    ]
    assert all(
        c[c.index("--steps") + 1 : c.index("--steps") + 4] == ["8000", "--patience", "2000"]
        for c in calls[:3]
    )
    assert calls[2][-1] == "--resume"  # the winner's own run: nothing retrained, test once
    assert Path(calls[2][calls[2].index("--run") + 1]).name == "m30k-converged-dropout0.2"
    copied = json.loads((results / "multi30k-converged-dropout0.2.json").read_text())
    assert copied["dropout"] == "0.2"
    table = mt.converged_markdown(chosen, mt.read_trials(conv), results)
    rows = table.splitlines()
    assert rows[2] == (
        "| 0.1 | `multi30k-converged.json` | 12,000 | 55.0 | 1: 39.00, **10: 39.90** "
        "| 8,000: 39.10 |"
    )
    assert rows[3].startswith(
        "| 0.2 | `multi30k-converged-trials.jsonl` | 15,000 | 61.2 | 1: 39.75, **10: 40.25**"
    )
    assert rows[6].startswith("Chosen on valid: dropout 0.2. Its finals")
    assert mt.chosen_recipe(path, conv, results, M) == dataclasses.replace(chosen, dropout=0.2)
    row = "| 15,700 | 60.0 | **5: 40.00** | **40.50** | 40.75 | **41.00** | 63.00 | 356 |"
    assert rows[10:13] == [
        f"| `multi30k-converged-dropout0.2.json` {row}",
        f"| `multi30k-final-60min-dropout0.2-seed1.json` {row}",
        f"| `multi30k-final-60min-dropout0.2-seed2.json` {row}",
    ]
    assert table.rstrip().endswith("Moses: `m (target language de)`.")
    (results / "multi30k-final-60min-dropout0.2-seed2.json").unlink()
    table = mt.converged_markdown(chosen, mt.read_trials(conv), results)
    assert "| final-60min-dropout0.2-seed2 | to run | | | | | | | |" in table
    assert mt.main(common) == 0  # what is recorded is not run again; the lost seed resumes
    assert len(calls) == 6
    assert calls[-1][calls[-1].index("--seed") + 1] == "2"
    assert mt.main(common) == 0
    assert len(calls) == 6
    # the converged final wins on valid: no trial is tested
    figures.update({"0.2": 39.0, "0.3": 39.9})  # a tie with the final keeps the final
    conv.unlink()
    (results / "multi30k-converged-dropout0.2.json").unlink()
    assert mt.main(common) == 0
    assert len(calls) == 8
    assert "is the converged final" in capsys.readouterr().out
    assert mt.chosen_recipe(path, conv, results, M) == chosen
    assert not list(results.glob("multi30k-converged-dropout*"))


def test_what_the_converged_round_says_is_its_files() -> None:
    """docs/training.md's reading of the converged round quotes the committed figures."""
    doc = mt.DOCS.read_text(encoding="utf-8")
    text = " ".join(doc[doc.index("What the round says:") :].split("\n\n## ")[0].split())
    _, search, _ = mt.plan(mt.read_trials(mt.TRIALS_FILE), M)
    assert search is not None
    rows, chosen, missing = mt.converged_plan(search, mt.read_trials(mt.CONVERGED_TRIALS))
    assert missing == []
    assert chosen is not None
    assert f"Dropout {chosen.dropout:g} wins on valid" in text
    for _, rec, _ in rows:
        assert f"{mt.score(rec):.2f}" in text
    final = json.loads((mt.RESULTS / mt.converged_final_file(chosen)).read_text())
    assert f"**{final['sacrebleu']['score']:.2f}** cased sacreBLEU" in text
    assert f"**{final['moses_bleu']['score']:.2f}** Moses-tokenized" in text
    assert f"**{41.0 - final['moses_bleu']['score']:.2f} below the published 41.0**" in text
    # the round's 60-minute finals, each seed's cased and Moses figures and its steps
    sixty = [json.loads((mt.RESULTS / f).read_text()) for f, _ in mt.round_two(search, chosen)]
    assert " and ".join(f"**{r['sacrebleu']['score']:.2f}**" for r in sixty) in text
    assert " and ".join(f"{r['moses_bleu']['score']:.2f}" for r in sixty) in text
    assert " and ".join(f"{r['steps']:,}" for r in sixty) in text


def test_every_recorded_trial_command_reruns_with_its_own_name() -> None:
    """A trial's recorded command, split as a shell would, gives --record its whole name."""
    import shlex

    checked = 0
    for path in (mt.TRIALS_FILE, mt.CONVERGED_TRIALS):
        for record in mt.read_trials(path).values():
            words = shlex.split(record.get("command", ""))
            if "--record" in words:
                assert words[words.index("--record") + 1] == record["name"], record["name"]
                checked += 1
    assert checked >= 2


def final_record(valid: float, steps: int = 15000) -> dict:
    """A 60-minute final's results file as benchmarks/multi30k.py writes it (the fields read)."""
    return {
        "valid": {"1": {"sacrebleu": {"score": valid - 0.5}}, "5": {"sacrebleu": {"score": valid}}},
        "averaged_checkpoints": 5,
        "steps": steps,
        "training_minutes": 60.0,
        "sacrebleu": {"score": valid - 1, "signature": "c"},
        "lowercase_bleu": {"score": valid - 0.5, "signature": "l"},
        "moses_bleu": {"score": valid - 0.25, "tokenizer": "m", "lang": "de"},
        "chrf": {"score": 62.0},
        "machine": {"matmul_peak_gflops": 330.0},
    }


def test_the_hour_round_trains_two_seeds_on_valid_then_tests_a_winners_trials_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--hour runs each candidate's 60-minute trials with seed 1 and seed 2, makes a winner's
    trials its finals, then runs each candidate to convergence from its seed-1 trial's run and
    makes a winner its converged final (trials --no-test; a seed 1 below both seeds of the recipe
    chosen so far ends the candidate), against the 60-minute finals and the converged winner
    of the rounds before; the higher mean of two seeds (60 minutes) and the
    higher figure (converged) win; a winning candidate's own runs are resumed without --no-test
    (test2016 once) and copied; the 60-minute winner becomes the recipe chosen; nothing
    recorded runs again."""
    path, conv, results = tmp_path / "t.jsonl", tmp_path / "c.jsonl", tmp_path / "results"
    runs = tmp_path / "runs" / "m30k-trials"
    common = ["--trials-file", str(path), "--converged-trials-file", str(conv)]
    common += ["--results", str(results), "--runs", str(runs), "--hour"]
    monkeypatch.setattr(mt, "HOUR_CANDIDATES", mt.HOUR_CANDIDATES[:1])  # one is enough here
    trials: dict = {}
    fill(trials, value=lambda r: fake(dataclasses.replace(r, dropout=0.1)))
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    tag, published = mt.HOUR_CANDIDATES[0]
    assert tag == "published"
    assert published.flags()[:-2] == [
        *("--shape", "small", "--max-tokens", "4096", "--lr-scale", "2.53", "--warmup", "2000"),
        *("--lr-decay", "rsqrt", "--dropout", "0.3", "--vocab-size", "10000"),
    ]
    figures = {"1": 41.0, "2": 40.5, "converged": 41.25}
    calls: list[list[str]] = []

    def call(cmd: list[str]) -> int:  # benchmarks/multi30k.py: a trial records, a final tests
        calls.append(cmd)
        run = Path(cmd[cmd.index("--run") + 1])
        run.mkdir(parents=True, exist_ok=True)
        seed = cmd[cmd.index("--seed") + 1]
        key = "converged" if "--steps" in cmd else seed
        if "--no-test" in cmd:
            rec = {"name": cmd[cmd.index("--record") + 1], "averaged_checkpoints": 3}
            rec |= {"valid_sacrebleu_by_averaged": {"3": figures[key]}, "steps": 7800}
            rec |= {"training_minutes": 59.97, "curve": [{"step": 8000, "valid_sacrebleu": 40.0}]}
            with Path(cmd[cmd.index("--trials-file") + 1]).open("a") as f:
                f.write(json.dumps(rec) + "\n")
        else:
            (run / "multi30k.json").write_text(json.dumps(final_record(figures[key], 7800)))
        return 0

    monkeypatch.setattr(mt.subprocess, "call", call)
    assert mt.main(common) == 2  # the rounds before come first
    assert "run --finals and --converged first" in capsys.readouterr().out
    assert calls == []
    results.mkdir()
    (results / "multi30k-converged.json").write_text(json.dumps(final_record(39.0)))
    conv.write_text(  # the converged round kept the search's dropout: its finals stand
        "".join(
            json.dumps(converged_record(dataclasses.replace(chosen, dropout=p), 38.0)) + "\n"
            for p in mt.CONVERGED_DROPOUTS
        )
    )
    for seed, valid in ((1, 40.0), (2, 40.5)):
        (results / f"multi30k-final-60min-seed{seed}.json").write_text(
            json.dumps(final_record(valid))
        )
    assert mt.chosen_recipe(path, conv, results, M) == chosen  # the round is not complete
    monkeypatch.setattr(mt, "cpu_peak", lambda: 214.0)  # a machine slower than the finals'
    assert mt.main(common) == 2
    assert "is 214.0 GFLOP/s, 0.65 of the 330.0 of the slower" in capsys.readouterr().out
    assert calls == []  # no trial of 60 minutes on it, unless asked
    assert mt.main([*common, "--any-machine"]) == 0
    monkeypatch.setattr(mt, "cpu_peak", lambda: 330.0)
    assert ["--no-test" in c for c in calls] == [True, True, False, False, True, False]
    assert ["--steps" in c for c in calls] == [False, False, False, False, True, True]
    assert [c[c.index("--seed") + 1] for c in calls] == ["1", "2", "1", "2", "1", "1"]
    assert all(c[c.index("--minutes") + 1] == "60" for c in calls if "--steps" not in c)
    assert calls[4][calls[4].index("--record") + 1] == mt.converged_name(published)
    tests = [calls[2], calls[3], calls[5]]  # the trials' own runs, test once each
    assert all(c[-1] == "--resume" for c in tests)
    assert [c[c.index("--run") + 1] for c in tests] == [
        c[c.index("--run") + 1] for c in (calls[0], calls[1], calls[4])
    ]
    assert Path(calls[4][calls[4].index("--run") + 1]).name == "m30k-converged-published"
    names = sorted(p.name for p in results.glob("multi30k-*published*"))
    assert names == [
        "multi30k-converged-published.json",
        "multi30k-final-60min-published-seed1.json",
        "multi30k-final-60min-published-seed2.json",
    ]
    assert mt.chosen_recipe(path, conv, results, M) == published
    table = mt.hour_markdown(chosen, mt.read_trials(path), results, conv)
    rows = table.splitlines()
    flags = " ".join(chosen.flags()[:-2])
    assert rows[2] == (
        f"| chosen so far | `{flags}` | 1 | `multi30k-final-60min-seed1.json` | 15,000 | 60.0 "
        "| 1: 39.50, **5: 40.00** |"
    )
    assert rows[4].startswith(f"| published | `{' '.join(published.flags()[:-2])}` | 1 | ")
    assert rows[4].endswith("| 7,800 | 60.0 | **3: 41.00** |")
    assert "Means of the two seeds' figures: chosen so far 40.25; published 40.75." in rows
    assert "Chosen on valid: published. Its two trials made its finals" in table
    assert "| `multi30k-final-60min-published-seed1.json` | 7,800 | 60.0 |" in table
    assert (
        f"| published | `{' '.join(published.flags()[:-2])}` | `multi30k-converged-trials.jsonl` "
        "| 7,800 | 60.0 | **3: 41.25** | 8,000: 40.00 |"
    ) in rows
    assert "Chosen on valid: published. Its run made its final, scoring test2016 once:" in rows
    assert "| `multi30k-converged-published.json` | 7,800 | 60.0 |" in table
    assert mt.main(common) == 0  # everything is recorded: nothing runs again
    assert len(calls) == 6
    # the recipes chosen so far win (a tie keeps them): no trial is tested
    figures.update({"1": 40.0, "2": 40.5, "converged": 39.0})
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    conv.write_text("\n".join(conv.read_text().splitlines()[:-1]) + "\n")
    for p in results.glob("multi30k-*published*"):
        p.unlink()
    assert mt.main(common) == 0
    assert ["--no-test" in c for c in calls[6:]] == [True, True, True]
    out = capsys.readouterr().out
    assert "the recipe chosen so far keeps its 60-minute finals" in out
    assert "the converged round's winner keeps its converged final" in out
    assert mt.chosen_recipe(path, conv, results, M) == chosen
    assert not list(results.glob("multi30k-*published*"))
    # a seed 1 below both seeds of the recipe chosen so far is out: no seed 2
    figures.update({"1": 39.75})
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    conv.write_text("\n".join(conv.read_text().splitlines()[:-1]) + "\n")
    assert mt.main(common) == 0
    # ... and it is not trained to convergence either
    assert [("--steps" in c, c[c.index("--seed") + 1]) for c in calls[9:]] == [(False, "1")]
    table = mt.hour_markdown(chosen, mt.read_trials(path), results, conv)
    assert "| 2 | not run: seed 1 is out | | | |" in table
    assert "Not trained to convergence, out at 60 minutes and not ahead per update: published." in (
        table
    )
    assert (
        "published out (seed 1, 39.75, below both seeds of the recipe chosen so far decoded as it "
        "was, beam 4, alpha 0.6: 40.00 and 40.50)"
    ) in table
    assert "Chosen on valid: chosen so far." in table
    assert mt.chosen_recipe(path, conv, results, M) == chosen
    # ... unless it leads per update: its latest checkpoint alone above the converged winner's
    # at its first check at or after as many updates (7,800: the check at 8,000, 39.0)
    final = json.loads((results / "multi30k-converged.json").read_text())
    final["curve"] = [{"step": 8000, "valid_sacrebleu": 39.0}]
    (results / "multi30k-converged.json").write_text(json.dumps(final))
    first = mt.read_trials(path)[mt.trial_name(published, 60.0)]
    first["valid_sacrebleu_by_averaged"]["1"] = 39.5
    trials[first["name"]] = first
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    assert mt.main(common) == 0
    assert [("--steps" in c, "--no-test" in c) for c in calls[10:]] == [(True, True)]
    table = mt.hour_markdown(chosen, mt.read_trials(path), results, conv)
    assert "Not trained to convergence" not in table
    assert (
        "published: out at 60 minutes, but ahead per update, so trained to convergence: its "
        "latest checkpoint alone scored 39.50 on valid after 7,800 updates, the chosen recipe's "
        "39.00 after 8,000 (beam 4, alpha 0.6)."
    ) in table
    assert mt.chosen_recipe(path, conv, results, M) == chosen  # the 60-minute choice stands


def test_a_60_minute_trial_needs_a_machine_as_fast_as_the_finals() -> None:
    """unlike_machine: a machine whose fp32 matmul peak is below LIKE_MACHINE of the slower
    final's gives a 60-minute trial fewer updates than the finals had, so the round says why
    and runs none; the peak is measured only when a final recorded its own."""
    finals = [
        {"machine": {"matmul_peak_gflops": 344.1}},
        {"machine": {"matmul_peak_gflops": 322.3}},
    ]
    first = ("chosen so far", mt.Recipe(), finals, [])
    assert mt.unlike_machine(first, lambda: 300.0) is None  # 0.93 of the slower
    assert mt.unlike_machine(first, lambda: 0.85 * 322.3) is None  # the bound itself is like
    why = mt.unlike_machine(first, lambda: 214.0)
    assert why is not None
    assert why.startswith("this machine's fp32 matmul peak is 214.0 GFLOP/s, 0.66 of the 322.3")
    assert why.endswith("or pass --any-machine")
    measured: list[int] = []

    def peak() -> float:
        measured.append(1)
        return 1.0

    unknown = ("chosen so far", mt.Recipe(), [{"steps": 15000}, None], [])
    assert mt.unlike_machine(unknown, peak) is None
    assert measured == []
    with pytest.raises(SystemExit):  # it belongs to --hour
        mt.main(["--any-machine", "--plan"])


def test_a_recipe_out_at_60_minutes_may_lead_per_update() -> None:
    """leads_per_update: the trial's latest checkpoint alone against the converged run's first
    check at or after as many updates, only when both were decoded alike."""
    converged = {
        "curve": [{"step": 8000, "valid_sacrebleu": 38.15}, {"step": 9000, "valid_sacrebleu": 38.6}]
    }

    def trial(alone: float | None, steps: int = 7414, decode: tuple[int, float] = (4, 0.6)):
        by = {"5": 39.1} | ({"1": alone} if alone is not None else {})
        rec = {"steps": steps, "valid_sacrebleu_by_averaged": by}
        return rec | {"decode": {"beam": decode[0], "alpha": decode[1]}}

    assert mt.leads_per_update(converged, trial(39.03))  # mid's figures
    assert not mt.leads_per_update(converged, trial(38.15))  # a tie does not lead
    assert mt.leads_per_update(converged, trial(38.5, steps=8000))  # the check at 8,000
    assert not mt.leads_per_update(converged, trial(38.5, steps=8001))  # the one at 9,000
    assert not mt.leads_per_update(converged, trial(45.0, steps=9001))  # no check that late
    assert not mt.leads_per_update(converged, trial(45.0, decode=(6, 1.5)))  # decoded otherwise
    assert not mt.leads_per_update(converged, trial(None))  # no figure of the latest alone
    assert not mt.leads_per_update(None, trial(39.03))
    assert not mt.leads_per_update(converged, None)


def test_a_run_to_convergence_starts_from_the_trials_latest_checkpoint(tmp_path: Path) -> None:
    """start_from copies the 60-minute trial's config, metrics and latest checkpoint only (a
    resume is exact, so the run to convergence does not repeat those updates)."""
    trial, run = tmp_path / "trial", tmp_path / "run"
    assert mt.start_from(trial, run) is False  # no trial run: nothing made
    assert not run.exists()
    for step in ("step_00000398", "step_00007412"):
        (trial / "checkpoints" / step).mkdir(parents=True)
        (trial / "checkpoints" / step / "model.safetensors").write_text(step)
    (trial / "checkpoints" / "latest").write_text("step_00007412\n")
    (trial / "config.json").write_text("{}")
    (trial / "metrics.jsonl").write_text('{"event": "stop"}\n')
    (trial / "multi30k.json").write_text("{}")  # the trial's own summary stays with it
    assert mt.start_from(trial, run) is True
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest", "step_00007412"]
    assert (run / "checkpoints" / "step_00007412" / "model.safetensors").read_text() == (
        "step_00007412"
    )
    assert sorted(p.name for p in run.iterdir()) == ["checkpoints", "config.json", "metrics.jsonl"]


def test_a_decode_tie_keeps_the_papers_setting_then_the_smaller_beam() -> None:
    grid = mt.decode_grid()
    assert grid[0] == mt.PAPER_DECODE == (4, 0.6)
    assert len(grid) == len(set(grid)) == len(mt.DECODE_BEAMS) * len(mt.DECODE_ALPHAS)
    flat = {mt.decode_cell(*c): 30.0 for c in grid}
    record = {"models": {"a.json": {"valid": dict(flat)}, "b.json": {"valid": dict(flat)}}}
    assert mt.decode_choice(record) == (4, 0.6)  # all equal: the paper's
    record["models"]["a.json"]["valid"]["beam 8, alpha 1.2"] = 30.5
    record["models"]["a.json"]["valid"]["beam 6, alpha 1.2"] = 30.5
    assert mt.decode_choice(record) == (6, 1.2)  # the mean decides; a tie, the smaller beam
    record["models"]["b.json"]["valid"]["beam 8, alpha 1.2"] = 30.25
    assert mt.decode_choice(record) == (8, 1.2)
    del record["models"]["b.json"]["valid"]["beam 1, alpha 0"]
    assert mt.decode_choice(record) is None  # a cell to run
    assert mt.decode_choice({}) is None


def test_the_benchmarks_decode_defaults_are_the_decode_rounds_choice() -> None:
    """benchmarks/multi30k.py decodes with the beam and alpha the decode round chose on valid
    (the paper's until it has run), and passes them to every `aiayn evaluate`."""
    defaults = multi30k._parser().parse_args([])
    assert (defaults.beam, defaults.alpha) == mt.chosen_decode()


def test_the_decode_round_chooses_on_valid_then_tests_each_final_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--decode decodes valid with every cell of the grid for each final's chosen average,
    keeps the highest mean (recorded cell by cell: a stopped round resumes), then scores
    test2016 once per final with it; the paper's setting winning leaves the finals' scores."""
    path, results, decode = tmp_path / "t.jsonl", tmp_path / "results", tmp_path / "decode.json"
    runs = tmp_path / "runs" / "m30k-trials"
    common = ["--trials-file", str(path), "--results", str(results), "--runs", str(runs)]
    common += ["--decode-file", str(decode), "--decode"]
    trials: dict = {}
    fill(trials)
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    results.mkdir()
    finals = []
    for name, budget in (("f1.json", {"budget_minutes": 60.0}), ("c.json", {"budget_steps": 8000})):
        rec = final_record(40.0) | budget | {"vocab_size": 10000}
        (results / name).write_text(json.dumps(rec))
        finals.append((name, tmp_path / name.removesuffix(".json")))
    monkeypatch.setattr(mt, "decode_finals", lambda *a: None)
    assert mt.main(common) == 2
    assert "run --hour first" in capsys.readouterr().out
    monkeypatch.setattr(mt, "decode_finals", lambda *a: finals)
    assert mt.main(common) == 2  # the models are not on this machine
    assert "average-60min-last5.safetensors is missing" in capsys.readouterr().out
    for (_, run), tag in zip(finals, ("60min", "8000steps"), strict=True):
        run.mkdir()
        (run / f"average-{tag}-last5.safetensors").write_bytes(b"")
    calls: list[list[str]] = []

    def evaluate(argv: list[str]) -> int:  # aiayn evaluate: beam 6, alpha 0.9 is best on valid
        calls.append(argv)
        beam, alpha = int(argv[argv.index("--beam") + 1]), float(argv[argv.index("--alpha") + 1])
        bleu = 40.0 - abs(beam - 6) / 10 - abs(alpha - 0.9) / 10
        bleu += 1.0 if argv[argv.index("--split") + 1] == "test" else 0.0
        report = {k: {"score": bleu, "signature": k} for k in mt.DECODE_SCORES}
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(report))
        return 0

    monkeypatch.setattr(mt, "evaluate", evaluate)
    assert mt.main(common) == 0
    cells = len(mt.decode_grid()) - (len(mt.DECODE_ALPHAS) - 1)  # beam 1 decoded once
    splits = [c[c.index("--split") + 1] for c in calls]
    assert splits == ["valid"] * (2 * cells) + ["test"] * 2
    assert all(c[c.index("--data") + 1] == str(runs / "data-bpe10000") for c in calls)
    assert calls[0][calls[0].index("--checkpoint") + 1].endswith("average-60min-last5.safetensors")
    tested = [c[c.index("--beam") + 1 :][:3] for c in calls[-2:]]
    assert tested == [["6", "--alpha", "0.9"]] * 2
    record = json.loads(decode.read_text())
    greedy = {v for c, v in record["models"]["f1.json"]["valid"].items() if c.startswith("beam 1,")}
    assert len(greedy) == 1  # every alpha of beam 1 holds its one decode
    assert record["chosen"] == {"beam": 6, "alpha": 0.9}
    assert record["models"]["f1.json"]["final_valid"] == 40.0  # the final's own choice
    assert record["test"]["c.json"]["sacrebleu"]["score"] == 41.0
    table = mt.decode_markdown(decode)
    assert "| 6 | 39.91 | 39.94 | 39.97 | **40.00** | 39.97 | 39.94 |" in table
    assert "Chosen on valid: beam 6, alpha 0.9 (the paper's: beam 4, alpha 0.6)." in table
    assert "| `f1.json` | 39.77 | 40.00 | 39.00 | **41.00** | 41.00 | 41.00 |" in table
    assert mt.main(common) == 0  # all recorded: nothing decodes again
    assert len(calls) == 2 * cells + 2
    # a round stopped half-way resumes with the cells it lacks
    del record["models"]["c.json"]["valid"]["beam 8, alpha 1.5"]
    del record["test"]
    decode.write_text(json.dumps(record))
    assert mt.main(common) == 0
    assert [c[c.index("--split") + 1] for c in calls[2 * cells + 2 :]] == ["valid", "test", "test"]
    # the paper's setting wins a tie: no test2016 scored
    monkeypatch.setattr(mt, "evaluate", lambda argv: 1)
    flat = {mt.decode_cell(*c): 39.0 for c in mt.decode_grid()}
    decode.write_text(json.dumps({"models": {n: {"valid": flat} for n, _ in finals}}))
    assert mt.main(common) == 0
    assert "the finals' test2016 scores stand" in capsys.readouterr().out
    assert json.loads(decode.read_text())["chosen"] == {"beam": 4, "alpha": 0.6}
    assert "The finals' test2016 scores stand." in mt.decode_markdown(decode)
    # a record of other finals is not mixed with these
    decode.write_text(json.dumps({"models": {"old.json": {"valid": flat}}}))
    assert mt.main(common) == 2
    assert "decodes other finals (old.json)" in capsys.readouterr().out
    # a failed decode stops the round with what it recorded
    decode.unlink()
    assert mt.main(common) == 1
    assert "decoding valid failed: f1.json, beam 4, alpha 0.6" in capsys.readouterr().out


def test_the_decode_round_decodes_the_committed_finals_of_the_recipe_chosen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the hour round complete (its candidates and rules as they were when the decode round
    ran), the decode round's models are the recipe chosen's two 60-minute finals and its converged
    final, from the runs run_finals and the converged round trained them in (beside --runs);
    with a candidate still to run, there are none yet."""
    args = mt.argparse.Namespace(runs="runs/m30k-trials", multi30k_dir=None, threads=0)
    _, chosen, _ = mt.plan(mt.read_trials(mt.TRIALS_FILE), M)
    assert chosen is not None
    pending = dataclasses.replace(mt.Recipe(), shape="mid", dropout=0.25)
    monkeypatch.setattr(mt, "HOUR_CANDIDATES", (*mt.HOUR_CANDIDATES, ("pending", pending)))
    assert mt.decode_finals(chosen, args, mt.TRIALS_FILE, mt.RESULTS, mt.CONVERGED_TRIALS) is None
    monkeypatch.setattr(mt, "HOUR_CANDIDATES", mt.HOUR_CANDIDATES[:2])
    monkeypatch.setattr(mt, "leads_per_update", lambda *_: False)  # the rule came later
    recorded = json.loads(mt.DECODE_FILE.read_text())["models"]
    finals = mt.decode_finals(chosen, args, mt.TRIALS_FILE, mt.RESULTS, mt.CONVERGED_TRIALS)
    assert finals is not None
    assert sorted(name for name, _ in finals) == sorted(recorded)
    assert finals == [
        (
            "multi30k-final-60min-dropout0.2-seed1.json",
            Path("runs/m30k-final-60min-dropout0.2-seed1"),
        ),
        (
            "multi30k-final-60min-dropout0.2-seed2.json",
            Path("runs/m30k-final-60min-dropout0.2-seed2"),
        ),
        ("multi30k-converged-dropout0.2.json", Path("runs/m30k-converged-dropout0.2")),
    ]
    for name, run in finals:  # each names the model its test2016 was scored with
        final = json.loads((mt.RESULTS / name).read_text())
        model = mt.chosen_model(final, run)
        assert model.parent == run
        assert model.name == (
            f"average-{'60min' if 'budget_minutes' in final else '8000steps'}"
            f"-last{final['averaged_checkpoints']}.safetensors"
        )


def test_the_literature_round_sets_a_lowercased_twin_against_the_cased_model_on_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--literature decodes the cased converged final's chosen average on valid once (the
    benchmark's default beam and alpha), trains its lowercased twin to convergence, valid only
    (--lowercase, its own data), and compares the two in Moses-tokenized, lowercased BLEU; a
    twin that wins is resumed without --no-test (test2016 once) and copied; a cased win or a
    tie tests nothing; nothing recorded runs again."""
    path, conv, results = tmp_path / "t.jsonl", tmp_path / "c.jsonl", tmp_path / "results"
    lit, decode = tmp_path / "lit.json", tmp_path / "decode.json"
    runs = tmp_path / "runs" / "m30k-trials"
    common = ["--trials-file", str(path), "--converged-trials-file", str(conv)]
    common += ["--results", str(results), "--runs", str(runs), "--decode-file", str(decode)]
    common += ["--literature-file", str(lit), "--literature"]
    trials: dict = {}
    fill(trials)
    path.write_text("".join(json.dumps(t) + "\n" for t in trials.values()))
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    assert mt.main(common) == 2  # the hour round has not chosen
    assert "run --hour first" in capsys.readouterr().out
    base = dataclasses.replace(chosen, dropout=0.2, seed=1, lr_decay="rsqrt")
    base_run = tmp_path / "m30k-converged-dropout0.2"
    monkeypatch.setattr(mt, "literature_base", lambda *a: (base, "c.json", base_run))
    results.mkdir()
    final = final_record(40.0) | {"budget_steps": 8000, "vocab_size": 10000}
    (results / "c.json").write_text(json.dumps(final))
    decode.write_text(json.dumps({"chosen": {"beam": 6, "alpha": 1.5}}))
    assert mt.main(common) == 2  # the cased model is not on this machine
    assert "average-8000steps-last5.safetensors is missing" in capsys.readouterr().out
    base_run.mkdir()
    (base_run / "average-8000steps-last5.safetensors").write_bytes(b"")
    evaluated: list[list[str]] = []

    def evaluate(argv: list[str]) -> int:  # aiayn evaluate of the cased model on valid
        evaluated.append(argv)
        report = {k: {"score": 40.5, "signature": k} for k in mt.DECODE_SCORES}
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(report))
        return 0

    twin_valid = {"moses": 41.0}
    calls: list[list[str]] = []

    def call(cmd: list[str]) -> int:  # benchmarks/multi30k.py: a trial records, a final tests
        calls.append(cmd)
        run = Path(cmd[cmd.index("--run") + 1])
        run.mkdir(parents=True, exist_ok=True)
        if "--no-test" in cmd:
            rec = converged_record(mt.literature_twin(base), 40.8) | {"name": cmd[-3]}
            rec["valid_moses_bleu_by_averaged"] = {"1": 39.0, "10": twin_valid["moses"]}
            with Path(cmd[cmd.index("--trials-file") + 1]).open("a") as f:
                f.write(json.dumps(rec) + "\n")
        else:
            (run / "multi30k.json").write_text(json.dumps(final_record(41.0)))
        return 0

    monkeypatch.setattr(mt, "evaluate", evaluate)
    monkeypatch.setattr(mt.subprocess, "call", call)
    assert mt.main(common) == 0
    assert len(evaluated) == 1
    assert evaluated[0][evaluated[0].index("--split") + 1] == "valid"
    assert evaluated[0][evaluated[0].index("--data") + 1] == str(runs / "data-bpe10000")
    assert evaluated[0][evaluated[0].index("--beam") + 1 :][:3] == ["6", "--alpha", "1.5"]
    assert [("--no-test" in c, "--lowercase" in c) for c in calls] == [(True, True), (False, True)]
    name = mt.converged_name(mt.literature_twin(base))
    assert name == mt.converged_name(dataclasses.replace(base, lowercase=True))
    assert name.endswith(f", dropout 0.2, BPE {base.vocab_size}, seed 1, lowercased")
    assert calls[0][calls[0].index("--record") + 1] == name
    lc = str(runs / f"data-bpe{base.vocab_size}-lc")
    assert all(c[c.index("--data") + 1] == lc for c in calls)
    assert all(c[c.index("--beam") + 1 :][:3] == ["6", "--alpha", "1.5"] for c in calls)
    assert "--resume" in calls[1]  # the trial's own run, test2016 once
    assert json.loads(lit.read_text())["chosen"] == "lowercased"
    assert (results / mt.LITERATURE_FINAL).is_file()
    table = mt.literature_markdown(lit, conv, results, decode)
    assert "| the converged final | cased | `c.json` | 15,000 | 40.50 (last 5) | 39.75 |" in table
    assert (
        f"| its lowercased twin | lowercased | `{mt.LITERATURE_FINAL}` | 15,000 | **41.00** "
        "(last 10) | **40.75** | 40.50 |"
    ) in table
    assert "Chosen on valid: the lowercased twin, test2016 scored once." in table
    assert mt.main(common) == 0  # everything is recorded: nothing runs again
    assert (len(evaluated), len(calls)) == (1, 2)
    # a tie keeps the cased model: nothing is tested
    (results / mt.LITERATURE_FINAL).unlink()
    conv.unlink()
    twin_valid["moses"] = 40.5
    assert mt.main(common) == 0
    assert [("--no-test" in c) for c in calls[2:]] == [True]
    assert json.loads(lit.read_text())["chosen"] == "cased"
    assert "the cased model; its test2016 scores stand" in mt.literature_markdown(
        lit, conv, results, decode
    )
    # a record of another cased model is not mixed with this one
    monkeypatch.setattr(mt, "literature_base", lambda *a: (base, "other.json", base_run))
    assert mt.main(common) == 2
    assert "sets another model (c.json)" in capsys.readouterr().out


def test_the_hour_round_sets_a_trial_against_the_finals_decoded_as_it_was(tmp_path: Path) -> None:
    """A trial decoded with another beam and alpha than the finals' own (the benchmark's
    defaults after the decode round) is set against the finals' figures at that cell, as the
    decode round measured them: a seed 1 that would stand against their own figures is out
    when below both of theirs at its cell; the winner gains most at equal decode."""
    trials: dict = {}
    fill(trials)
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    results = tmp_path / "results"
    results.mkdir()
    names = [f"multi30k-final-60min-seed{s}.json" for s in mt.FINAL_SEEDS]
    for name, valid in zip(names, (40.0, 40.5), strict=True):
        decoded = final_record(valid) | {"decode": {"beam": 4, "alpha": 0.6}}
        (results / name).write_text(json.dumps(decoded))
    cells = {"beam 4, alpha 0.6": 0.0, "beam 6, alpha 1.5": 0.5}  # the decode round's gain
    models = {
        name: {"averaged_checkpoints": 5, "valid": {c: v + g for c, g in cells.items()}}
        for name, v in zip(names, (40.0, 40.5), strict=True)
    }
    (results / mt.DECODE_FILE.name).write_text(json.dumps({"models": models}))
    tag, pre_ln = next(x for x in mt.HOUR_CANDIDATES if x[0] == "pre-LN")
    rows = [
        ("chosen so far", chosen, [mt.final_as_trial(results / n) for n in names], names),
        (tag, pre_ln, [None, None], ["t.jsonl"] * 2),
    ]

    def trial(valid: float, decode: tuple[int, float]) -> dict:
        rec = {"valid_sacrebleu_by_averaged": {"3": valid}, "averaged_checkpoints": 3}
        return rec | {"decode": {"beam": decode[0], "alpha": decode[1]}}

    assert [mt.figure_at(r, (6, 1.5)) for r in rows[0][2]] == [40.5, 41.0]
    assert [mt.figure_at(r, (4, 0.6)) for r in rows[0][2]] == [40.0, 40.5]
    assert mt.figure_at(rows[0][2][0], (8, 0.0)) is None  # not measured: no comparison
    rows[1][2][0] = trial(40.25, (6, 1.5))  # below both finals at its cell (40.5 and 41.0)
    assert mt.out_of_hour(rows[0], rows[1])
    rows[1][2][0] = trial(40.25, (4, 0.6))  # the same figure at the finals' own decode
    assert not mt.out_of_hour(rows[0], rows[1])
    rows[1][2][:] = [trial(41.0, (6, 1.5)), trial(41.5, (6, 1.5))]
    assert not mt.out_of_hour(rows[0], rows[1])
    assert mt.gain_over(rows[0], rows[1]) == pytest.approx(0.5)  # 41.25 against 40.75
    assert mt.best_gain(rows[0], rows[1:]) == 1
    rows[1][2][:] = [trial(40.75, (6, 1.5)), trial(40.75, (6, 1.5))]  # a tie keeps the finals
    assert mt.best_gain(rows[0], rows[1:]) == 0


def test_a_converged_choice_stands_among_the_recorded_rows_until_the_rest_run() -> None:
    """converged_best: the recorded row gaining most over the first above 0 (a tie keeps the
    earlier); a row still to run is not counted, so the choice it leaves stands until then."""
    r = mt.Recipe()
    first = ("chosen so far", r, converged_record(r, 40.0), "c")
    ahead = ("ahead", r, converged_record(r, 41.0), "c")
    tied = ("tied", r, converged_record(r, 41.0), "c")
    behind = ("behind", r, converged_record(r, 39.0), "c")
    pending = ("pending", r, None, "c")
    assert mt.converged_best([first, behind, ahead, tied, pending]) == 2
    assert mt.converged_best([first, behind, pending]) == 0
    assert mt.converged_best([first]) == 0


def test_the_published_recipe_at_its_batch_goes_to_convergence_whatever_its_hour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """published-8192 (the published run's recipe and batch) is out at 60 minutes and not ahead
    per update by the rule, on the committed records, yet the hour round trains it to
    convergence (AS_PUBLISHED); without that door it would not; while its run is to come, the
    converged final chosen before stands (mid)."""
    trials = mt.read_trials(mt.TRIALS_FILE)
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    hour_rows, _, _ = mt.hour_plan(chosen, trials)
    row = next(x for x in hour_rows if x[0] == "published-8192")
    assert row[1] == mt.Recipe("small", 8192, 2.53, 2000, "rsqrt", 0.3, 10000)
    assert row[2][0] is not None
    assert row[2][0]["steps"] == 3807
    rows, best, missing = mt.hour_converged_plan(chosen, trials)
    assert mt.out_of_hour(hour_rows[0], row)
    assert not mt.leads_per_update(rows[0][2], row[2][0])
    assert "published-8192" in [x[0] for x in rows]
    assert mt.AS_PUBLISHED == ("published-8192",)
    if best is None:  # its run to convergence is still to come
        assert missing == [dataclasses.replace(row[1], seed=1)]
        assert rows[mt.converged_best(rows)][0] == "mid"
        md = mt.hour_markdown(chosen, trials)
        assert "Chosen on valid: not yet, 1 trial(s) to run; until then, mid stands." in md
    assert (
        "published-8192: trained to convergence whatever its hour, the published run's recipe"
        in mt.hour_markdown(chosen, trials)
    )
    monkeypatch.setattr(mt, "AS_PUBLISHED", ())
    assert "published-8192" not in [x[0] for x in mt.hour_converged_plan(chosen, trials)[0]]


def fake_checkpoint(run: Path, step: int, minutes: float) -> None:
    """A complete checkpoint of RUN at STEP (the files a reader checks, with their manifest)."""
    from aiayn import storage
    from aiayn.run_dir import CHECKPOINT_FILES, META_FILE

    ckpt = run / "checkpoints" / f"step_{step:08d}"
    ckpt.mkdir(parents=True)
    for name in CHECKPOINT_FILES:
        (ckpt / name).write_bytes(b"x")
    (ckpt / META_FILE).write_text(json.dumps({"step": step, "elapsed_s": minutes * 60}))
    storage.write_manifest(ckpt, {})
    (run / "checkpoints" / "latest").write_text(ckpt.name + "\n")


def test_a_run_to_convergence_stopped_before_it_converges_is_recorded_where_it_stands(
    tmp_path: Path,
) -> None:
    """snapshot_progress records a stopped run's updates, minutes, checks and machine under its
    trial's name, one entry per run (its id in RUN/attempt.txt): the same run is updated, a run
    begun again from update 0 (its machine lost) is a new attempt and the lost one is kept; the
    hour round's converged table shows the latest attempt in progress, its rate, the earliest
    update the rule can stop at, and the lost runs. A run without a checkpoint records nothing;
    a damaged progress file is one line naming it."""
    trials = mt.read_trials(mt.TRIALS_FILE)
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    results = tmp_path / "results"
    shutil.copytree(mt.RESULTS, results)
    (results / mt.PROGRESS_NAME).unlink(missing_ok=True)
    conv = results / mt.CONVERGED_TRIALS.name
    _, best, missing = mt.hour_converged_plan(chosen, trials, results, conv)
    if best is not None:  # published-8192 recorded: pretend it is not, to see it in progress
        published = dict(mt.HOUR_CANDIDATES)["published-8192"]
        rec = mt.converged_name(dataclasses.replace(published, seed=1))
        conv.write_text("".join(x + "\n" for x in conv.read_text().splitlines() if rec not in x))
        missing = mt.hour_converged_plan(chosen, trials, results, conv)[2]
    name = mt.converged_name(missing[0])
    file, run = results / mt.PROGRESS_NAME, tmp_path / "m30k-converged-published-8192"
    machine = {"processor": "AMD EPYC", "matmul_peak_gflops": 214.4}
    assert mt.snapshot_progress(name, run, file, lambda: machine) is None  # nothing yet
    assert not file.exists()
    fake_checkpoint(run, 4000, 80.0)
    (run / "metrics.jsonl").write_text(
        json.dumps({"event": "train", "step": 4000, "nll": 1.5}) + "\n"
    )
    first = mt.snapshot_progress(name, run, file, lambda: machine)
    assert first is not None
    assert (first["steps"], first["training_minutes"], first["curve"]) == (4000, 80.0, [])
    assert first["train_nll"] == {"4000": 1.5}
    fake_checkpoint(run, 9000, 180.0)
    (run / "curve.jsonl").write_text(
        json.dumps({"step": 8000, "valid_sacrebleu": 39.62})
        + "\n"
        + json.dumps({"step": 9000, "valid_sacrebleu": 39.5})
        + "\n"
    )
    mt.snapshot_progress(name, run, file, lambda: machine)
    attempts = mt.read_progress(file)[name]
    assert len(attempts) == 1  # the same run, updated
    assert attempts[0]["attempt"] == (run / mt.ATTEMPT_FILE).read_text().strip()
    assert (attempts[0]["steps"], len(attempts[0]["curve"])) == (9000, 2)
    shutil.rmtree(run)  # its machine lost: the next session begins again from update 0
    fake_checkpoint(run, 3000, 60.0)
    mt.snapshot_progress(name, run, file, lambda: machine)
    attempts = mt.read_progress(file)[name]
    assert [a["steps"] for a in attempts] == [9000, 3000]
    table = mt.hour_markdown(chosen, trials, results, conv)
    flags = " ".join(missing[0].flags()[:-2])
    assert f"| published-8192 | `{flags}` | in progress | 3,000 | 60.0 | | |" in table
    assert (
        "published-8192: in progress (`multi30k-converged-progress.json`): its run stood at update "
        f"3,000 after 60.0 training minutes when last stopped ({attempts[-1]['date']}; AMD EPYC, "
        "214 GFLOP/s, 50 updates a minute); by the rule it stops at update 10,000 at the "
        "earliest. A session resumes it with `--hour` where the machine kept its run; 1 earlier "
        "run(s) of it were lost with their machine, the furthest at update 9,000 (checks 8,000: "
        "39.62, 9,000: 39.50)."
    ) in table
    assert "Chosen on valid: not yet, 1 trial(s) to run; until then, mid stands." in table
    file.write_text("[1, 2]")
    with pytest.raises(SystemExit, match="not a progress file"):
        mt.read_progress(file)
    file.write_text("{")
    with pytest.raises(SystemExit, match=r"progress\.json: not JSON"):
        mt.hour_markdown(chosen, trials, results, conv)


def test_the_hour_round_records_a_run_to_convergence_that_stops_where_it_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run to convergence stopped before it converges (a session's end: SIGTERM saves a
    checkpoint, benchmarks/multi30k.py exits non-zero) is recorded by --hour where it stands;
    --progress records one stopped outside --hour, and says so where there is nothing."""
    results = tmp_path / "results"
    shutil.copytree(mt.RESULTS, results)
    (results / mt.PROGRESS_NAME).unlink(missing_ok=True)
    conv = results / mt.CONVERGED_TRIALS.name
    runs = tmp_path / "runs" / "m30k-trials"
    common = ["--trials-file", str(mt.TRIALS_FILE), "--converged-trials-file", str(conv)]
    common += ["--results", str(results), "--runs", str(runs)]
    trials = mt.read_trials(mt.TRIALS_FILE)
    _, chosen, _ = mt.plan(trials, M)
    assert chosen is not None
    missing = mt.hour_converged_plan(chosen, trials, results, conv)[2]
    if not missing:
        pytest.skip("every run to convergence of the hour round is recorded")
    machine = {"processor": "AMD EPYC", "matmul_peak_gflops": 214.4}
    monkeypatch.setattr(mt, "_machine", lambda: machine)
    calls: list[list[str]] = []

    def stopped(cmd: list[str]) -> int:  # trained 2,500 updates, then SIGTERM
        calls.append(cmd)
        fake_checkpoint(Path(cmd[cmd.index("--run") + 1]), 2500, 50.0)
        return 1

    monkeypatch.setattr(mt.subprocess, "call", stopped)
    assert mt.main([*common, "--hour"]) == 1
    assert "the converged trial failed" in capsys.readouterr().out
    assert len(calls) == 1
    assert "--steps" in calls[0]
    name = mt.converged_name(missing[0])
    assert [a["steps"] for a in mt.read_progress(results / mt.PROGRESS_NAME)[name]] == [2500]
    run = Path(calls[0][calls[0].index("--run") + 1])
    fake_checkpoint(run, 2600, 52.0)  # trained on outside --hour, then stopped
    assert mt.main([*common, "--progress"]) == 0
    assert "published-8192: update 2,600 recorded in" in capsys.readouterr().out
    assert [a["steps"] for a in mt.read_progress(results / mt.PROGRESS_NAME)[name]] == [2600]
    shutil.rmtree(run)
    assert mt.main([*common, "--progress"]) == 0
    assert "holds no checkpoint on this machine; nothing recorded" in capsys.readouterr().out
    monkeypatch.setattr(mt, "AS_PUBLISHED", ())  # no run to convergence left to record
    assert mt.main([*common, "--progress"]) == 0
    assert "no run to convergence of the hour round is in progress" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        mt.main([*common, "--progress", "--hour"])
    assert "run one after the other: pass one" in capsys.readouterr().err
