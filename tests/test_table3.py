"""aiayn table3: the scaled rows, the verdict logic, the results file, and the verb end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from aiayn.cli import main as aiayn
from aiayn.config import PRESETS
from aiayn.errors import UserError
from aiayn.table3 import report, stats
from aiayn.table3.curves import read_curves
from aiayn.table3.results import (
    RECORD,
    Protocol,
    append_result,
    check_directory,
    check_protocol,
    read_protocol,
    read_results,
    record_problem,
)
from aiayn.table3.rows import (
    PAPER_BASE,
    SMALL_BASE,
    VARIATIONS,
    scale_variation,
    variation,
    variations,
)
from aiayn.table3.run import _dev_split, default_dev_limit, valid_every
from tests.bad_inputs_table3 import line, record, write_dir
from tests.multi30k_support import write_raw


def test_every_row_of_table3_has_a_preset_and_a_scaled_model() -> None:
    assert len(VARIATIONS) == 19  # the base and the paper's 18 variations
    for v in VARIATIONS:
        assert v.preset in PRESETS
        cfg, _ = scale_variation(v, SMALL_BASE)
        paper, _ = scale_variation(v, PAPER_BASE)
        assert cfg.d_model * PAPER_BASE.d_model == paper.d_model * SMALL_BASE.d_model
        assert cfg.n_heads == paper.n_heads  # h is copied, widths scaled
        assert cfg.d_k * 4 == paper.d_k
        assert cfg.d_v * 4 == paper.d_v


def test_row_a_keeps_h_times_dk_equal_to_d_model() -> None:
    for v in variations(("A",)):
        cfg, _ = scale_variation(v)
        assert cfg.n_heads * cfg.d_k == cfg.d_model == SMALL_BASE.d_model


def test_row_c_scales_depth_and_width_in_the_papers_proportion() -> None:
    got = {v.name: scale_variation(v)[0] for v in variations(("C",))}
    assert [got[n].n_layers for n in ("C-n2", "C-n4", "C-n8")] == [1, 2, 4]  # of 3, as 2/4/8 of 6
    assert (got["C-d256"].d_model, got["C-d1024"].d_model) == (64, 256)  # halved and doubled
    assert (got["C-dff1024"].d_ff, got["C-dff4096"].d_ff) == (256, 1024)
    assert got["C-d1024"].d_k == 32  # d_k 128 of d_model 1024, scaled


def test_row_d_changes_training_settings_and_dropout_only() -> None:
    cfg, train = scale_variation(variation("D-ls0.0"))
    assert train == {"label_smoothing": 0.0}
    assert cfg == SMALL_BASE
    cfg, train = scale_variation(variation("D-drop0.2"))
    assert cfg.dropout == 0.2
    assert train == {}


def test_a_base_whose_sizes_do_not_divide_is_refused() -> None:
    import dataclasses

    odd = dataclasses.replace(SMALL_BASE, d_model=120, n_heads=8)  # 512 -> 120 is not whole
    with pytest.raises(ValueError, match="not a whole number"):
        scale_variation(variation("A-h32"), odd)  # d_k 16 * 120 / 512


@pytest.mark.parametrize(
    ("subject", "ref", "expect", "want"),
    [
        ([5.0, 5.2], [4.0, 4.1], "higher", stats.HOLDS),  # 1.05 apart, noise 0.2
        ([4.0, 4.1], [5.0, 5.2], "higher", stats.FAILS),  # the other way, beyond the noise
        ([4.5, 5.5], [4.6, 4.8], "higher", stats.NOISE),  # 0.3 apart, but the seeds span 1.0
        ([4.5, 5.5], [4.6, 4.8], "lower", stats.NOISE),
        ([4.0, 4.1], [5.0, 5.2], "lower", stats.HOLDS),
        ([4.9, 5.0], [4.5, 5.4], "same", stats.HOLDS),  # within the spread: about equal
        ([6.0, 6.1], [4.5, 4.6], "same", stats.FAILS),
        ([5.0], [4.0, 4.1], "higher", stats.FEW),  # one seed: no spread, no verdict
    ],
)
def test_verdict_never_calls_a_difference_within_the_seeds_spread_a_trend(
    subject, ref, expect, want
) -> None:
    assert stats.range_verdict(subject, ref, expect)[0] == want


def test_verdict_reports_the_difference_and_the_larger_range() -> None:
    _, delta, noise = stats.range_verdict([5.0, 5.4], [4.0, 4.1], "higher")
    assert delta == pytest.approx(1.15)
    assert noise == pytest.approx(0.4)


def _record(name, seed, ppl, bleu=20.0):
    return {"run": f"{name}-s{seed}", "name": name, "seed": seed, "dev_ppl": ppl, "dev_bleu": bleu}


def test_findings_against_the_best_of_a_group() -> None:
    recs = [_record("base", s, p) for s, p in ((1, 5.0), (2, 5.1))]
    recs += [_record("A-h16", s, p) for s, p in ((1, 4.0), (2, 4.1))]  # the best head count
    recs += [_record("A-h32", s, p) for s, p in ((1, 4.6), (2, 4.7))]  # worse than h16, not base
    checked = {c["finding"].subject: c for c in report.check_findings(recs)}
    assert checked["A-h32"]["ref"] == "A-h16"
    assert checked["A-h32"]["old"] == stats.HOLDS
    assert checked["A-h32"]["verdict"] == stats.HOLDS  # +15.0% and +14.6%: a narrow interval
    assert "A-h1" not in checked  # no results: no verdict


def test_the_bootstrap_cuts_words_as_the_runs_dev_bleu_did(tmp_path, monkeypatch) -> None:
    import sacrebleu.metrics

    zh = "nrefs:1|case:mixed|eff:no|tok:zh|smooth:exp|version:2.6.0"
    assert report.bleu_tokenizer_of({"bleu_signature": zh}) == "zh"
    assert report.bleu_tokenizer_of({"bleu_signature": zh.replace("tok:zh", "tok:13a")}) == "13a"
    assert report.bleu_tokenizer_of({}) == "13a"  # a record of an older aiayn: sacreBLEU's default
    (tmp_path / "refs.txt").write_text("我们买茶。\n他们看见花。\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("我们买茶。\n他们看见书。\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("我们买花。\n他们看见花。\n", encoding="utf-8")
    tokenizers = []

    class BLEU(sacrebleu.metrics.BLEU):
        def __init__(self, **kwargs) -> None:
            tokenizers.append(kwargs.get("tokenize"))
            super().__init__(**kwargs)

    monkeypatch.setattr(sacrebleu.metrics, "BLEU", BLEU)
    common = {"seed": 1, "refs": "refs.txt", "bleu_signature": zh}
    records = [
        {"run": "base-s1", "name": "base", "hyps": "a.txt", **common},
        {"run": "A-h1-s1", "name": "A-h1", "hyps": "b.txt", **common},
    ]
    p = report.bootstrap(records, tmp_path, samples=10)
    assert set(p) == {("A-h1", 1)}
    assert tokenizers[0] == "zh"


def test_results_file_drops_a_half_written_last_line(tmp_path) -> None:
    write_dir(tmp_path)
    append_result(tmp_path, record(seed=1))
    with (tmp_path / "results.jsonl").open("a") as fh:
        fh.write('{"run": "base-s2", "dev_pp')  # killed while appending
    before = (tmp_path / "results.jsonl").read_bytes()
    assert [r["run"] for r in read_results(tmp_path)] == ["base-s1"]
    assert (tmp_path / "results.jsonl").read_bytes() == before  # reading never writes
    append_result(tmp_path, record(seed=2))  # the half-written line is cut off first
    assert [r["run"] for r in read_results(tmp_path)] == ["base-s1", "base-s2"]


def test_a_broken_line_inside_the_results_file_is_named(tmp_path) -> None:
    write_dir(tmp_path, [line(record(seed=1)), b"not json", line(record(seed=2))])
    with pytest.raises(UserError, match=r"results.jsonl: line 2: not a JSON record"):
        read_results(tmp_path)


def test_every_record_the_runner_writes_fits_the_schema() -> None:
    """The keys the runner writes (its record, tests/bad_inputs_table3.record) cover RECORD."""
    import inspect

    import aiayn.table3.run as runner

    source = inspect.getsource(runner.run_table3)
    for key in RECORD:
        assert f'"{key}":' in source, key
    assert all(record_problem(r, COMMITTED) == "" for r in read_results(COMMITTED))


@pytest.mark.parametrize(
    ("damage", "report_only"),
    [("bad line", False), ("bad line", True), ("bad protocol", False), ("bad protocol", True),
     ("other steps", False)],
)  # fmt: skip
def test_a_refused_run_leaves_the_results_file_as_it_was(
    tmp_path, raw, capsys, damage, report_only
) -> None:
    """Refused before anything is run or written: results.jsonl keeps every byte, its
    half-written last line included (cut off only when a record is appended)."""
    out = tmp_path / "t3"
    lines = [line(record(seed=1)), line(record(seed=2))]
    if damage == "bad line":
        lines.insert(1, b"[1, 2]")
    protocol = {"other steps": {"steps": 5}, "bad protocol": {"steps": "3"}}.get(damage, {})
    write_dir(out, lines, {**dataclasses.asdict(Protocol(steps=3, dev_limit=100)), **protocol})
    with (out / "results.jsonl").open("ab") as fh:
        fh.write(b'{"run": "E-learned-s1", "dev_')  # a kill while appending
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    if report_only:
        assert aiayn(["table3", "--report-only", "--out", str(out)]) == 2
    else:
        assert _table3(out, raw) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    after = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after == before  # nothing written, nothing removed, no data prepared


@pytest.mark.parametrize("verb", ["table3", "demo"])
def test_a_bad_mirror_url_in_the_environment_is_named(verb, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AIAYN_MULTI30K_URL", "ftp://127.0.0.1/multi30k")
    out = ["--out", str(tmp_path / "t3")] if verb == "table3" else ["--run", str(tmp_path / "d")]
    assert aiayn([verb, *out, "--source", "multi30k"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        f"aiayn {verb}: error: $AIAYN_MULTI30K_URL: 'ftp://127.0.0.1/multi30k' is not a URL"
    )
    assert not (tmp_path / "t3").exists()
    assert not (tmp_path / "d").exists()


def test_the_committed_table_keeps_its_protocol_and_a_check_scores_100_dev_pairs() -> None:
    """protocol.json written before --dev-limit existed scored the whole dev split: the
    table's budget (1,000 steps) still does, so runs appended there share its protocol."""
    committed = Path(__file__).parents[1] / "benchmarks" / "results" / "table3"
    assert "dev_limit" not in json.loads((committed / "protocol.json").read_text())
    assert read_protocol(committed)["dev_limit"] == 0
    steps = read_protocol(committed)["steps"]
    check_directory(committed, Protocol(steps=steps, dev_limit=default_dev_limit(steps)))
    assert default_dev_limit(steps) == 0
    assert default_dev_limit(20) == 100
    with pytest.raises(UserError, match="dev_limit 0 there, 100 now"):
        check_directory(committed, Protocol(steps=steps, dev_limit=100))


def test_a_dev_limit_cuts_the_valid_split_of_training_to_its_first_pairs() -> None:
    from aiayn.data.splits import InMemorySplit
    from aiayn.train import TrainData

    pairs = [([i + 4] * (i + 1), [i + 5] * (i + 2)) for i in range(5)]
    texts = ([f"s{i}" for i in range(5)], [f"r{i}" for i in range(5)])
    data = TrainData(InMemorySplit(pairs), InMemorySplit(pairs), valid_texts=texts)
    cut = _dev_split(data, 2)
    assert len(cut.valid) == 2
    assert [a.tolist() for a in cut.valid.pair(1)] == [list(x) for x in pairs[1]]
    assert cut.valid_texts == (["s0", "s1"], ["r0", "r1"])
    assert _dev_split(data, 0) is data
    assert _dev_split(data, 9) is data


def test_every_validation_point_of_a_curve_divides_the_budget() -> None:
    assert valid_every(1000) == 100
    assert 1000 % valid_every(4000) == 0  # 4,000 updates pass through the 1,000-update point
    assert valid_every(20) == 2
    assert valid_every(3) == 1


def test_another_budget_in_the_same_directory_is_refused(tmp_path) -> None:
    check_protocol(tmp_path, Protocol(steps=10))
    check_protocol(tmp_path, Protocol(steps=10))  # the same: accepted
    with pytest.raises(UserError, match="steps 10 there, 20 now"):
        check_protocol(tmp_path, Protocol(steps=20))


# The verb end to end, on a small corpus in Multi30k's layout ---------------------------------

WORDS = [
    "a",
    "man",
    "woman",
    "dog",
    "child",
    "runs",
    "sits",
    "on",
    "the",
    "in",
    "red",
    "blue",
    "street",
    "park",
    "water",
    "ball",
]
DE = [
    "ein",
    "mann",
    "frau",
    "hund",
    "kind",
    "rennt",
    "sitzt",
    "auf",
    "der",
    "im",
    "rot",
    "blau",
    "strasse",
    "park",
    "wasser",
    "ball",
]


def _pairs(n: int, offset: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        idx = [(i * 7 + offset + k * 3) % len(WORDS) for k in range(3 + i % 4)]
        out.append((" ".join(WORDS[j] for j in idx) + ".", " ".join(DE[j] for j in idx) + "."))
    return out


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp("m30k")
    write_raw(
        root, {"train": _pairs(160, 0), "val": _pairs(12, 1), "test_2016_flickr": _pairs(12, 2)}
    )
    return root


def _table3(out, raw, *extra):
    argv = ["table3", "--rows", "E", "--steps", "3", "--seeds", "2", "--base-seeds", "2"]
    return aiayn([*argv, "--out", str(out), "--multi30k-dir", str(raw), *extra])


@pytest.mark.slow
def test_table3_runs_resumes_after_an_interruption_and_never_redoes_a_run(
    tmp_path, raw, monkeypatch, capsys
) -> None:
    import aiayn.table3.run as verb

    scored = []
    real_score = verb._score

    def score(run, *args, **kwargs):
        if len(scored) == 2:  # the third run: trained, then interrupted while it is scored
            raise KeyboardInterrupt
        scored.append(run.name)
        return real_score(run, *args, **kwargs)

    monkeypatch.setattr(verb, "_score", score)
    out = tmp_path / "t3"
    assert _table3(out, raw) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "aiayn table3: interrupted"
    assert [r["run"] for r in read_results(out)] == ["base-s1", "base-s2"]
    interrupted = out / "runs" / "E-learned-s1" / "config.json"
    assert interrupted.is_file()  # trained before the interruption
    stamp = interrupted.stat().st_mtime_ns
    monkeypatch.setattr(verb, "_score", real_score)
    trained = []
    real_train = verb._train
    monkeypatch.setattr(
        verb, "_train", lambda run, *a: trained.append(run.name) or real_train(run, *a)
    )
    assert _table3(out, raw) == 0
    text = capsys.readouterr().out
    assert "[1/4] base-s1: done before, kept" in text
    assert "[2/4] base-s2: done before, kept" in text
    assert trained == ["E-learned-s1", "E-learned-s2"]  # the finished runs were not trained again
    assert interrupted.stat().st_mtime_ns == stamp  # the interrupted run kept its training
    records = read_results(out)
    assert [r["run"] for r in records] == ["base-s1", "base-s2", "E-learned-s1", "E-learned-s2"]
    for r in records:
        assert r["steps"] == 3
        assert r["corpus"] == "multi30k"
        assert r["matmul_peak_gflops"] > 0
        assert r["dev_ppl"] > 1
        assert 0 <= r["dev_bleu"] <= 100
        assert r["params"] > 0
        assert r["train_flops"] > 0
        assert r["commit"]
        assert r["model"]["d_model"] == 128
        hyps = (out / r["hyps"]).read_text().split("\n")[:-1]  # not splitlines: U+2028 may occur
        refs = (out / r["refs"]).read_text().split("\n")[:-1]
        assert len(hyps) == len(refs) == r["dev_pairs"] == 12  # all: the limit (100) is above
    learned = [r for r in records if r["name"] == "E-learned"]
    assert all(r["model"]["positions"] == "learned" for r in learned)
    md = (out / "report.md").read_text()
    assert "| E | paper |" in md
    assert "| E-learned | ours (2 seeds) |" in md
    assert "learned positional embeddings are about as good as sinusoids" in md
    assert (out / "plots" / "table3-E.png").stat().st_size > 1000
    assert "| paper base (Table 2) | 100,000 | 3.3e+18 | 1 |" in md
    assert "its first 12 pairs only (--dev-limit 100: a check, not the protocol)" in md
    # Each run's curve: dev PPL at every validation (a tenth of 3 steps: each), the training
    # loss as often; the last validation is the model that was scored
    curves = read_curves(out)
    assert set(curves) == {r["run"] for r in records}
    for r in records:
        assert [p[0] for p in curves[r["run"]]["dev_ppl"]] == [1, 2, 3]
        assert [p[0] for p in curves[r["run"]]["train_loss"]] == [1, 2, 3]
        assert curves[r["run"]]["dev_ppl"][-1][1] == pytest.approx(r["dev_ppl"], rel=1e-3)
    assert "## Learning curves" in md
    assert "![curves of row E](plots/curves-E.png)" in md
    assert (out / "plots" / "curves-E.png").stat().st_size > 1000
    # Where the runs come from, over every record: their commits, threads and machine
    commit = records[0]["commit"][:8]
    threads = records[0]["threads"]
    assert f"4 runs on commit {commit} (4); {threads} thread" in md
    assert " minutes of training a run." in md
    # The same directory with another budget: one line, nothing run
    assert _table3(out, raw, "--steps", "4") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "steps 3 there, 4 now" in err[0]
    assert len(read_results(out)) == 4
    # --report-only rebuilds the report from the results alone
    (out / "report.md").unlink()
    assert aiayn(["table3", "--report-only", "--out", str(out)]) == 0
    assert (out / "report.md").read_text() == md


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rows", "A,F"], "give row groups of Table 3 separated by commas, from A, B, C, D, E"),
        (["--steps", "0"], "--steps"),
        (["--seeds", "x"], "--seeds"),
        (["--dev-limit", "-1"], "--dev-limit: must be an integer >= 0, got '-1'"),
        (["--dev-limit", "all"], "--dev-limit: must be an integer, got 'all'"),
        (["--report-only", "--out", "/nonexistent/t3"], "no results yet"),
    ],
)
def test_bad_flags_get_one_line(argv, message, capsys) -> None:
    assert aiayn(["table3", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]
    assert err[0].startswith("aiayn table3: error:")


def test_help_says_what_it_runs_and_how_long(capsys) -> None:
    assert aiayn(["table3", "--help"]) == 0
    text = capsys.readouterr().out
    assert "Table 3" in text
    assert "39 runs" in text
    assert "hours" in text


# The committed run ----------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results" / "table3"


def test_the_committed_report_is_the_committed_results() -> None:
    records = read_results(COMMITTED)
    runs = report.by_variation(records)
    # the whole table: rows A-E with 2 seeds each, the base with 3 (the "done when")
    assert set(runs) == {"base"} | {v.name for v in variations()}
    assert len(runs["base"]) == 3
    assert all(len(rs) >= 2 for rs in runs.values())
    assert "All 39 runs of the table are finished" in report.docs_results(COMMITTED)
    assert all(len(r["commit"]) >= 40 for r in records)  # the git commit that ran it
    assert all(r["steps"] == 1000 for r in records)
    md = (COMMITTED / "report.md").read_text(encoding="utf-8")
    assert f"{len(records)} runs" in md
    assert report.findings_table(report.check_findings(records)) in md
    for r in records:
        assert (COMMITTED / r["hyps"]).is_file()
