"""Tests of aiayn/config.py: the paper's defaults, validation naming the field, presets.

Defaults are checked against the paper (sections 3, 5.3, 5.4, 6.1; Table 3); every invalid
value must raise ValueError whose message starts with the field's name.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from aiayn import PRESETS, DecodeConfig, ModelConfig, TrainConfig, model_preset, train_preset
from aiayn.config import from_dict, load_toml, merge_config, to_dict
from aiayn.model import Transformer


def test_model_defaults_are_the_papers_base_model() -> None:
    cfg = ModelConfig()
    assert (cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_layers) == (512, 8, 2048, 6)  # Table 3
    assert cfg.d_k == cfg.d_v == 64  # 3.2.2: d_k = d_v = d_model / h
    assert cfg.decoder_layers == 6
    assert cfg.dropout == 0.1  # 5.4: P_drop
    assert cfg.attn_dropout == cfg.ffn_dropout == 0.0  # not in the paper
    assert cfg.norm_first is False  # 3.1: post-LN
    assert cfg.positions == "sinusoidal"  # 3.5
    assert cfg.attn_bias is False  # 3.2.2: no biases in the projections
    assert cfg.vocab_size == 37000  # 5.1: shared BPE vocabulary of about 37000


def test_train_and_decode_defaults_are_the_papers() -> None:
    t = TrainConfig()
    assert (t.adam_beta1, t.adam_beta2, t.adam_eps) == (0.9, 0.98, 1e-9)  # 5.3
    assert t.warmup == 4000  # 5.3
    assert t.label_smoothing == 0.1  # 5.4
    assert t.max_tokens == 25000  # 5.1
    assert t.max_steps == 100_000  # 5.2
    assert t.keep_last == 5  # 6.1: average of the last 5 checkpoints
    assert t.save_every_minutes == 10.0  # 6.1: 10-minute intervals
    d = DecodeConfig()
    assert (d.beam, d.alpha, d.length_penalty) == (4, 0.6, "gnmt")  # 6.1
    assert (d.max_len_a, d.max_len_b) == (1.0, 50)  # 6.1: input length + 50


INVALID_MODEL = [
    ("vocab_size", {"vocab_size": 0}),
    ("d_model", {"d_model": 0}),
    ("n_heads", {"n_heads": 0}),
    ("d_ff", {"d_ff": 0}),
    ("n_layers", {"n_layers": 0}),
    ("max_positions", {"max_positions": 0}),
    ("d_model", {"d_model": 10, "n_heads": 4}),  # not divisible
    ("d_model", {"d_model": 10, "n_heads": 4, "d_k_override": 4}),  # d_v still d_model / h
    ("d_k_override", {"d_k_override": 0}),
    ("d_k_override", {"d_k_override": -2, "d_v_override": 8}),
    ("d_v_override", {"d_v_override": 0}),
    ("n_dec_layers", {"n_dec_layers": 0}),
    ("dropout", {"dropout": 1.0}),
    ("dropout", {"dropout": -0.1}),
    ("dropout", {"dropout": math.nan}),
    ("attn_dropout", {"attn_dropout": 1.5}),
    ("ffn_dropout", {"ffn_dropout": -1e-3}),
    ("positions", {"positions": "rotary"}),
    ("d_model", {"d_model": 7, "n_heads": 7}),  # sinusoids need an even d_model
    ("layer_norm_eps", {"layer_norm_eps": 0.0}),
    ("layer_norm_eps", {"layer_norm_eps": math.nan}),
    ("pad_id", {"pad_id": -1}),
    ("pad_id", {"vocab_size": 10, "pad_id": 10}),
]


@pytest.mark.parametrize(("field", "values"), INVALID_MODEL, ids=[str(v) for _, v in INVALID_MODEL])
def test_invalid_model_config_raises_value_error_naming_the_field(field: str, values) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: "):
        ModelConfig(**values)


INVALID_TRAIN = [
    ("label_smoothing", 1.0),
    ("label_smoothing", -0.1),
    ("adam_beta1", 1.0),
    ("adam_beta2", -0.5),
    ("adam_eps", 0.0),
    ("warmup", 0),
    ("lr_scale", 0.0),
    ("max_tokens", 0),
    ("update_freq", 0),
    ("max_steps", -1),
    ("max_epochs", -1),
    ("max_minutes", -1.0),
    ("max_minutes", math.inf),
    ("save_every_steps", -1),
    ("save_every_minutes", math.nan),
    ("keep_last", 0),
    ("log_every", 0),
    ("valid_every", -1),
    ("max_bad_steps", 0),
]


@pytest.mark.parametrize(("field", "value"), INVALID_TRAIN)
def test_invalid_train_config_raises_value_error_naming_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: "):
        TrainConfig(**{field: value})


INVALID_DECODE = [
    ("beam", {"beam": 0}),
    ("alpha", {"alpha": -0.1}),
    ("length_penalty", {"length_penalty": "wu"}),
    ("max_len_a", {"max_len_a": -1.0}),
    ("max_len_b", {"max_len_b": -1}),
    ("nbest", {"nbest": 0}),
    ("nbest", {"beam": 4, "nbest": 5}),
]


@pytest.mark.parametrize(
    ("field", "values"), INVALID_DECODE, ids=[str(v) for _, v in INVALID_DECODE]
)
def test_invalid_decode_config_raises_value_error_naming_the_field(field: str, values) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: "):
        DecodeConfig(**values)


def test_valid_edge_values_are_accepted() -> None:
    ModelConfig(dropout=0.0, attn_dropout=0.0, pad_id=36999)
    ModelConfig(
        d_model=10, n_heads=4, d_k_override=3, d_v_override=5
    )  # explicit head sizes: no divisibility
    ModelConfig(d_model=7, n_heads=7, positions="learned")  # odd d_model without sinusoids
    TrainConfig(label_smoothing=0.0, max_steps=0, max_minutes=0.0)
    DecodeConfig(beam=1, nbest=1, alpha=0.0)


def test_configs_are_frozen_and_keyword_only() -> None:
    cfg = ModelConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 256  # type: ignore[misc]
    with pytest.raises(TypeError):
        ModelConfig(37000)  # type: ignore[misc]


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_is_reachable_by_name_and_builds(name: str) -> None:
    preset = PRESETS[name]
    assert preset.description
    cfg = model_preset(name)
    assert cfg == dataclasses.replace(ModelConfig(), **preset.model)
    for key, value in preset.model.items():
        assert getattr(cfg, key) == value
    assert train_preset(name) == dataclasses.replace(TrainConfig(), **preset.train)
    with torch.device("meta"):  # the full-size model, without allocating its weights
        model = Transformer(cfg)
    assert len(model.encoder) == cfg.n_layers
    assert model.encoder[0].self_attn.w_qkv.shape == (
        cfg.d_model,
        cfg.n_heads * (2 * cfg.d_k + cfg.d_v),
    )


def test_presets_match_table_3() -> None:
    big = model_preset("big")
    assert (big.d_model, big.d_ff, big.n_heads, big.dropout) == (1024, 4096, 16, 0.3)
    assert big.d_k == 64
    assert train_preset("big").max_steps == 300_000
    assert train_preset("big").keep_last == 20  # 6.1: big averages the last 20
    for h, dk in ((1, 512), (4, 128), (16, 32), (32, 16)):
        cfg = model_preset(f"table3-A-h{h}")
        assert (cfg.n_heads, cfg.d_k, cfg.d_v) == (h, dk, dk)
        assert cfg.n_heads * cfg.d_k == 512  # row A keeps the computation constant
    assert model_preset("table3-B-dk16").d_k == 16
    assert model_preset("table3-B-dk16").d_v == 64
    assert model_preset("table3-C-n2").n_layers == 2
    assert model_preset("table3-C-d256").d_k == 32
    assert model_preset("table3-D-drop0.2").dropout == 0.2
    assert train_preset("table3-D-ls0.2").label_smoothing == 0.2
    assert model_preset("table3-E-learned").positions == "learned"
    assert model_preset("tiny", vocab_size=9).vocab_size == 9  # overrides on top


def test_unknown_preset_raises_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^preset: unknown name 'huge'.*base.*big"):
        model_preset("huge")
    with pytest.raises(ValueError, match="preset"):
        train_preset("huge")


@pytest.mark.parametrize(
    "cfg",
    [model_preset("table3-B-dk16"), TrainConfig(warmup=8000), DecodeConfig(beam=5)],
    ids=["model", "train", "decode"],
)
def test_to_dict_from_dict_round_trip(cfg) -> None:
    data = to_dict(cfg)
    assert isinstance(data, dict)
    assert from_dict(type(cfg), data) == cfg


def test_from_dict_rejects_unknown_fields_naming_them() -> None:
    data = {**to_dict(ModelConfig()), "d_modle": 256, "heads": 4}
    with pytest.raises(ValueError, match=r"ModelConfig: unknown field\(s\) d_modle, heads"):
        from_dict(ModelConfig, data)


def test_from_dict_still_validates_values() -> None:
    with pytest.raises(ValueError, match=r"^dropout: "):
        from_dict(ModelConfig, {**to_dict(ModelConfig()), "dropout": 2.0})


def test_configs_of_an_older_aiayn_still_load(tmp_path) -> None:
    """Checkpoints, config.json and TOML files that called the overrides d_k and d_v (and
    stored the kernels in the ModelConfig) load: cfg.d_k is now always the head size."""
    new = to_dict(ModelConfig(d_k_override=32))
    old = {k: v for k, v in new.items() if not k.endswith("_override")}
    old |= {"d_k": 32, "d_v": None, "kernels": "plain"}
    cfg = from_dict(ModelConfig, old)
    assert cfg == ModelConfig(d_k_override=32)
    assert (cfg.d_k, cfg.d_v) == (32, 64)
    toml = tmp_path / "old.toml"
    toml.write_text("[model]\nd_k = 16\nd_v = 16\n", encoding="utf-8")
    merged = merge_config(ModelConfig, toml=load_toml(toml))
    assert (merged.d_k_override, merged.d_k, merged.d_v) == (16, 16, 16)
