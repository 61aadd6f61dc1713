"""aiayn export: CTranslate2 and ONNX Runtime give aiayn's translations.  Sections 3, 6.1.

A tiny model is trained for a few seconds on the reverse task (its outputs depend on the
positions, so a wrong position table shows); every engine must then give token-identical
greedy and beam outputs over 150 sources, with scores within SCORE_TOL. The deliberately wrong
export (CTranslate2's own sinusoids instead of aiayn's table) must fail the same check.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.cli import main
from aiayn.config import DecodeConfig
from aiayn.data import EOS, Tokenizer, collate, synthetic_pairs
from aiayn.errors import UserError
from aiayn.evaluate import reference_perplexity
from aiayn.kernels import FAST
from aiayn.translator import Translator
from aiayn.weights import save_model

ct2 = pytest.importorskip("ctranslate2")
pytest.importorskip("onnxruntime")

from aiayn.export import check_exportable, load_engine, require  # noqa: E402
from aiayn.export.ct2 import CTranslate2Translator, export_ctranslate2, vocabulary  # noqa: E402
from aiayn.export.ort import OnnxTranslator, export_onnx  # noqa: E402

SCORE_TOL = 1e-4  # |score difference| of identical hypotheses: float32 rounding in two engines
TASK_VOCAB = 24  # the reverse task's ids: 4 .. 23


def train_reverse(steps: int = 200, seed: int = 0, **cfg_kw) -> tuple[Transformer, Tokenizer]:
    """A small Transformer trained briefly on reversing id sequences (section 5, in miniature)."""
    torch.manual_seed(seed)
    tok = Tokenizer.train(["a b c"], vocab_size=260)  # 4 specials and 256 bytes
    base = {"d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 2, "dropout": 0.0}
    model = Transformer(ModelConfig(vocab_size=tok.vocab_size, **{**base, **cfg_kw}), FAST)
    pairs = synthetic_pairs("reverse", 64 * steps, TASK_VOCAB, 1, 10, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    for step in range(steps):
        b = collate(pairs[64 * step : 64 * step + 64])
        loss, _, n = model(b.src, b.tgt_in, target=b.tgt_out, label_smoothing=0.1)
        opt.zero_grad()
        (loss / n).backward()
        opt.step()
    return model.eval(), tok


@pytest.fixture(scope="module")
def trained() -> tuple[Transformer, Tokenizer]:
    return train_reverse()


@pytest.fixture(scope="module")
def sources() -> list[list[int]]:
    """150 sources of 1-14 tokens (longer than any in training, to reach the length limit)."""
    return [list(s) for s, _ in synthetic_pairs("reverse", 150, TASK_VOCAB, 1, 14, seed=7)]


@pytest.fixture(scope="module")
def ct2_dir(tmp_path_factory, trained) -> Path:
    out = tmp_path_factory.mktemp("ct2") / "model"
    export_ctranslate2(*trained, out)
    return out


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory, trained) -> Path:
    out = tmp_path_factory.mktemp("onnx") / "model"
    export_onnx(*trained, out)
    assert not trained[0].training  # the exporter's mode switch does not leak
    return out


def assert_same(reference, other, tol: float = SCORE_TOL) -> None:
    """Every n-best list token-identical, scores and log-probabilities within tol."""
    differ = [i for i, (a, b) in enumerate(zip(reference, other, strict=True)) if
              [h.tokens for h in a] != [h.tokens for h in b]]  # fmt: skip
    assert not differ, (
        f"{len(differ)} of {len(reference)} translations differ, first {differ[0]}: "
        f"{reference[differ[0]]} against {other[differ[0]]}"
    )
    for a, b in zip(reference, other, strict=True):
        for x, y in zip(a, b, strict=True):
            assert abs(x.score - y.score) <= tol
            assert abs(x.logprob - y.logprob) <= tol


def assert_beam_bounded(reference, other, share: float = 0.1) -> None:
    """CTranslate2's beam against aiayn's: identical, or (at most share of them) better.

    aiayn's beam shrinks as hypotheses finish (K - finished slots stay open, as in Nematus);
    CTranslate2's keeps K live ones, a wider search, so its translation can only score higher
    under the same formula. Any difference the other way is a bug.
    """
    differ = [(a[0], b[0]) for a, b in zip(reference, other, strict=True)
              if a[0].tokens != b[0].tokens]  # fmt: skip
    assert len(differ) <= share * len(reference), f"{len(differ)} differ"
    assert all(b.score > a.score - SCORE_TOL for a, b in differ)


DECODES = {
    "greedy": DecodeConfig(beam=1),
    "beam4": DecodeConfig(beam=4, length_penalty="fairseq"),
    "beam4-short": DecodeConfig(beam=4, length_penalty="fairseq", max_len_a=0.5, max_len_b=2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", DECODES)
def test_ctranslate2_equals_aiayn(name, trained, sources, ct2_dir) -> None:
    """Greedy and beam (|Y|^alpha, the penalty both have), the length limit included."""
    cfg = DECODES[name]
    ours = Translator(*trained, cfg).translate_ids(sources)
    theirs = CTranslate2Translator(ct2_dir, trained[1], cfg, 1024).translate_ids(sources)
    assert_same(ours, theirs)
    limit = [int(cfg.max_len_a * (len(s) + 1) + cfg.max_len_b) for s in sources]
    assert all(len(h.tokens) <= n and h.tokens[-1] == EOS for hs, n in
               zip(theirs, limit, strict=True) for h in hs)  # fmt: skip
    if name == "beam4-short":  # the forced EOS at the last position is exercised
        assert sum(len(hs[0].tokens) == n for hs, n in zip(theirs, limit, strict=True)) > 10


@pytest.mark.slow
def test_ctranslate2_beam_asks_for_all_k_hypotheses(trained, sources, ct2_dir, monkeypatch):
    """Every beam search returns its K hypotheses for aiayn's ranking: CTranslate2 ranks one cut
    at the length limit without its EOS, over one token fewer, so its own top pick can be one
    that aiayn (forced EOS) ranks lower (1 of 150 sentences on an AVX-512 machine)."""
    translator = CTranslate2Translator(ct2_dir, trained[1], DECODES["beam4-short"], 1024)
    asked, real = [], translator._translate

    def spy(src, limit, suppress=None, num=None):
        asked.append(num)
        return real(src, limit, suppress, num)

    monkeypatch.setattr(translator, "_translate", spy)
    translator.translate_ids(sources)
    assert asked
    assert set(asked) == {4}


@pytest.mark.slow
def test_ctranslate2_nbest(trained, sources, ct2_dir) -> None:
    """n-best lists: each entry identical or, where it differs, never for the worse.

    aiayn's beam shrinks as hypotheses finish (K - finished slots stay open), CTranslate2's keeps
    K live hypotheses: its best and its 2nd-best can be ones aiayn's smaller beam had dropped,
    so under the same score they are at least as good as aiayn's (the best differed in 1 of 150
    sentences on an AVX2 machine, 0 on another: the wider search, as in the beam4 test).
    """
    cfg = DecodeConfig(beam=4, nbest=2, length_penalty="fairseq", alpha=1.0)
    ours = Translator(*trained, cfg).translate_ids(sources)
    theirs = CTranslate2Translator(ct2_dir, trained[1], cfg, 1024).translate_ids(sources)
    assert_beam_bounded(ours, theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert len(a) == len(b) == 2
        assert a[1].tokens == b[1].tokens or b[1].score >= a[1].score - SCORE_TOL


@pytest.mark.slow
def test_ctranslate2_patience_one_is_never_better(trained, sources, ct2_dir) -> None:
    """CTranslate2's default stopping rule (patience 1: stop at K finished hypotheses).

    aiayn's beam stops only when no live hypothesis can still win, so where the two differ the
    engine's translation scores lower under the same formula: a bounded, explained difference.
    """
    cfg = DECODES["beam4"]
    ours = Translator(*trained, cfg).translate_ids(sources)
    theirs = CTranslate2Translator(ct2_dir, trained[1], cfg, 1024, patience=1.0)
    pairs = list(zip(ours, theirs.translate_ids(sources), strict=True))
    differ = [(a[0], b[0]) for a, b in pairs if a[0].tokens != b[0].tokens]
    assert len(differ) <= 0.05 * len(sources)
    assert all(a.score > b.score for a, b in differ)  # patience 1 stops too early: worse


@pytest.mark.slow
@pytest.mark.parametrize("name", ["greedy", "beam4", "beam4-short"])
def test_onnx_equals_aiayn(name, trained, sources, onnx_dir) -> None:
    cfg = DECODES[name]
    ours = Translator(*trained, cfg).translate_ids(sources)
    theirs = OnnxTranslator(onnx_dir, trained[1], cfg, 1024).translate_ids(sources)
    assert_same(ours, theirs)


@pytest.mark.slow
def test_gnmt_penalty_through_onnx(trained, sources, onnx_dir) -> None:
    """The paper's GNMT penalty: ONNX runs aiayn's own search, so it applies unchanged."""
    cfg = DecodeConfig()  # beam 4, alpha 0.6, GNMT: section 6.1
    ours = Translator(*trained, cfg).translate_ids(sources[:40])
    assert_same(ours, OnnxTranslator(onnx_dir, trained[1], cfg, 1024).translate_ids(sources[:40]))


@pytest.mark.slow
def test_wrong_position_table_is_caught(tmp_path, trained, sources) -> None:
    """CTranslate2's own [sin | cos] sinusoids instead of aiayn's interleaved table (3.5)."""
    export_ctranslate2(*trained, tmp_path / "wrong", engine_positions=True)
    cfg = DECODES["greedy"]
    ours = Translator(*trained, cfg).translate_ids(sources)
    theirs = CTranslate2Translator(tmp_path / "wrong", trained[1], cfg, 1024).translate_ids(sources)
    with pytest.raises(AssertionError, match="translations differ"):
        assert_same(ours, theirs)
    same = sum(a[0].tokens == b[0].tokens for a, b in zip(ours, theirs, strict=True))
    assert same < len(sources) // 2  # not a near miss: most translations change


@pytest.mark.slow
def test_perplexity_of_each_engine(trained, sources, ct2_dir, onnx_dir) -> None:
    """Teacher-forced scores: the reference perplexity agrees across engines (Table 3)."""
    pairs = [(s, s[::-1]) for s in sources]
    ppl = reference_perplexity(trained[0], pairs)
    for engine in (
        CTranslate2Translator(ct2_dir, trained[1], DecodeConfig(beam=1), 1024),
        OnnxTranslator(onnx_dir, trained[1], DecodeConfig(), 1024),
    ):
        other = engine.perplexity(pairs)
        assert other.tokens == ppl.tokens
        assert abs(other.nll - ppl.nll) <= 1e-5 * ppl.tokens


VARIANTS = {
    "pre-LN": {"norm_first": True},
    "attention biases": {"attn_bias": True},
    "learned positions": {"positions": "learned", "max_positions": 40},
    "sinusoidal-concat": {"positions": "sinusoidal-concat"},
    "d_k = d_v != d_model / h": {"d_k_override": 16, "d_v_override": 16},
    "fewer decoder layers": {"n_dec_layers": 1},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", VARIANTS)
def test_variants_export(tmp_path, name, sources) -> None:
    """Every option both engines represent, trained briefly so that its weights matter."""
    model, tok = train_reverse(steps=40, **VARIANTS[name])
    export_ctranslate2(model, tok, tmp_path / "ct2")
    export_onnx(model, tok, tmp_path / "onnx")
    for beam in (1, 4):
        cfg = DecodeConfig(beam=beam, length_penalty="fairseq", max_len_b=3)
        ours = Translator(model, tok, cfg).translate_ids(sources[:40])
        onnx = load_engine(tmp_path / "onnx", cfg, engine="onnx").translate_ids(sources[:40])
        assert_same(ours, onnx)  # aiayn's own search over the ONNX graphs
        ct2 = load_engine(tmp_path / "ct2", cfg, engine="ctranslate2").translate_ids(sources[:40])
        if beam == 1:
            assert_same(ours, ct2)
        else:  # a barely trained model has near ties: the two beams may part (see above)
            assert_beam_bounded(ours, ct2)


def test_position_table_is_exported_row_by_position(tmp_path) -> None:
    """The CTranslate2 table holds aiayn's PE row p for position p (3.5), not the engine's."""
    from aiayn.export.ct2 import build_spec
    from aiayn.model import sinusoidal_positions

    tok = Tokenizer.train(["a b c"], vocab_size=260)
    model = Transformer(ModelConfig(vocab_size=260, d_model=16, n_heads=2, d_ff=32, n_layers=1))
    spec = build_spec(model, tok, max_positions=50)
    table = torch.as_tensor(spec.encoder.position_encodings.encodings)
    assert table.shape == (50, 16)
    assert torch.allclose(table, sinusoidal_positions(50, 16), atol=1e-6)
    assert table[1, 1] == pytest.approx(0.540302, abs=1e-6)  # cos(1): PE(1, 1), interleaved
    assert spec.decoder.projection.weight is not None
    assert vocabulary(tok)[:4] == ["<blank>", "<s>", "</s>", "<unk>"]


def test_unexportable_settings_are_refused_in_one_line() -> None:
    cfg = ModelConfig(vocab_size=260, d_model=32, n_heads=4, d_k_override=8, d_v_override=16)
    with pytest.raises(UserError, match=r"d_v=16 != d_k=8") as e:
        check_exportable(cfg, "ctranslate2")
    assert "\n" not in str(e.value)
    check_exportable(cfg, "onnx")  # aiayn's own layers run in the ONNX graphs
    with pytest.raises(UserError, match="unknown format"):
        check_exportable(cfg, "tflite")


def test_gnmt_penalty_is_refused_by_ctranslate2(ct2_dir, trained) -> None:
    with pytest.raises(UserError, match="--length-penalty fairseq"):
        CTranslate2Translator(ct2_dir, trained[1], DecodeConfig(beam=4), 1024)
    CTranslate2Translator(ct2_dir, trained[1], DecodeConfig(beam=1), 1024)  # greedy: no penalty


def test_missing_engine_names_the_install_command(monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def no_ctranslate2(name, *args, **kw):
        if name == "ctranslate2":
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_ctranslate2)
    monkeypatch.delitem(sys.modules, "ctranslate2")
    with pytest.raises(UserError, match=r"pip install 'aiayn\[serve\]'"):
        require("ctranslate2")


def test_core_imports_no_engine() -> None:
    """The engines are optional: importing aiayn and its CLI loads neither."""
    code = (
        "import sys, aiayn, aiayn.cli, aiayn.export, aiayn.translator, aiayn.decode\n"
        "aiayn.cli.build_parser()\n"
        "bad = [m for m in ('ctranslate2', 'onnxruntime', 'onnx') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


TEXTS = ["a dog runs on the grass .", "ein Hund rennt auf dem Gras ."] * 3


@pytest.fixture(scope="module")
def text_checkpoint(tmp_path_factory) -> Path:
    """A random-weight checkpoint with its tokenizer (EOS made likely: short outputs)."""
    tok = Tokenizer.train(TEXTS, vocab_size=300)
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    model = Transformer(cfg).eval()
    with torch.no_grad():
        model.embedding[EOS] *= 4.0
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    save_model(path, model, metadata={"tokenizer": tok.to_str()})
    return path


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["ctranslate2", "onnx"])
def test_cli_export_translate_evaluate(tmp_path, text_checkpoint, fmt, capsys) -> None:
    """aiayn export, then translate and evaluate --engine: the same lines as aiayn's decoder."""
    out = tmp_path / fmt
    assert main(["export", "--checkpoint", str(text_checkpoint), "--format", fmt,
                 "--out", str(out)]) == 0  # fmt: skip
    assert {"aiayn_export.json", "tokenizer.json"} <= {p.name for p in out.iterdir()}
    lines = ["a dog runs .", "", "ein Hund rennt auf dem Gras .", "zwei"]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    flags = ["--max-len-b", "5", "--length-penalty", "fairseq", "--beam", "1"]
    ours, theirs = tmp_path / "torch.txt", tmp_path / "engine.txt"
    assert main(["translate", "--checkpoint", str(text_checkpoint), "--input", str(src),
                 "--output", str(ours), *flags]) == 0  # fmt: skip
    assert main(["translate", "--engine", fmt, "--checkpoint", str(out), "--input", str(src),
                 "--output", str(theirs), *flags]) == 0  # fmt: skip
    assert theirs.read_text(encoding="utf-8") == ours.read_text(encoding="utf-8")
    report = tmp_path / "report.json"
    assert main(["evaluate", "--engine", fmt, "--checkpoint", str(out), "--src", str(src),
                 "--ref", str(src), "--json", str(report), *flags[:4]]) == 0  # fmt: skip
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["engine"] == fmt
    assert data["perplexity"]["tokens"] > 0
    capsys.readouterr()
    # An existing export is kept unless --force; the wrong engine for a directory is named.
    assert main(["export", "--checkpoint", str(text_checkpoint), "--format", fmt,
                 "--out", str(out)]) == 2  # fmt: skip
    assert "--force" in capsys.readouterr().err
    other = "onnx" if fmt == "ctranslate2" else "ctranslate2"
    assert main(["translate", "--engine", other, "--checkpoint", str(out),
                 "--input", str(src)]) == 2  # fmt: skip
    assert f"--engine {fmt}" in capsys.readouterr().err
    assert main(["translate", "--engine", fmt, "--checkpoint", str(out), "--no-cache"]) == 2
    assert "--no-cache" in capsys.readouterr().err


def test_cli_refuses_bad_exports(tmp_path, capsys) -> None:
    tok = Tokenizer.train(TEXTS, vocab_size=300)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=1,
                      d_k_override=8, d_v_override=16)  # fmt: skip
    path = tmp_path / "model.safetensors"
    save_model(path, Transformer(cfg), metadata={"tokenizer": tok.to_str()})
    argv = ["export", "--checkpoint", str(path), "--out", str(tmp_path / "x")]
    assert main([*argv, "--format", "ctranslate2"]) == 2
    err = capsys.readouterr().err
    assert "d_v=16 != d_k=8" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()  # nothing written
    assert main([*argv, "--format", "ctranslate2", "--quantization", "int3"]) == 2
    assert "--quantization" in capsys.readouterr().err
    assert main(["translate", "--engine", "onnx", "--checkpoint", str(tmp_path)]) == 2
    assert "not an aiayn export directory" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_benchmark_quick(tmp_path) -> None:
    """benchmarks/serve_speed.py runs every engine (behaviour only: no speed is asserted)."""
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "serve.json"
    cmd = [sys.executable, str(root / "benchmarks" / "serve_speed.py"), "--quick", "--threads",
           "1", "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text(encoding="utf-8"))["sets"]["quick"]
    assert set(report["sentences_per_second"]) == {
        "aiayn cached", "ctranslate2 float32", "ctranslate2 int8", "onnxruntime",
        "ct2 float32 native", "ct2 int8 native",
    }  # fmt: skip
    assert all(v > 0 for v in report["sentences_per_second"].values())
    assert json.loads(out.read_text(encoding="utf-8"))["machine"]["matmul_peak_gflops"] > 0
