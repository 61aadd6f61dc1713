"""The Multi30k benchmark and the dead-unit count run end to end (behaviour only).

Frozen with the search: run at the commit its README names, from tests/ there."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


SHARED_M30K = ROOT.parent / "shared" / "data" / "multi30k"


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_M30K.is_dir(), reason="no local Multi30k copy beside the repo")
def test_multi30k_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    """The whole benchmark on a budget of seconds: prepare, train, average, evaluate, report."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py")]
    cmd += ["--multi30k-dir", str(SHARED_M30K), "--run", str(tmp_path / "m30k")]
    # 3 s, then 18 s: far enough apart that the first budget's last step (7 s on a slow,
    # loaded machine) cannot use up the second, which then would not resume
    cmd += ["--minutes", "0.05", "0.3", "--limit", "5", "--threads", "1", "--average", "1", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((tmp_path / "m30k" / "multi30k.json").read_text())
    assert summary["sacrebleu"]["signature"].startswith("nrefs:1")
    assert res.stdout.count("Multi30k test2016: sacreBLEU") == 2  # at each budget of one run
    first, second = summary["budgets"]
    assert first["budget_minutes"] == 0.05
    assert second["budget_minutes"] == 0.3
    assert 0 < first["steps"] <= second["steps"]  # the second budget resumed the first
    assert first["training_minutes"] < second["training_minutes"]
    assert "resumed from" in res.stderr + res.stdout
    # the average is chosen on valid: the best candidate's score, and test scored with it only
    for budget in (first, second):
        valid = {int(n): v["sacrebleu"]["score"] for n, v in budget["valid"].items()}
        assert valid
        assert set(valid) <= {1, 2}
        best = max(valid.values())
        assert budget["averaged_checkpoints"] == min(n for n, v in valid.items() if v == best)
        assert budget["lowercase_bleu"]["signature"].startswith("nrefs:1|case:lc")
    evaluations = sorted(p.name for p in (tmp_path / "m30k").glob("evaluation-*.json"))
    assert evaluations == ["evaluation-0.05min.json", "evaluation-0.3min.json"]  # test: once each
    assert "--dropout" in summary["train_flags"]
    assert "valid" in summary["protocol"]
    assert summary["machine"]["matmul_peak_gflops"] > 0  # the figures' machine, comparable
    # the run directory is never replaced unasked
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2
    assert "exists; pass --resume to continue it, --overwrite to replace it" in again.stderr
    assert (tmp_path / "m30k" / "multi30k.json").is_file()


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_M30K.is_dir(), reason="no local Multi30k copy beside the repo")
def test_multi30k_convergence_trial_is_recorded_and_resumes(tmp_path: Path) -> None:
    """--steps with --patience: checks every --check-every updates, stops on a plateau; a
    --record trial reads valid only; --resume keeps the budgets done and trains on."""
    trials = tmp_path / "trials.jsonl"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py"), "--run", str(tmp_path / "r")]
    cmd += ["--multi30k-dir", str(SHARED_M30K), "--vocab-size", "500", "--shape", "small"]
    cmd += ["--max-tokens", "512", "--warmup", "2", "--limit", "5", "--threads", "1"]
    cmd += ["--save-every", "2", "--keep", "10", "--average", "1", "2", "--no-test"]
    cmd += ["--trials-file", str(trials)]
    first = [*cmd, "--steps", "4", "--record", "a"]
    res = subprocess.run(first, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (a,) = [json.loads(x) for x in trials.read_text().splitlines()]
    assert (a["name"], a["budget_steps"], a["steps"]) == ("a", 4, 4)
    assert "--shape" not in a["train_flags"]  # the shape's own flags: the record says them
    assert "--d-model" in a["train_flags"]
    assert a["command"].startswith("python benchmarks/multi30k.py --run")
    assert "--multi30k-dir DIR" in a["command"]  # no path of this machine in the record
    assert not list((tmp_path / "r").glob("evaluation-*.json"))  # test2016 never translated
    assert set(a["valid_perplexity_by_averaged"]) == {"1", "2"}
    assert all(v > 1 for v in a["valid_perplexity_by_averaged"].values())
    # The same name again is refused before anything runs.
    again = subprocess.run([*first, "--resume"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 2
    assert "a trial named 'a' is already recorded" in again.stderr
    # Resumed with a later budget and patience: budget 4 is kept, then checks at 6, 9, 12, ...
    more = [*cmd, "--steps", "4", "6", "--patience", "3", "--check-every", "3", "--resume"]
    res = subprocess.run([*more, "--record", "b"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "budget 4 evaluated before (--resume), kept" in res.stdout
    b = json.loads(trials.read_text().splitlines()[1])
    curve = b["curve"]
    assert [c["step"] for c in curve][:2] == [6, 9]  # the first check at the budget, then 3 on
    best = max(curve, key=lambda c: (c["valid_sacrebleu"], -c["step"]))
    assert curve[-1]["step"] - best["step"] >= 3  # stopped on a plateau of --patience updates
    assert b["steps"] == curve[-1]["step"]
    assert "converged: no rise since step" in res.stdout
    summary = json.loads((tmp_path / "r" / "multi30k.json").read_text())
    assert [x["budget_steps"] for x in summary["budgets"]] == [4, 6]


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_M30K.is_dir(), reason="no local Multi30k copy beside the repo")
def test_multi30k_lowercase_trains_and_scores_lowercased_text(tmp_path: Path) -> None:
    """--lowercase: its own lowercased preparation (references too), recorded in the trial
    with the valid Moses BLEU; the run is never resumed on data of the other casing."""
    trials, run = tmp_path / "trials.jsonl", tmp_path / "r"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py"), "--run", str(run)]
    cmd += ["--multi30k-dir", str(SHARED_M30K), "--vocab-size", "500", "--shape", "small"]
    cmd += ["--max-tokens", "512", "--warmup", "2", "--limit", "5", "--threads", "1"]
    cmd += ["--save-every", "2", "--average", "1", "--no-test", "--trials-file", str(trials)]
    lowercase = [*cmd, "--steps", "2", "--lowercase", "--record", "lc"]
    res = subprocess.run(lowercase, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (rec,) = [json.loads(x) for x in trials.read_text().splitlines()]
    assert rec["lowercase"] is True
    assert set(rec["valid_moses_bleu_by_averaged"]) == {"1"}
    data = tmp_path / "r-data"
    assert json.loads((data / "manifest.json").read_text())["options"]["lowercase"] is True
    refs = (data / "text" / "valid.de").read_text(encoding="utf-8")
    assert refs == refs.lower()
    cased = [*cmd, "--steps", "4", "--resume", "--record", "x"]
    again = subprocess.run(cased, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2
    assert "not prepared with --vocab-size 500, as" in again.stderr


def test_a_trial_records_its_training_loss_every_500_updates(monkeypatch, tmp_path) -> None:
    """The logged window at (or just before) each multiple of 500, and the last one."""
    m30k = bench_module("multi30k", monkeypatch)
    events = [{"event": "train", "step": s, "nll": 10.0 / s} for s in range(100, 1300, 100)]
    events.insert(3, {"event": "checkpoint", "step": 400})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert m30k._train_nll(tmp_path) == {"500": 0.02, "1000": 0.01, "1200": 0.008}
    assert m30k._train_nll(tmp_path / "missing") == {}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--patience", "100"], "--patience goes with --steps"),
        (["--minutes", "5", "--steps", "100"], "not allowed with argument"),
        (["--steps", "100", "--record", "x"], "--record is for trials: add --no-test"),
        (["--steps", "300", "--lr-decay", "linear"], "must exceed --warmup 800"),
        (["--steps", "900", "--patience", "9", "--lr-decay", "linear"], "would train past it"),
        (["--steps", "9000", "--patience", "9", "--max-updates", "10"], "is below the last"),
        (["--average", "20", "--keep", "10"], "needs --keep of at least that"),
        (["--resume", "--overwrite"], "pass one"),
        (["--steps", "200", "100"], "--steps must be positive and increasing"),
        (["--beam", "0"], "--beam must be >= 1 and --alpha >= 0, got 0 and 1.5"),
        (["--alpha", "-1"], "got 6 and -1"),
        (["--ffn-dropout", "1"], "must be in [0, 1), got 0.2, 0, 1"),
        (["--attn-dropout", "-0.1"], "must be in [0, 1), got 0.2, -0.1, 0"),
    ],
)
def test_multi30k_benchmark_refuses_bad_flags(flags: list[str], message: str) -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py"), *flags]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert message in res.stderr
    assert "Traceback" not in res.stderr


def test_multi30k_benchmark_rejects_budgets_out_of_order() -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py"), "--minutes", "60", "40"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "--minutes must be positive and increasing" in res.stderr
    assert "Traceback" not in res.stderr


def bench_module(name: str, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import importlib

    return importlib.import_module(name)


def test_multi30k_chooses_the_average_on_valid_and_scores_test_once(monkeypatch, tmp_path) -> None:
    """The averaging is the valid split's best (ties: fewer); test only for it; --no-test none."""
    import argparse

    m30k = bench_module("multi30k", monkeypatch)
    valid_bleu = {1: 20.0, 3: 24.0, 5: 24.0, 10: 22.0}  # 3 and 5 tie: the fewer wins
    calls: list[list[str]] = []

    def fake_aiayn(argv: list[str]) -> int:
        calls.append(argv)
        if argv[0] == "evaluate":
            model, split = argv[argv.index("--checkpoint") + 1], argv[argv.index("--split") + 1]
            n = int(model.rsplit("last", 1)[1].split(".")[0])
            score = valid_bleu[n] if split == "valid" else 99.0
            sig = {"signature": "nrefs:1", "label": "lc"}
            report = {"sacrebleu": {"score": score, **sig}, "lowercase_bleu": {"score": 1, **sig}}
            Path(argv[argv.index("--json") + 1]).write_text(json.dumps(report))
        return 0

    monkeypatch.setattr(m30k, "aiayn", fake_aiayn)
    import aiayn.train

    monkeypatch.setattr(aiayn.train, "list_checkpoints", lambda run: list(range(12)))
    args = argparse.Namespace(average=[1, 3, 5, 10], limit=0, no_test=False, beam=6, alpha=1.5)
    result = m30k._choose_and_test(tmp_path, tmp_path, args, "40min")
    assert result["averaged_checkpoints"] == 3
    decoded = [c for c in calls if c[0] == "evaluate"]
    assert all(c[c.index("--beam") + 1 :][:3] == ["6", "--alpha", "1.5"] for c in decoded)
    assert result["sacrebleu"]["score"] == 99.0  # the test figures, of the chosen model only
    tests = [c for c in calls if c[0] == "evaluate" and "test" in c]
    assert len(tests) == 1
    assert tests[0][tests[0].index("--checkpoint") + 1].endswith("last3.safetensors")
    assert sorted(int(n) for n in result["valid"]) == [1, 3, 5, 10]

    calls.clear()
    args.no_test = True
    result = m30k._choose_and_test(tmp_path, tmp_path, args, "60min")
    assert result["averaged_checkpoints"] == 3
    assert "sacrebleu" not in result
    assert not [c for c in calls if c[0] == "evaluate" and "test" in c]

    # a short run with fewer checkpoints than a candidate averages what it has, once
    monkeypatch.setattr(aiayn.train, "list_checkpoints", lambda run: list(range(4)))
    args.no_test = False
    valid_bleu[4] = 30.0
    result = m30k._choose_and_test(tmp_path, tmp_path, args, "1min")
    assert sorted(int(n) for n in result["valid"]) == [1, 3, 4]
    assert result["averaged_checkpoints"] == 4


def test_multi30k_passes_bf16_and_pre_ln_to_training_only_when_asked(monkeypatch) -> None:
    """--bf16 and --norm-first reach `aiayn train`; without them, the paper's fp32 post-LN."""
    m30k = bench_module("multi30k", monkeypatch)
    plain = m30k._train_flags(m30k._parser().parse_args([]))
    assert "--bf16" not in plain
    assert "--norm-first" not in plain
    asked = m30k._train_flags(m30k._parser().parse_args(["--bf16", "--norm-first"]))
    assert asked[-2:] == ["--norm-first", "--bf16"]


def test_multi30k_passes_attention_and_relu_dropout_only_when_set(monkeypatch) -> None:
    """--attn-dropout and --ffn-dropout (EXTENSIONs) reach `aiayn train` when above 0; at
    their default 0, the paper's dropout on sublayer outputs only, neither is passed."""
    m30k = bench_module("multi30k", monkeypatch)
    plain = m30k._train_flags(m30k._parser().parse_args([]))
    assert "--attn-dropout" not in plain
    assert "--ffn-dropout" not in plain
    both = ["--attn-dropout", "0.1", "--ffn-dropout", "0.05"]
    assert m30k._train_flags(m30k._parser().parse_args(both))[-4:] == both


def test_dead_relu_counts_the_units_that_never_fire_on_valid(explore_model: Path) -> None:
    """benchmarks/dead_relu.py: a unit whose pre-activation is forced negative everywhere is
    dead, one forced positive is alive, exactly, in the layer it was forced in."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import dead_relu

    from aiayn.data.store import load_prepared
    from aiayn.train.configure import read_run_config
    from aiayn.weights import load_model

    run = explore_model.parent
    model, _ = load_model(explore_model)
    valid = load_prepared(read_run_config(run).data).split("valid")
    with torch.no_grad():
        for ffn, dead in ((model.encoder[0].ffn, 5), (model.decoder[1].ffn, 3)):
            ffn.b_1[:dead] = -1e4
            ffn.b_1[dead:] = 1e4
    enc, dec = dead_relu.fired(model, valid, len(valid))
    assert [int((~f).sum()) for f in enc] == [5, int((~enc[1]).sum())]
    assert not enc[0][:5].any()
    assert enc[0][5:].all()
    assert [int((~f).sum()) for f in dec] == [int((~dec[0]).sum()), 3]
    assert not dec[1][:3].any()
    assert dec[1][3:].all()
    assert [f.numel() for f in enc + dec] == [model.config.d_ff] * 4
    # a stride that skips the latest checkpoint still reports it, last
    steps = [c["step"] for c in dead_relu.dead_units(run, 3, 1)["checkpoints"]]
    assert steps == [50, 150]


def test_dead_relu_reports_each_checkpoint_and_refuses_bad_input(explore_model, tmp_path) -> None:
    """Every checkpoint of the run, oldest first, with a count a layer; a directory that is not
    a run and a bad --every are one-line errors with status 2."""
    run = explore_model.parent
    out = tmp_path / "dead.json"
    script = str(ROOT / "benchmarks" / "dead_relu.py")
    res = subprocess.run(
        [sys.executable, script, str(run), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["command"] == "python benchmarks/dead_relu.py run"
    (row,) = report["runs"]
    assert [c["step"] for c in row["checkpoints"]] == [50, 100, 150]
    for c in row["checkpoints"]:
        assert len(c["encoder_dead"]) == len(c["decoder_dead"]) == 2
        assert all(0 <= n <= row["d_ff"] for n in c["encoder_dead"] + c["decoder_dead"])
    every = subprocess.run(
        [sys.executable, script, str(run), "--every", "2", "--pairs", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert every.returncode == 0, every.stderr[-2000:]
    assert [line.split()[1] for line in every.stdout.splitlines()] == [
        "step_00000050:", "step_00000150:",
    ]  # fmt: skip
    bad = subprocess.run([sys.executable, script, str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"dead_relu.py: error: {tmp_path}: no config.json; is this a run directory of aiayn train?"
    )
    zero = [sys.executable, script, str(run), "--every", "0"]
    res = subprocess.run(zero, capture_output=True, text=True)
    assert res.returncode == 2
    assert "--every and --pairs must be at least 1 (given: 0, None)" in res.stderr
