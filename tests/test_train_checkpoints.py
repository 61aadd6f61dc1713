"""Checkpoint averaging (section 6.1) and the checkpoint files of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from aiayn.cli import main
from aiayn.config import ModelConfig
from aiayn.errors import UserError
from aiayn.model import Transformer
from aiayn.train import average_checkpoints, resolve_model_files
from aiayn.train.checkpoints import Progress, save_checkpoint
from aiayn.weights import load_state, read_metadata, save_model

CFG = ModelConfig(vocab_size=11, d_model=16, n_heads=2, d_ff=32, n_layers=1)
TOKENIZER = '{"fake": "tokenizer"}'


def write_models(tmp_path: Path, n: int, cfg: ModelConfig = CFG, tokenizer: str = TOKENIZER):
    files, states = [], []
    for i in range(n):
        torch.manual_seed(i)
        model = Transformer(cfg)
        f = tmp_path / f"m{i}.safetensors"
        save_model(f, model, metadata={"tokenizer": tokenizer, "step": str(i)})
        files.append(f)
        states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return files, states


def test_average_is_the_mean_and_keeps_the_tokenizer(tmp_path: Path) -> None:
    files, states = write_models(tmp_path, 3)
    avg, cfg, meta = average_checkpoints(files)
    assert cfg == CFG
    assert meta["tokenizer"] == TOKENIZER
    assert json.loads(meta["averaged_from"]) == [str(f) for f in files]
    for k, v in avg.items():
        expected = sum(s[k].double() for s in states) / 3
        torch.testing.assert_close(v, expected.float(), rtol=0, atol=1e-7)
        assert v.dtype == states[0][k].dtype
    # Averaging one checkpoint gives it back exactly.
    one, _, _ = average_checkpoints(files[:1])
    assert all(torch.equal(one[k], states[0][k]) for k in one)


def test_average_refuses_other_architectures_and_tokenizers(tmp_path: Path) -> None:
    files, _ = write_models(tmp_path, 2)
    (tmp_path / "other").mkdir()
    other, _ = write_models(tmp_path / "other", 1, ModelConfig(**{**CFG.__dict__, "d_ff": 48}))
    with pytest.raises(UserError, match="architecture differs: d_ff 48 != 32"):
        average_checkpoints([*files, *other])
    (tmp_path / "tok").mkdir()
    tok, _ = write_models(tmp_path / "tok", 1, tokenizer='{"another": 1}')
    with pytest.raises(UserError, match="tokenizer differs"):
        average_checkpoints([*files, *tok])
    with pytest.raises(UserError, match="no checkpoints"):
        average_checkpoints([])


def fake_run(run: Path, steps: list[int]) -> None:
    """A run directory with checkpoints at the given steps (weights seeded by the step)."""
    for step in steps:
        torch.manual_seed(step)
        model = Transformer(CFG)
        opt = torch.optim.Adam(model.parameters())
        save_checkpoint(run, model, opt, Progress(step=step), [{}], {"tokenizer": TOKENIZER})


def test_resolve_run_directories_in_step_order(tmp_path: Path) -> None:
    run = tmp_path / "run"
    fake_run(run, [30, 10, 20, 100])
    files = resolve_model_files([run])
    assert [f.parent.name for f in files] == [
        "step_00000010",
        "step_00000020",
        "step_00000030",
        "step_00000100",
    ]
    assert resolve_model_files([run / "checkpoints"]) == files
    assert resolve_model_files([files[0].parent, files[1]]) == files[:2]
    with pytest.raises(UserError, match="neither"):
        resolve_model_files([tmp_path / "missing"])


def test_average_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    fake_run(run, [1, 2, 3, 4])
    out = tmp_path / "avg.safetensors"
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 0
    state, cfg, meta = load_state(out)
    assert cfg == CFG
    assert meta["tokenizer"] == TOKENIZER
    expected, _, _ = average_checkpoints(resolve_model_files([run])[-2:])
    assert all(torch.equal(state[k], expected[k]) for k in state)
    assert "step_00000004" in capsys.readouterr().out
    # An existing output is kept; too few checkpoints and bad --last are one-line errors.
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["average", str(run), "--last", "9", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "only 4 checkpoint(s)" in err
    assert len(err.strip().splitlines()) == 1
    other = tmp_path / "other"
    (other / "checkpoints").mkdir(parents=True)
    torch.manual_seed(0)
    m = Transformer(ModelConfig(**{**CFG.__dict__, "n_heads": 4}))
    opt = torch.optim.Adam(m.parameters())
    save_checkpoint(other, m, opt, Progress(step=9), [{}], {"tokenizer": TOKENIZER})
    code = main(["average", str(run), str(other), "--last", "2", "--out", str(tmp_path / "y")])
    assert code == 2
    assert "n_heads 4 != 2" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()


def test_average_names_a_file_that_is_no_checkpoint_before_advising_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "in.txt"
    text.write_text("not a model\n", encoding="utf-8")
    assert main(["average", str(text), "--out", str(tmp_path / "a.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "not a safetensors checkpoint" in err
    assert "--last" not in err
    assert len(err.strip().splitlines()) == 1


def test_average_refuses_an_out_whose_directory_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    fake_run(run, [1, 2])
    out = tmp_path / "nodir" / "x.safetensors"
    assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"the directory {out.parent} does not exist" in err
    assert not out.parent.exists()


def test_checkpoint_files_and_trainer_state(tmp_path: Path) -> None:
    run = tmp_path / "run"
    fake_run(run, [5, 6, 7])
    ckpt = run / "checkpoints" / "step_00000007"
    assert read_metadata(ckpt / "model.safetensors")["step"] == "7"
    trainer = torch.load(ckpt / "trainer.pt", weights_only=True)  # no pickle of code
    assert set(trainer) == {"optimizer", "progress", "rng"}
    assert not list((run / "checkpoints").glob(".*"))  # no temporary leftovers
    # Saving the same step again replaces it in place.
    fake_run(run, [7])
    assert (run / "checkpoints" / "latest").read_text().strip() == "step_00000007"
    assert not list((run / "checkpoints").glob(".*"))
