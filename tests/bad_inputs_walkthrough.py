"""The bad-input table's cases of `aiayn walkthrough --checkpoint` and its view flags (issue 47).

A checkpoint the walkthrough cannot read (missing, a directory without a model, not a
safetensors file, weights that do not fit, a model outside the paper's), an empty or too long
--source, heads out of the model's range, a --rows or --cols that is no positive integer, and a
toy-model setting given with --checkpoint: each is refused in one line naming the flag or the
file. The world's model ({model}: d_model 16, 2 heads) is the trained checkpoint. The cases run
through tests/bad_inputs.py (``CASES`` is imported by ``all_cases``).
"""

from __future__ import annotations

from pathlib import Path

from tests.bad_inputs import Case

W = ("walkthrough", "--checkpoint")
MODEL = (*W, "{model}")
TOO_LONG = " ".join(["word"] * 300)  # over 200 BPE tokens with the world's tokenizer


def _pre_ln(tmp: Path, world: dict[str, str]) -> None:
    """A model file of the world's vocabulary with pre-LN (DEVIATION(3.1)): not the paper's."""
    import dataclasses

    from aiayn.model import Transformer
    from aiayn.weights import load_model, save_model

    model, meta = load_model(world["model"])
    cfg = dataclasses.replace(model.config, norm_first=True)
    save_model(tmp / "pre.safetensors", Transformer(cfg), metadata={"tokenizer": meta["tokenizer"]})


CASES = [
    # The checkpoint: the same lines as translate's, from the same loader.
    Case("walkthrough-checkpoint-missing", (*W, "{tmp}/none"), "none: checkpoint not found"),
    Case("walkthrough-checkpoint-dir", (*W, "{dir}"), "{dir}: no model.safetensors"),
    Case("walkthrough-checkpoint-text", (*W, "{text}"), "{text}: not a safetensors checkpoint"),
    Case("walkthrough-checkpoint-binary", (*W, "{binary}"), "{binary}: not a safetensors"),
    Case("walkthrough-checkpoint-empty", (*W, "{empty}"), "{empty}: not a safetensors"),
    Case("walkthrough-checkpoint-mismatch", (*W, "{mismatch}"), "{mismatch}: weights do not match"),
    Case(
        "walkthrough-checkpoint-pre-ln",
        (*W, "{tmp}/pre.safetensors"),
        "departs from it (norm_first=True)",
        setup=_pre_ln,
    ),
    # The sentence.
    Case("walkthrough-checkpoint-source-empty", (*MODEL, "--source", ""), "--source: the sentence"),
    Case("walkthrough-checkpoint-source-blank", (*MODEL, "--source", " \t "), "--source: the"),
    Case(
        "walkthrough-checkpoint-source-long",
        (*MODEL, "--source", TOO_LONG),
        "over the walkthrough's limit of 200",
    ),
    # The heads: numbered from 1, within the model's.
    Case("walkthrough-checkpoint-heads-3", (*MODEL, "--heads", "3"), "--heads 3: the model has 2"),
    Case("walkthrough-checkpoint-heads-1-9", (*MODEL, "--heads", "1,9"), "--heads 1,9: the model"),
    Case(
        "walkthrough-view-heads-toy-3",
        ("walkthrough", "--heads", "3"),
        "--heads 3: the model has 2",
    ),
    Case(
        "walkthrough-view-heads-0", ("walkthrough", "--heads", "0"), "--heads: must be head numbers"
    ),
    Case("walkthrough-view-heads-minus", ("walkthrough", "--heads", "-1"), "--heads: must be head"),
    Case("walkthrough-view-heads-word", ("walkthrough", "--heads", "one"), "--heads: must be head"),
    Case("walkthrough-view-heads-empty", ("walkthrough", "--heads", ""), "--heads: must be head"),
    Case(
        "walkthrough-view-heads-comma", ("walkthrough", "--heads", "1,,2"), "--heads: must be head"
    ),
    # How much of each matrix is shown.
    Case("walkthrough-view-rows-0", (*MODEL, "--rows", "0"), "--rows: must be an integer >= 1"),
    Case("walkthrough-view-cols-x", (*MODEL, "--cols", "x"), "--cols: must be an integer, got 'x'"),
    Case(
        "walkthrough-view-cols-huge",
        ("walkthrough", "--cols", "10001"),
        "--cols: must be an integer",
    ),
    # The toy model's settings mean nothing for a trained model.
    Case(
        "walkthrough-checkpoint-d-model",
        (*MODEL, "--d-model", "8"),
        "--d-model: a setting of the toy model",
    ),
    Case(
        "walkthrough-checkpoint-target",
        (*MODEL, "--target", "x"),
        "--target: a setting of the toy model; with --checkpoint the model's own translation",
    ),
    Case("walkthrough-checkpoint-seed", (*MODEL, "--seed", "3"), "--seed: a setting of the toy"),
]
