"""The benchmark runs end to end in --quick mode (behaviour only: no speed is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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


def test_flop_count_matches_a_hand_count() -> None:
    """2 m k n per matmul; the output layer and attention included; training = 3 x forward."""
    from aiayn import ModelConfig
    from aiayn.flops import forward_flops, training_flops

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


def test_every_competitor_steps_with_aiayn_optimizer(monkeypatch) -> None:
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
    assert len(made) == len(bench.IMPLS) == 5
    for opt in made:
        assert opt.defaults["fused"] is True
        assert opt.defaults["betas"] == (0.9, 0.98)
        assert opt.defaults["eps"] == 1e-9


def test_unknown_preset_is_refused_with_its_name() -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--presets", "huge"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "huge" in res.stderr


# The competitors do equal work (#15 item 8) ---------------------------------------------------


def bench_module(name: str, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import importlib

    return importlib.import_module(name)


def small_cfg(**overrides):
    from aiayn import ModelConfig

    base = {"vocab_size": 20, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
    return ModelConfig(**{**base, **overrides})


def test_nn_transformer_drops_out_only_where_aiayn_does_unless_written_as_users_do(
    monkeypatch,
) -> None:
    """Equal work: no dropout on attention probabilities or after the ReLU (aiayn has none)."""
    import torch

    baselines = bench_module("baselines", monkeypatch)
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


def test_textbook_model_drops_out_only_where_aiayn_does(monkeypatch) -> None:
    baselines = bench_module("baselines", monkeypatch)
    model = baselines.TextbookTransformer(small_cfg(dropout=0.3)).train()
    kinds = {type(m.dropout).__name__ for m in model.modules() if hasattr(m, "w_q")}
    assert kinds == {"Identity"}  # attention probabilities
    ffn = [m for m in model.modules() if isinstance(m, baselines.TextbookFFN)]
    assert {type(m.dropout).__name__ for m in ffn} == {"Identity"}  # after the ReLU
    assert model.dropout.p == 0.3  # embeddings
    assert all(layer.dropout.p == 0.3 for layer in model.encoder)  # residual


def test_textbook_greedy_stops_at_eos_and_at_aiayn_maximum_length(monkeypatch) -> None:
    import torch

    from aiayn.data import BOS, EOS, PAD
    from aiayn.decode import max_lengths

    baselines = bench_module("baselines", monkeypatch)
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


def test_aiayn_decoding_runs_agree_cached_and_uncached(monkeypatch) -> None:
    """Moved from aiayn.decode: the decoding competitors, cached == uncached."""
    import torch

    from aiayn import Transformer
    from aiayn.data import collate

    decoding = bench_module("decoding", monkeypatch)
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


def test_plain_competitor_is_the_model_with_the_kernels_off(monkeypatch) -> None:
    import torch

    bench = bench_module("run", monkeypatch)
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
    cmd = [sys.executable, str(ROOT / "benchmarks" / "decode_speed.py"), "--data", str(tmp_path)]
    cmd += ["--n", "3", "--vocab", "280", "--rounds", "1", "--modes", modes, "--threads", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout)
    assert set(report["sentences_per_second_best"]) == set(modes.split(","))
    assert len(set(report["mean_output_tokens"].values())) == 1  # the same weights, same output
    bad = subprocess.run([*cmd[:-4], "--modes", "cached,fast"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "fast" in bad.stderr


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


def test_compile_benchmark_times_each_variant_in_two_passes(tmp_path: Path) -> None:
    """benchmarks/compile_cpu.py --quick (eager variants: compiling takes minutes) writes each
    variant's milliseconds a step in both passes, relative to eager FAST, and the machine."""
    out = tmp_path / "compile.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "compile_cpu.py"), "--quick"]
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
    assert report["command"] == "python benchmarks/compile_cpu.py --quick"
    bad = subprocess.run([*cmd[:2], "--steps", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "--steps, --warmup and --threads must be at least 1 (given: --steps 0," in bad.stderr
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
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bf16_cpu.py"), "--quick", "--json", str(out)]
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
    assert report["command"] == "python benchmarks/bf16_cpu.py --quick"
    bad = subprocess.run([*cmd[:2], "--warmup", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "(given: --steps 100, --warmup 0, --threads 2)" in bad.stderr


def test_the_committed_bf16_results_say_what_docs_quote() -> None:
    """docs/performance.md quotes benchmarks/results/bf16-cpu.json's step times and speeds."""
    report = json.loads((ROOT / "benchmarks" / "results" / "bf16-cpu.json").read_text())
    doc = " ".join((ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split())
    assert report["machine"]["bf16_native"] is True
    for row in report["shapes"].values():
        assert f"x{row['bf16_speed_vs_float32']:.2f}" in doc
        for v in ("float32", "bf16"):
            assert f"{row[v]['ms_per_step']:.1f} ms" in doc


def test_the_committed_compile_results_say_what_docs_quote() -> None:
    """docs/performance.md quotes benchmarks/results/compile-cpu.json's speeds."""
    report = json.loads((ROOT / "benchmarks" / "results" / "compile-cpu.json").read_text())
    doc = " ".join((ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split())
    for variant in ("eager-plain", "compiled-plain", "compiled-fast"):
        row = report["variants"][variant]
        assert f"{row['speed_vs_eager_fast_second_pass']:.2f}" in doc, variant
        assert f"{row['speed_vs_eager_fast_first_pass']:.2f}" in doc, variant


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
