"""The Python example in examples/ runs against a real (small) checkpoint, and fails cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from aiayn import ModelConfig, Transformer
from aiayn.config import DecodeConfig
from aiayn.data import Tokenizer
from aiayn.translator import load_translator
from aiayn.weights import save_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "translate.py"
TEXTS = ["a dog runs on the grass .", "ein Hund rennt auf dem Gras ."] * 4


def test_example_translates_like_the_library(tmp_path) -> None:
    tok = Tokenizer.train(TEXTS, vocab_size=300)
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=1)
    path = tmp_path / "model.safetensors"
    save_model(path, Transformer(cfg).eval(), metadata={"tokenizer": tok.to_str()})
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), str(path), "a dog runs ."],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "a dog runs ."
    assert len(lines) == 3  # the source, then its 2-best list
    best = load_translator(path, DecodeConfig(nbest=2), device="cpu").translate(["a dog runs ."])
    assert [line.split("tokens  ", 1)[1] for line in lines[1:]] == [t for t, _ in best[0]]


def test_example_names_a_missing_checkpoint(tmp_path) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "none.safetensors")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "none.safetensors" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
