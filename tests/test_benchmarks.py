"""The benchmark runs end to end in --quick mode (behaviour only: no speed is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_benchmark_runs_and_reports_every_section(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--threads", "1"]
    res = subprocess.run([*cmd, "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["matmul_peak_gflops"] > 0
    tiny = report["training"]["tiny"]
    for impl in ("aiayn", "nn.Transformer", "textbook"):
        assert tiny[impl]["tgt_tokens_per_s"] > 0
        assert 0 < tiny[impl]["mfu"] < 1.5  # a fraction of the measured peak
        assert report["memory"]["tiny"][impl]["peak_rss_mib"] > 0
    assert set(report["decoding"]) >= {"greedy cached", "beam 4 cached", "textbook greedy"}
    assert "aiayn/x" in res.stdout  # the table was printed


def test_flop_count_matches_a_hand_count() -> None:
    """2 m k n per matmul; the output layer and attention included; training = 3 x forward."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from flops import forward_flops, training_flops

    from aiayn import ModelConfig

    cfg = ModelConfig(vocab_size=10, d_model=4, n_heads=2, d_ff=8, n_layers=1)
    B, S, T, D, F, V = 1, 3, 2, 4, 8, 10
    attn = lambda lq, lk: 2 * lq * D * D + 2 * lk * D * 2 * D + 2 * lq * D * D + 2 * 2 * lq * lk * D  # noqa: E731
    enc = attn(S, S) + 2 * 2 * S * D * F
    dec = attn(T, T) + attn(T, S) + 2 * 2 * T * D * F
    assert forward_flops(B, S, T, cfg) == enc + dec + 2 * T * D * V
    assert training_flops(B, S, T, cfg) == 3 * forward_flops(B, S, T, cfg)
    # The output layer counts only the target tokens that reach the loss (not padding).
    assert forward_flops(B, S, T, cfg, n_out=1) == enc + dec + 2 * 1 * D * V


SHARED_M30K = ROOT.parent / "shared" / "data" / "multi30k"


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_M30K.is_dir(), reason="no local Multi30k copy beside the repo")
def test_multi30k_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    """The whole benchmark on a budget of seconds: prepare, train, average, evaluate, report."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py")]
    cmd += ["--multi30k-dir", str(SHARED_M30K), "--run", str(tmp_path / "m30k")]
    cmd += ["--minutes", "0.05", "0.1", "--test-limit", "5", "--threads", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((tmp_path / "m30k" / "multi30k.json").read_text())
    assert summary["sacrebleu"]["signature"].startswith("nrefs:1")
    assert res.stdout.count("Multi30k test2016: sacreBLEU") == 2  # at each budget of one run
    first, second = summary["budgets"]
    assert first["budget_minutes"] == 0.05
    assert second["budget_minutes"] == 0.1
    assert 0 < first["steps"] <= second["steps"]  # the second budget resumed the first
    assert first["training_minutes"] < second["training_minutes"]
    assert "resumed from" in res.stderr + res.stdout
    # the run directory is never replaced unasked
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2
    assert "exists; pass --overwrite" in again.stderr
    assert (tmp_path / "m30k" / "multi30k.json").is_file()


def test_multi30k_benchmark_rejects_budgets_out_of_order() -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "multi30k.py"), "--minutes", "60", "40"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "--minutes must be positive and increasing" in res.stderr
    assert "Traceback" not in res.stderr


def test_all_three_models_step_with_aiayn_optimizer(monkeypatch) -> None:
    """Same optimizer for every competitor: aiayn's make_optimizer (fused Adam on the CPU)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import run as bench
    import torch

    made = []
    real = bench.make_optimizer

    def spy(params, cfg):
        opt = real(params, cfg)
        made.append(opt)
        return opt

    monkeypatch.setattr(bench, "make_optimizer", spy)
    for impl in bench.IMPLS:
        bench.make_step(impl, "tiny", torch.device("cpu"), bf16=False)
    assert len(made) == 3
    for opt in made:
        assert opt.defaults["fused"] is True
        assert opt.defaults["betas"] == (0.9, 0.98)
        assert opt.defaults["eps"] == 1e-9


def test_unknown_preset_is_refused_with_its_name() -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--presets", "huge"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "huge" in res.stderr
