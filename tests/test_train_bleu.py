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
