"""Tests of aiayn/weights.py: safetensors round trips, verification on load, clear errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.errors import UserError
from aiayn.weights import (
    check_same_architecture,
    load_model,
    load_state,
    read_config,
    read_metadata,
    save_model,
)


def _tiny(**overrides) -> ModelConfig:
    base = {"vocab_size": 11, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1}
    return ModelConfig(**{**base, **overrides})


def _model(**overrides) -> Transformer:
    model = Transformer(_tiny(**overrides))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))  # every tensor away from its init
    return model


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "norm_first": True,
            "positions": "learned",
            "attn_bias": True,
            "d_k_override": 3,
            "d_v_override": 5,
        },
    ],
    ids=["paper", "options"],
)
def test_save_load_round_trip_is_bit_exact(tmp_path: Path, overrides: dict) -> None:
    model = _model(**overrides)
    path = tmp_path / "model.safetensors"
    save_model(path, model, metadata={"step": "12"})
    loaded, meta = load_model(path)
    assert loaded.config == model.config
    assert meta["step"] == "12"
    ours, theirs = model.state_dict(), loaded.state_dict()
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert ours[key].dtype == theirs[key].dtype, key
        assert torch.equal(ours[key], theirs[key]), key
    assert list(ours).count("embedding") == 1  # the tied matrix is stored once
    src, tgt_in = torch.tensor([[4, 5, 2]]), torch.tensor([[1, 6]])
    model.eval()
    loaded.eval()
    assert torch.equal(model(src, tgt_in), loaded(src, tgt_in))


def test_save_a_state_dict_with_its_config(tmp_path: Path) -> None:
    model = _model()
    path = tmp_path / "sub" / "dir" / "avg.safetensors"  # parents are created
    save_model(path, model.state_dict(), model.config)
    state, config, meta = load_state(path)
    assert config == model.config == read_config(path)
    assert "model_config" in meta
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    with pytest.raises(ValueError, match="config"):
        save_model(tmp_path / "x.safetensors", model.state_dict())


def test_a_failing_save_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch) -> None:
    import safetensors.torch

    path = tmp_path / "model.safetensors"
    old = _model()
    save_model(path, old)

    def crash(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise OSError("killed mid-write")

    monkeypatch.setattr(safetensors.torch, "save_file", crash)
    with pytest.raises(OSError, match="mid-write"):
        save_model(path, _model())
    loaded, _ = load_model(path)
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in old.state_dict().items())
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_a_missing_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.safetensors"
    with pytest.raises(UserError, match=r"nope\.safetensors.*not found"):
        load_model(path)


def test_a_non_safetensors_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save(_model().state_dict(), path)  # a pickle: must be refused, never unpickled
    with pytest.raises(UserError, match=r"model\.pt: not a safetensors checkpoint"):
        load_model(path)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 3)
    with pytest.raises(UserError, match=r"junk\.safetensors"):
        read_config(junk)


def test_a_safetensors_file_without_a_config_is_a_user_error(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "bare.safetensors"
    save_file({"w": torch.zeros(2)}, str(path))
    with pytest.raises(UserError, match=r"bare\.safetensors.*model_config"):
        read_metadata(path)


def test_a_config_with_unknown_fields_is_a_user_error(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "odd.safetensors"
    save_file({"w": torch.zeros(2)}, str(path), metadata={"model_config": '{"d_modle": 3}'})
    with pytest.raises(UserError, match=r"odd\.safetensors.*d_modle"):
        read_config(path)


def test_weights_that_do_not_match_the_config_are_a_user_error(tmp_path: Path) -> None:
    model = _model()
    state = model.state_dict()
    del state["encoder.0.ffn.b_1"]
    path = tmp_path / "cut.safetensors"
    save_model(path, state, model.config)
    with pytest.raises(UserError, match=r"cut\.safetensors.*do not match"):
        load_model(path)


def test_check_same_architecture_names_every_differing_field() -> None:
    a = _tiny()
    check_same_architecture(a, dataclasses.replace(a, dropout=0.3), "x")  # not architecture
    b = dataclasses.replace(a, d_model=16, n_layers=2, norm_first=True)
    with pytest.raises(UserError) as err:
        check_same_architecture(a, b, "ckpt.safetensors")
    msg = str(err.value)
    assert msg.startswith("ckpt.safetensors: architecture differs")
    for name in ("d_model 8 != 16", "n_layers 1 != 2", "norm_first False != True"):
        assert name in msg
    assert "dropout" not in msg
    assert "vocab_size" not in msg


def test_load_model_refuses_another_architecture(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_model(path, _model())
    load_model(path, expect=_tiny(dropout=0.0))  # only training settings differ: fine
    with pytest.raises(UserError, match=r"model\.safetensors.*vocab_size 11 != 12"):
        load_model(path, expect=_tiny(vocab_size=12))


def test_loading_a_model_draws_nothing_on_the_meta_device(tmp_path) -> None:
    """check_fits builds the model on the meta device for its shapes without drawing its
    initial values: a meta draw imports torch._dynamo, over a second of every command's
    start-up (aiayn translate answers in about 2 s, not 3.5). The loaded weights are the file's."""
    import subprocess
    import sys

    from aiayn.config import ModelConfig
    from aiayn.model import Transformer
    from aiayn.weights import save_model

    model = Transformer(ModelConfig(vocab_size=300, d_model=16, n_heads=2, d_ff=32, n_layers=1))
    save_model(tmp_path / "m.safetensors", model)
    probe = (
        "import sys, torch; from aiayn.weights import load_model; "
        f"m, _ = load_model({str(tmp_path / 'm.safetensors')!r}); "
        f"w = torch.load({str(tmp_path / 'w.pt')!r}, weights_only=True); "
        "assert torch.equal(m.embedding, w), 'weights differ'; "
        "print('torch._dynamo' in sys.modules)"
    )
    import torch

    torch.save(model.embedding.detach(), tmp_path / "w.pt")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
