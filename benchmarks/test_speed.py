"""The speed benchmarks' own checks: each runs end to end in --quick mode and the competitors do
equal work (behaviour only: no speed is asserted). They live beside the benchmarks, which
tests/ never imports; pytest runs them with the suite (pyproject's testpaths).
"""

import json
import subprocess
import sys
from pathlib import Path

import baselines
import decoding
import harness
import pytest
import run as bench
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@pytest.mark.slow
def test_quick_benchmark_runs_and_reports_every_section(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(HERE / "run.py"), "--quick", "--threads", "1"]
    res = subprocess.run([*cmd, "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["machine"]["matmul_peak_gflops"] > 0
    assert report["machine"]["threads"] == 1
    assert report["command"] == "python benchmarks/run.py --quick --threads 1 --json bench.json"
    tiny = report["training"]["tiny"]
    competitors = [
        "aiayn",
        "aiayn --kernels plain",
        "nn.Transformer",
        "nn.Transformer, as users write it",
        "textbook",
    ]
    assert list(report["competitors"]) == competitors
    for impl in competitors:
        assert tiny[impl]["tgt_tokens_per_s"] > 0
        assert 0 < tiny[impl]["mfu"] < 1.5  # a fraction of the measured peak
        assert report["memory"]["tiny"][impl]["peak_rss_mib"] > 0
        assert impl in res.stdout  # a row of the printed table
    assert report["plain_kernels_switch"] == "Transformer(cfg, ops=PLAIN)"
    methods = {"greedy cached", "greedy uncached", "beam 4 cached", "textbook greedy"}
    assert set(report["decoding"]) >= methods
    # Every method decodes under the same rule: at most |X| <= 31 tokens, EOS included.
    for name in methods:
        assert 1 <= report["decoding_output_tokens"][name] <= 31
    assert "aiayn/x" in res.stdout  # the table was printed


def test_every_competitor_steps_with_aiayn_optimizer(monkeypatch) -> None:
    """Same optimizer for every competitor: aiayn's make_optimizer (fused Adam on the CPU)."""

    made = []
    real = bench.make_optimizer

    def spy(params, cfg):
        opt = real(params, cfg)
        made.append(opt)
        return opt

    monkeypatch.setattr(bench, "make_optimizer", spy)
    for impl in bench.IMPLS:
        bench.make_step(impl, "tiny", torch.device("cpu"), bf16=False)
    assert len(made) == len(bench.IMPLS) == 5
    for opt in made:
        assert opt.defaults["fused"] is True
        assert opt.defaults["betas"] == (0.9, 0.98)
        assert opt.defaults["eps"] == 1e-9


def test_unknown_preset_is_refused_with_its_name() -> None:
    cmd = [sys.executable, str(HERE / "run.py"), "--presets", "huge"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "huge" in res.stderr


# The competitors do equal work (#15 item 8) ---------------------------------------------------


def small_cfg(**overrides):
    from aiayn import ModelConfig

    base = {"vocab_size": 20, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
    return ModelConfig(**{**base, **overrides})


def test_nn_transformer_drops_out_only_where_aiayn_does_unless_written_as_users_do() -> None:
    """Equal work: no dropout on attention probabilities or after the ReLU (aiayn has none)."""

    cfg = small_cfg(dropout=0.3)
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])
    tgt = torch.tensor([[1, 5, 6], [1, 8, 0]])

    def residual_dropout_off(model):
        """Switch off the residual and embedding dropout, leaving only the other two places."""
        model.cfg = small_cfg(dropout=0.0)
        for layer in [*model.core.encoder.layers, *model.core.decoder.layers]:
            for name in ("dropout1", "dropout2", "dropout3"):
                if hasattr(layer, name):
                    setattr(layer, name, torch.nn.Identity())
        return model

    torch.manual_seed(0)
    equal = residual_dropout_off(baselines.TorchTransformerBaseline(cfg))
    torch.manual_seed(0)
    as_written = residual_dropout_off(baselines.TorchTransformerBaseline(cfg, True))
    with torch.no_grad():
        reference = equal.eval()(src, tgt)
        train_equal = equal.train()(src, tgt)
        train_written = as_written.train()(src, tgt)
    torch.testing.assert_close(train_equal, reference)  # nothing random is left
    assert not torch.allclose(train_written, reference)  # attention / ReLU dropout is on
    # The residual dropout stays in the equal-work model (5.4).
    fresh = baselines.TorchTransformerBaseline(cfg)
    layer = fresh.core.decoder.layers[0]
    assert [layer.dropout1.p, layer.dropout2.p, layer.dropout3.p] == [0.3, 0.3, 0.3]
    assert layer.self_attn.dropout == layer.multihead_attn.dropout == 0.0
    assert isinstance(layer.dropout, torch.nn.Identity)


def test_textbook_model_drops_out_only_where_aiayn_does() -> None:
    model = baselines.TextbookTransformer(small_cfg(dropout=0.3)).train()
    kinds = {type(m.dropout).__name__ for m in model.modules() if hasattr(m, "w_q")}
    assert kinds == {"Identity"}  # attention probabilities
    ffn = [m for m in model.modules() if isinstance(m, baselines.TextbookFFN)]
    assert {type(m.dropout).__name__ for m in ffn} == {"Identity"}  # after the ReLU
    assert model.dropout.p == 0.3  # embeddings
    assert all(layer.dropout.p == 0.3 for layer in model.encoder)  # residual


def test_textbook_greedy_stops_at_eos_and_at_aiayn_maximum_length(monkeypatch) -> None:

    from aiayn.data import BOS, EOS, PAD
    from aiayn.decode import max_lengths

    torch.manual_seed(0)
    model = baselines.TextbookTransformer(small_cfg(dropout=0.0)).eval()
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 2, 0, 0, 0], [5, 6, 2, 0, 0]])  # |X| = 5, 2, 3
    limit = max_lengths(src, 1.0, 0)  # (3,): 5, 2, 3
    calls = []
    real_decode = model.decode
    monkeypatch.setattr(model, "decode", lambda *a: calls.append(1) or real_decode(*a))
    out = model.greedy(src, limit, BOS, EOS)
    lengths = (out != PAD).sum(dim=1)  # (3,): EOS included
    assert (lengths <= limit).all()
    for row, n in zip(out.tolist(), lengths.tolist(), strict=True):
        assert row[n - 1] == EOS  # every sentence ends with exactly one EOS
        assert EOS not in row[: n - 1]
    assert len(calls) == int(lengths.max())  # no step after the last sentence ended

    # A model that always says EOS first stops after one step, whatever the limit.
    calls.clear()
    with torch.no_grad():
        model.generator.bias.fill_(0.0)
        model.generator.bias[EOS] = 1e4
    out = model.greedy(src, torch.tensor([50, 50, 50]), BOS, EOS)
    assert out.tolist() == [[EOS], [EOS], [EOS]]
    assert len(calls) == 1


def test_aiayn_decoding_runs_agree_cached_and_uncached() -> None:
    """Moved from aiayn.decode: the decoding competitors, cached == uncached."""

    from aiayn import Transformer
    from aiayn.data import collate

    torch.manual_seed(4)
    model = Transformer(small_cfg(dropout=0.0, vocab_size=24)).eval()
    src = collate([([5, 6, 7, 8, 9], []), ([10, 11], []), ([19], [])]).src  # (B, S)
    runs = decoding.aiayn_runs(model, src)
    assert sorted(runs) == ["beam 4 cached", "beam 4 uncached", "greedy cached", "greedy uncached"]
    out = {name: fn() for name, fn in runs.items()}
    tokens = {name: [[h.tokens for h in hs] for hs in hyps] for name, hyps in out.items()}
    assert tokens["greedy cached"] == tokens["greedy uncached"]
    assert tokens["beam 4 cached"] == tokens["beam 4 uncached"]
    limits = [6, 3, 2]  # |X| with EOS
    for hyps in out.values():
        assert [len(hs[0].tokens) <= n for hs, n in zip(hyps, limits, strict=True)] == [True] * 3


def test_plain_competitor_is_the_model_with_the_kernels_off() -> None:

    model, _ = bench.build(bench.PLAIN, "tiny", torch.device("cpu"))
    from aiayn.kernels import FAST
    from aiayn.model import PLAIN

    assert model.ops is PLAIN
    fast, _ = bench.build("aiayn", "tiny", torch.device("cpu"))
    assert fast.ops is FAST


@pytest.mark.slow  # a subprocess that learns a BPE and decodes in four modes
def test_decode_speed_runs_plain_kernels_beside_fast(tmp_path: Path) -> None:
    """decode_speed.py on a tiny corpus of its own: every mode runs and reports, same lengths."""
    words = ["a dog", "the cat runs", "two men sit", "a red ball", "she reads a book"]
    for name in ("train.en", "train.de", "test_2016_flickr.en"):
        (tmp_path / name).write_text("\n".join(words * 4) + "\n", encoding="utf-8")
    modes = "cached,uncached,cached-plain,uncached-plain"
    cmd = [sys.executable, str(HERE / "decode_speed.py"), "--data", str(tmp_path)]
    cmd += ["--n", "3", "--vocab", "280", "--rounds", "1", "--modes", modes, "--threads", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout)
    assert set(report["sentences_per_second_best"]) == set(modes.split(","))
    assert len(set(report["mean_output_tokens"].values())) == 1  # the same weights, same output
    bad = subprocess.run([*cmd[:-4], "--modes", "cached,fast"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "fast" in bad.stderr


def test_compile_benchmark_times_each_variant_in_two_passes(tmp_path: Path) -> None:
    """benchmarks/compile_cpu.py --quick (eager variants: compiling takes minutes) writes each
    variant's milliseconds a step in both passes, relative to eager FAST, and the machine."""
    out = tmp_path / "compile.json"
    cmd = [sys.executable, str(HERE / "compile_cpu.py"), "--quick"]
    cmd += ["--variants", "eager-fast", "eager-plain", "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert list(report["variants"]) == ["eager-fast", "eager-plain"]
    for row in report["variants"].values():
        assert row["ms_per_step_first_pass"] > 0
        assert row["ms_per_step_second_pass"] > 0
    assert report["variants"]["eager-fast"]["speed_vs_eager_fast_second_pass"] == 1.0
    assert report["machine"]["threads"] == 2
    assert report["command"] == (
        "python benchmarks/compile_cpu.py --quick --variants eager-fast eager-plain "
        "--json compile.json"
    )
    bad = subprocess.run([*cmd[:2], "--steps", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "argument --steps: must be an integer >= 1, got '0'" in bad.stderr
    bad = subprocess.run(
        [*cmd[:2], "--data", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2
    assert "not a prepared corpus" in bad.stderr


def test_bf16_benchmark_times_both_variants_of_each_shape(tmp_path: Path) -> None:
    """benchmarks/bf16_cpu.py --quick writes, for each Multi30k shape, the milliseconds a step
    in float32 and under bf16 autocast, bf16's speed relative to float32, and whether the CPU
    runs bf16 natively; bad counts are one-line errors."""
    out = tmp_path / "bf16.json"
    cmd = [sys.executable, str(HERE / "bf16_cpu.py"), "--quick", "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert list(report["shapes"]) == ["small", "mid"]
    for row in report["shapes"].values():
        assert row["float32"]["ms_per_step"] > 0
        assert row["bf16"]["ms_per_step"] > 0
        ratio = row["float32"]["ms_per_step"] / row["bf16"]["ms_per_step"]
        assert row["bf16_speed_vs_float32"] == pytest.approx(ratio, rel=0.02)
    assert isinstance(report["machine"]["bf16_native"], bool)
    assert report["command"] == "python benchmarks/bf16_cpu.py --quick --json bf16.json"
    bad = subprocess.run([*cmd[:2], "--warmup", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "argument --warmup: must be an integer >= 1, got '0'" in bad.stderr


def test_the_committed_bf16_results_say_what_docs_quote() -> None:
    """docs/performance.md quotes benchmarks/results/bf16-cpu.json's step times and speeds."""
    report = json.loads((HERE / "results" / "bf16-cpu.json").read_text())
    doc = " ".join((ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split())
    assert report["machine"]["bf16_native"] is True
    for row in report["shapes"].values():
        assert f"x{row['bf16_speed_vs_float32']:.2f}" in doc
        for v in ("float32", "bf16"):
            assert f"{row[v]['ms_per_step']:.1f} ms" in doc


def test_the_committed_compile_results_say_what_docs_quote() -> None:
    """docs/performance.md quotes benchmarks/results/compile-cpu.json's speeds."""
    report = json.loads((HERE / "results" / "compile-cpu.json").read_text())
    doc = " ".join((ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split())
    for variant in ("eager-plain", "compiled-plain", "compiled-fast"):
        row = report["variants"][variant]
        assert f"{row['speed_vs_eager_fast_second_pass']:.2f}" in doc, variant
        assert f"{row['speed_vs_eager_fast_first_pass']:.2f}" in doc, variant


# The shared harness ------------------------------------------------------------------------


def test_a_report_names_paths_inside_the_project_relative_and_others_by_name_only() -> None:
    """No path of the machine that ran a benchmark is recorded (the docs quote commands)."""
    inside = str(ROOT / "runs" / "demo")
    assert harness.shown(inside) == "runs/demo"
    assert harness.shown(f"--checkpoint={inside}") == "--checkpoint=runs/demo"
    assert harness.shown("/somewhere/else/multi30k") == "multi30k"
    assert harness.shown("--quick") == "--quick"
    assert harness.shown("relative/path") == "relative/path"


def test_every_benchmark_takes_the_shared_threads_quick_and_json() -> None:
    """--threads is checked by the shared parser: 0 is one line naming the flag."""
    ap = harness.parser("A benchmark.\n\nMore.", threads=3)
    args = ap.parse_args([])
    assert (args.threads, args.quick, args.json) == (3, False, None)
    assert ap.description == "A benchmark."
    with pytest.raises(SystemExit):
        ap.parse_args(["--threads", "0"])


def test_provenance_names_the_machine_the_commit_and_the_command() -> None:
    block = harness.provenance(1, argv=["--quick"])
    machine = block["machine"]
    assert set(machine) >= {"processor", "threads", "matmul_peak_gflops", "torch", "cpu_count"}
    assert machine["threads"] == 1
    assert machine["matmul_peak_gflops"] > 0
    assert block["command"].endswith(" --quick")
    assert block["commit"] is None or len(block["commit"].split("+")[0]) >= 7
