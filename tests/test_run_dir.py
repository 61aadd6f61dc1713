"""aiayn/run_dir.py: the one module that knows a run directory's layout (sections 5.2, 6.1).

What ``--checkpoint`` means (a file, a checkpoint directory, a run: its newest complete
checkpoint, even where ``latest`` lags behind) and which directory a model file's run is. The
checkpoints' completeness and the writing protocol are tested in tests/test_train_checkpoints.py
and tests/test_faults.py.
"""

from __future__ import annotations

import pytest

from aiayn.data import Tokenizer
from aiayn.errors import UserError
from aiayn.run_dir import CONFIG_FILE, find_run_dir, resolve_checkpoint
from aiayn.storage import write_manifest
from tests.translator_support import TEXTS, make_checkpoint


def test_checkpoint_paths(tmp_path) -> None:
    tokenizer = Tokenizer.train(TEXTS, vocab_size=300)
    run = tmp_path / "run"
    for step in (100, 200, 300):
        d = run / "checkpoints" / f"step_{step:08d}"
        make_checkpoint(d / "model.safetensors", tokenizer)
        if step < 300:  # complete: the three files and the manifest; step 300 is not
            (d / "trainer.pt").write_bytes(b"state")
            (d / "meta.json").write_text("{}")
            write_manifest(d, {}, ["model.safetensors", "trainer.pt", "meta.json"])
    (run / "checkpoints" / "latest").write_text("step_00000100\n")
    first = run / "checkpoints" / "step_00000100" / "model.safetensors"
    # the newest complete checkpoint, even where `latest` lags behind (a kill before its update)
    assert resolve_checkpoint(run) == first.parents[1] / "step_00000200/model.safetensors"
    assert resolve_checkpoint(run / "checkpoints" / "step_00000200") == first.parents[1] / (
        "step_00000200/model.safetensors"
    )
    assert resolve_checkpoint(first) == first
    (run / "checkpoints" / "latest").unlink()
    assert resolve_checkpoint(run).parent.name == "step_00000200"  # the newest complete one


def test_the_run_of_a_model_file_and_what_is_not_a_checkpoint(tmp_path) -> None:
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_00000001"
    step.mkdir(parents=True)
    (run / CONFIG_FILE).write_text("{}")
    assert find_run_dir(step / "model.safetensors") == run.resolve()
    assert find_run_dir(tmp_path / "elsewhere.safetensors") is None
    with pytest.raises(UserError, match="checkpoint not found"):
        resolve_checkpoint(tmp_path / "missing")
    with pytest.raises(UserError, match=r"no model\.safetensors"):
        resolve_checkpoint(run)  # a run with no complete checkpoint
