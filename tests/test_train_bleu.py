"""Validation BLEU (section 6.1): the caller passes the scorer in; training imports no decoder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from aiayn.config import TrainConfig, model_preset
from aiayn.data import InMemorySplit, Tokenizer, synthetic_pairs
from aiayn.evaluate import greedy_bleu
from aiayn.model import Transformer
from aiayn.train import TrainData, read_metrics, train
from aiayn.train.bleu import VALID_BLEU_SENTENCES, valid_bleu
from aiayn.train.distributed import World
from tests.zh_support import prepare_en_zh

ROOT = Path(__file__).resolve().parents[1]
V = 12


class FakeTokenizer:
    def to_str(self) -> str:
        return '{"fake": "tokenizer"}'


def data_with_texts(n_valid_texts: int = 3) -> TrainData:
    train_split = InMemorySplit(synthetic_pairs("copy", 100, V, 1, 5, 0))
    valid = InMemorySplit(synthetic_pairs("copy", 20, V, 1, 5, 1))
    texts = (
        [f"source {i}" for i in range(n_valid_texts)],
        [f"ref {i}" for i in range(n_valid_texts)],
    )
    return TrainData(train_split, valid, tokenizer=FakeTokenizer(), valid_texts=texts)


def quick(**overrides) -> TrainConfig:
    base = {"max_steps": 2, "warmup": 10, "max_tokens": 120, "valid_every": 1}
    return TrainConfig(**{**base, "save_every_minutes": 0.0, **overrides})


def small_model():
    return model_preset("tiny", vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_layers=1)


def test_train_hands_the_validation_texts_to_the_given_scorer(tmp_path: Path) -> None:
    calls = []

    def scorer(model, tokenizer, sources, references) -> float:
        calls.append((model.training, tokenizer, list(sources), list(references)))
        return 42.5

    data = data_with_texts()
    result = train(small_model(), quick(valid_bleu=True), data, tmp_path / "run", bleu=scorer)
    assert len(calls) == 2  # one validation a step (valid_every=1, max_steps=2)
    training, tokenizer, sources, references = calls[0]
    assert training is False  # scored in eval mode (no dropout)
    assert tokenizer is data.tokenizer
    assert (sources, references) == (data.valid_texts[0], data.valid_texts[1])
    assert result.valid is not None
    assert result.valid["bleu"] == 42.5
    assert [e["bleu"] for e in read_metrics(tmp_path / "run") if e["event"] == "valid"] == [
        42.5,
        42.5,
    ]


def test_valid_bleu_without_a_scorer_is_refused_before_anything_is_written(tmp_path) -> None:
    run = tmp_path / "run"
    with pytest.raises(ValueError, match="valid_bleu"):
        train(small_model(), quick(valid_bleu=True), data_with_texts(), run)
    assert not run.exists()


def test_no_scorer_is_called_without_valid_bleu(tmp_path: Path) -> None:
    def scorer(*args) -> float:
        raise AssertionError("called although valid_bleu is off")

    result = train(small_model(), quick(), data_with_texts(), tmp_path / "run", bleu=scorer)
    assert result.valid is not None
    assert "bleu" not in result.valid


def test_valid_bleu_scores_the_first_sentences_on_the_main_process_only() -> None:
    data = data_with_texts(VALID_BLEU_SENTENCES + 7)
    seen = []

    def scorer(model, tokenizer, sources, references) -> float:
        seen.append(len(sources))
        return 1.0

    main = World(rank=0, world_size=1)
    other = World(rank=1, world_size=2)
    assert valid_bleu(None, data, main, scorer) == 1.0
    assert valid_bleu(None, data, other, scorer) is None
    assert seen == [VALID_BLEU_SENTENCES]
    no_texts = TrainData(data.train, data.valid, tokenizer=data.tokenizer)
    assert valid_bleu(None, no_texts, main, scorer) is None


def test_greedy_bleu_translates_and_scores_with_sacrebleu() -> None:
    texts = ["a b c", "b c a", "c a b", "a a b"]
    tok = Tokenizer.train(texts, vocab_size=270)
    torch.manual_seed(0)
    cfg = model_preset("tiny", vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32)
    model = Transformer(cfg).eval()
    score = greedy_bleu(model, tok, texts[:2], texts[:2])
    assert isinstance(score, float)
    assert 0.0 <= score <= 100.0


def test_greedy_bleu_scores_with_the_target_languages_tokenizer(monkeypatch) -> None:
    import aiayn.evaluate

    seen = []
    real = aiayn.evaluate.sacre_bleu
    monkeypatch.setattr(
        aiayn.evaluate, "sacre_bleu", lambda h, r, lang=None: seen.append(lang) or real(h, r, lang)
    )
    texts = ["a b c", "b c a"]
    tok = Tokenizer.train(texts, vocab_size=270)
    cfg = model_preset("tiny", vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32)
    model = Transformer(cfg).eval()
    greedy_bleu(model, tok, texts, texts)
    greedy_bleu(model, tok, texts, texts, lang="zh")
    assert seen == [None, "zh"]  # None: 13a, sacreBLEU's default


def test_train_cli_scores_a_chinese_target_with_the_zh_tokenizer(tmp_path, monkeypatch) -> None:
    """`aiayn train --valid-bleu` on EN-ZH data: the manifest's zh reaches the BLEU scorer."""
    import aiayn.evaluate
    from aiayn.cli import main
    from aiayn.train import load_train_data

    data = prepare_en_zh(tmp_path)
    assert load_train_data(data).tgt_lang == "zh"
    seen = []
    real = aiayn.evaluate.sacre_bleu

    def spy(hyps, refs, lang=None):
        seen.append(lang)
        return real(hyps, refs, lang)

    monkeypatch.setattr(aiayn.evaluate, "sacre_bleu", spy)
    run = tmp_path / "run"
    argv = ["train", "--data", str(data), "--run", str(run), "--preset", "tiny"]
    argv += ["--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--n-layers", "1"]
    argv += ["--max-tokens", "400", "--warmup", "10", "--max-steps", "1", "--valid-every", "1"]
    assert main([*argv, "--valid-bleu", "--no-progress"]) == 0
    assert seen
    assert set(seen) == {"zh"}
    bleu = [e["bleu"] for e in read_metrics(run) if e["event"] == "valid"]
    assert bleu
    assert all(0.0 <= b <= 100.0 for b in bleu)


def test_training_modules_import_nothing_from_decoding_or_evaluation() -> None:
    """aiayn/train/ sits below decode, translator and evaluate in the layout (docs/style)."""
    above = {"aiayn.decode", "aiayn.translator", "aiayn.evaluate", "aiayn.cli"}
    for path in sorted((ROOT / "aiayn" / "train").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not any(name == m or name.startswith(m + ".") for m in above), (
                    f"{path.name} imports {name}"
                )
