"""The rules of aiayn/train/configure.py, met by a Python caller of ``train`` (not the CLI).

Resuming (the run, its config.json, the last checkpoint), the precedence of settings, and the
data's tokenizer against the model config and the checkpoints: the refusals ``aiayn train``
gives, each one line naming the file or value.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest

from aiayn.config import ModelConfig, TrainConfig
from aiayn.data import InMemorySplit, synthetic_pairs
from aiayn.errors import UserError
from aiayn.train import (
    Settings,
    TrainData,
    latest_checkpoint,
    load_train_data,
    read_metrics,
    read_run_config,
    resolve_configs,
    train,
)

V = 12


class Tokenizer:
    """What train() asks of a tokenizer: its JSON (stored in checkpoints) and its size."""

    def __init__(self, text: str = '{"tokenizer": "A"}', vocab_size: int = V) -> None:
        self.text, self.vocab_size = text, vocab_size

    def to_str(self) -> str:
        return self.text


def model(**overrides) -> ModelConfig:
    base = {"vocab_size": V, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1}
    return ModelConfig(**{**base, **overrides})


def quick(**overrides) -> TrainConfig:
    base = {"max_steps": 2, "warmup": 10, "max_tokens": 120, "log_every": 1, "valid_every": 0}
    return TrainConfig(**{**base, "save_every_minutes": 0.0, **overrides})


def data(tokenizer: Tokenizer | None = None) -> TrainData:
    pairs = synthetic_pairs("copy", 60, V, 1, 6, 0)
    return TrainData(InMemorySplit(pairs), tokenizer=tokenizer or Tokenizer(), source="copy")


def one_line(caught: pytest.ExceptionInfo) -> str:
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run of 2 steps with a checkpoint at each."""
    path = tmp_path / "run"
    train(model(), quick(save_every_steps=1), data(), path)
    return path


# Resuming ------------------------------------------------------------------------------------


def test_resume_continues_from_the_last_checkpoint_with_the_new_train_settings(run) -> None:
    ticks = []
    cfg = dataclasses.replace(read_run_config(run).train, max_steps=4)
    result = train(model(), cfg, data(), run, resume=True, on_event=ticks.append)
    first = next(e for e in ticks if e["event"] == "tick")
    assert first["step"] == 3  # step 2 was the last checkpoint's
    assert result.progress.step == 4
    assert latest_checkpoint(run).name == "step_00000004"
    assert read_run_config(run).train.max_steps == 4  # the train settings given replace the run's
    steps = [e["step"] for e in read_metrics(run) if e["event"] == "train"]
    assert steps == [1, 2, 3, 4]


def test_resume_with_another_architecture_is_refused_before_anything_is_written(run) -> None:
    before = (run / "metrics.jsonl").read_bytes()
    with pytest.raises(UserError) as caught:
        train(model(d_ff=48), quick(max_steps=4), data(), run, resume=True)
    message = one_line(caught)
    assert f"{run / 'config.json'} vs the settings given: architecture differs" in message
    assert "d_ff 48 != 32" in message
    assert (run / "metrics.jsonl").read_bytes() == before
    assert latest_checkpoint(run).name == "step_00000002"


def test_resume_needs_the_run_and_its_config(tmp_path: Path, run) -> None:
    missing = tmp_path / "nothing"
    with pytest.raises(UserError, match="--resume given but there is no such run directory"):
        train(model(), quick(), data(), missing, resume=True)
    assert not missing.exists()  # not created by the refusal
    (run / "config.json").write_text("{not json")
    with pytest.raises(UserError, match=r"run/config\.json: not valid JSON"):
        train(model(), quick(max_steps=4), data(), run, resume=True)
    (run / "config.json").write_text('{"model": {"d_mdl": 3}, "train": {}}')
    with pytest.raises(UserError, match=r"run/config\.json: not the config of a run"):
        train(model(), quick(max_steps=4), data(), run, resume=True)
    (run / "config.json").unlink()
    with pytest.raises(UserError, match=r"no config\.json"):
        train(model(), quick(max_steps=4), data(), run, resume=True)


def test_resume_of_a_run_without_a_checkpoint_and_a_new_run_over_one(tmp_path, run) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text((run / "config.json").read_text())
    with pytest.raises(UserError, match="the run has no complete checkpoint"):
        train(model(), quick(), data(), bare, resume=True)
    with pytest.raises(UserError, match="already holds checkpoints; pass --resume"):
        train(model(), quick(), data(), run)


def test_a_pickled_trainer_state_is_refused_before_the_model_is_loaded(run, capsys) -> None:
    class Evil:
        def __reduce__(self):
            return (print, ("this must never run",))

    latest = latest_checkpoint(run)
    (latest / "manifest.json").unlink()  # as an older aiayn wrote it: no manifest to check
    (latest / "trainer.pt").write_bytes(pickle.dumps({"optimizer": Evil()}))
    with pytest.raises(UserError) as caught:
        train(model(), quick(max_steps=4), data(), run, resume=True)
    assert f"{latest / 'trainer.pt'}: not a trainer state written by aiayn train" in one_line(
        caught
    )
    assert "this must never run" not in capsys.readouterr().out


# The data's tokenizer ------------------------------------------------------------------------


def test_resume_with_another_tokenizer_is_refused(run) -> None:
    other = data(Tokenizer('{"tokenizer": "B"}'))
    with pytest.raises(UserError) as caught:
        train(model(), quick(max_steps=4), other, run, resume=True)
    assert one_line(caught) == (
        f"{latest_checkpoint(run)}: trained with another tokenizer than that of the --data given"
    )
    without = TrainData(other.train, tokenizer=None)
    with pytest.raises(UserError, match="trained with a tokenizer, and the data given has none"):
        train(model(), quick(max_steps=4), without, run, resume=True)
    assert train(model(), quick(max_steps=3), data(), run, resume=True).progress.step == 3


def test_a_damaged_tokenizer_in_a_checkpoint_is_named_as_damage(run) -> None:
    f = latest_checkpoint(run) / "model.safetensors"
    raw = f.read_bytes()
    assert raw.count(b'\\"A\\"') == 1  # the tokenizer's JSON inside the header's
    f.write_bytes(raw.replace(b'\\"A\\"', b'\\"C\\"'))  # same size: only the hash can tell
    with pytest.raises(UserError, match=r"model\.safetensors: SHA-256 differs from its manifest"):
        train(model(), quick(max_steps=4), data(), run, resume=True)


def test_the_vocabulary_must_be_the_tokenizers(tmp_path: Path, run) -> None:
    with pytest.raises(UserError) as caught:
        train(model(), quick(), data(Tokenizer(vocab_size=20)), tmp_path / "new")
    assert one_line(caught).startswith("vocab_size: 12, but the data's tokenizer has 20 tokens")
    assert not (tmp_path / "new").exists()
    bigger = data(Tokenizer(vocab_size=20))
    with pytest.raises(UserError, match="the run's vocabulary has 12 tokens, the data's tokenizer"):
        train(model(), quick(max_steps=4), bigger, run, resume=True)


# Settings: preset < schedule < TOML < values, or config.json when resuming -------------------


def test_settings_merge_in_order_of_precedence(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text("[model]\nd_ff = 100\nn_layers = 3\n[train]\nwarmup = 50\n")
    settings = Settings(preset="tiny", schedule="t2t-2018", config_file=toml, model={"n_layers": 1})
    model_cfg, train_cfg = resolve_configs(settings, vocab_size=V)
    assert model_cfg.vocab_size == V  # the tokenizer's
    assert model_cfg.d_model == 256  # the preset's
    assert model_cfg.d_ff == 100  # the TOML file over the preset
    assert model_cfg.n_layers == 1  # the value over the TOML file
    assert train_cfg.adam_beta2 == 0.997  # the schedule's
    assert train_cfg.warmup == 50  # the TOML file over the schedule (8000)
    assert resolve_configs(Settings(), vocab_size=V)[0] == ModelConfig(vocab_size=V)  # base


def test_settings_are_refused_in_one_line_naming_the_file_or_value(tmp_path: Path, run) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[model]\nvocab_size = 5\n")
    with pytest.raises(UserError, match=r"c\.toml: vocab_size 5 differs from the data's tokenizer"):
        resolve_configs(Settings(config_file=toml), vocab_size=V)
    toml.write_text('[train]\nwarmup = "ten"\n')
    with pytest.raises(UserError, match=r"c\.toml: \[train\] warmup: must be an integer"):
        resolve_configs(Settings(config_file=toml), vocab_size=V)
    with pytest.raises(UserError, match="dropout: must be in"):
        resolve_configs(Settings(model={"dropout": 1.5}), vocab_size=V)
    with pytest.raises(UserError, match="preset: unknown name 'huge'"):
        resolve_configs(Settings(preset="huge"), vocab_size=V)
    with pytest.raises(UserError, match="--resume keeps the run's config"):
        resolve_configs(Settings(preset="tiny"), V, run, resume=True)


def test_resuming_merges_over_the_runs_config_then_train_continues(tmp_path, run) -> None:
    toml = tmp_path / "more.toml"
    toml.write_text("[train]\nmax_steps = 3\n")
    settings = Settings(config_file=toml, train={"log_every": 3})
    model_cfg, train_cfg = resolve_configs(settings, V, run, resume=True)
    saved = read_run_config(run)
    assert model_cfg == saved.model
    assert train_cfg == dataclasses.replace(saved.train, max_steps=3, log_every=3)
    assert train(model_cfg, train_cfg, data(), run, resume=True).progress.step == 3
    assert json.loads((run / "config.json").read_text())["train"]["log_every"] == 3
    # A model setting that changes the architecture merges, and train() refuses it.
    wider, cfg = resolve_configs(Settings(model={"d_model": 32}), V, run, resume=True)
    with pytest.raises(UserError, match="architecture differs: d_model 32 != 16"):
        train(wider, dataclasses.replace(cfg, max_steps=5), data(), run, resume=True)


def test_resuming_without_data_reads_the_directory_the_run_names(run) -> None:
    with pytest.raises(UserError, match="--data DIR is required"):
        load_train_data(None)
    config = json.loads((run / "config.json").read_text())
    assert config["data"] == "copy"  # TrainData.source, recorded by train()
    with pytest.raises(UserError, match="copy: no prepared data directory"):
        load_train_data(None, run, resume=True)
    (run / "config.json").write_text(json.dumps({**config, "data": None}))
    with pytest.raises(UserError, match=r"config\.json names no data directory; pass --data"):
        load_train_data(None, run, resume=True)
