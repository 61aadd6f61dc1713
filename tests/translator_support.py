"""For the translator's tests: a tokenizer of four sentences and a random-weight checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch

from aiayn import ModelConfig, Transformer
from aiayn.data import EOS, Tokenizer
from aiayn.weights import save_model

TEXTS = [
    "a dog runs on the grass .",
    "ein Hund rennt auf dem Gras .",
    "two men are playing football in the park .",
    "zwei Männer spielen Fußball im Park .",
] * 3


def make_checkpoint(path: Path, tok: Tokenizer, seed: int = 0, **meta: str) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2, dropout=0.0
    )
    model = Transformer(cfg).eval()
    with torch.no_grad():
        model.embedding[EOS] *= 4.0  # ends some sentences before the maximum length
    save_model(path, model, metadata={"tokenizer": tok.to_str(), **meta})
    return model
