"""benchmarks/demo_trials.py scores a run that exists (the demo's) on validation, not test.

Behaviour only: a tiny run of two checkpoints (tests/bad_inputs.py's world) is averaged and
scored; a few steps of training show what --shape trains; nothing is timed.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import build_world

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_trained_run_is_scored_on_validation_and_test_only_on_request(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    results = tmp_path / "trials.jsonl"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "demo_trials.py"), "--name", "shipped"]
    cmd += ["--run", world["run"], "--data", world["data"], "--average", "2"]
    cmd += ["--results", str(results)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "valid sacreBLEU" in res.stdout
    assert "trained before" in res.stdout
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert record["training_wall_minutes"] is None  # scored, not trained
    assert record["valid"]["sacrebleu"]["signature"].startswith("nrefs:1")
    assert "test" not in record  # the test split only with --test
    assert (Path(world["run"]) / "valid.json").is_file()
    assert not (Path(world["run"]) / "test.json").exists()
    # --test scores the test split too, and the record is appended, not rewritten
    res = subprocess.run([*cmd, "--test"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(records) == 2
    assert "test" in records[1]


@pytest.mark.slow
def test_shape_trains_that_model_and_records_its_flags(tmp_path: Path) -> None:
    """--shape small trains benchmarks/multi30k.py's `small` (d_model 128, 4 + 4 layers);
    --norm-first makes it pre-LN."""
    world = build_world(tmp_path / "world")
    results, run = tmp_path / "trials.jsonl", tmp_path / "small"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "demo_trials.py"), "--name", "small"]
    cmd += ["--run", str(run), "--data", world["data"], "--shape", "small", "--steps", "200"]
    cmd += ["--average", "2", "--warmup", "50", "--results", str(results), "--norm-first"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    flags = record["train_flags"]
    assert flags[flags.index("--d-model") + 1] == "128"
    assert flags[flags.index("--n-layers") + 1] == "4"
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["model"]["d_model"] == 128
    assert config["model"]["n_layers"] == 4
    assert config["model"]["norm_first"] is True  # --norm-first: pre-LN
    assert "--norm-first" in flags
    assert record["training_wall_minutes"] is not None  # trained, not only scored
    bad = subprocess.run([*cmd, "--shape", "huge"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "invalid choice: 'huge'" in bad.stderr
