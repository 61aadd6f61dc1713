"""Tests of aiayn/cli/common.py (flags generated from the configs, TOML, precedence) and of
`aiayn demo` end to end."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from aiayn import DecodeConfig, ModelConfig, TrainConfig, model_preset
from aiayn.cli import main
from aiayn.cli.common import add_config_args, config_from_args, load_toml
from aiayn.errors import UserError

CONFIGS = (ModelConfig, TrainConfig, DecodeConfig)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="test")
    for cls in CONFIGS:
        add_config_args(parser, cls)
    return parser


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_config_field_has_a_flag(cls: type) -> None:
    flags = _flags(_parser())
    for f in dataclasses.fields(cls):
        assert "--" + f.name.replace("_", "-") in flags, f.name


def test_skip_leaves_fields_out() -> None:
    parser = argparse.ArgumentParser()
    add_config_args(parser, ModelConfig, skip=("vocab_size",))
    assert "--vocab-size" not in _flags(parser)
    assert "--d-model" in _flags(parser)


def test_flag_types_follow_the_field_types() -> None:
    parser = _parser()
    args = parser.parse_args(
        [
            "--d-model", "64",  # int
            "--dropout", "0.25",  # float
            "--norm-first",  # bool
            "--positions", "learned",  # Literal
            "--d-k-override", "16",  # int | None
            "--n-dec-layers", "none",  # int | None, set to None
            "--length-penalty", "fairseq",
        ]
    )  # fmt: skip
    cfg = config_from_args(ModelConfig, args)
    assert cfg.d_model == 64
    assert cfg.dropout == 0.25
    assert cfg.norm_first is True
    assert cfg.positions == "learned"
    assert cfg.d_k == 16
    assert cfg.n_dec_layers is None
    assert config_from_args(DecodeConfig, args).length_penalty == "fairseq"
    with pytest.raises(SystemExit):  # a run-time choice now (aiayn train --kernels), no field
        parser.parse_args(["--kernels", "plain"])


def test_flags_not_given_leave_the_defaults() -> None:
    args = _parser().parse_args([])
    assert config_from_args(ModelConfig, args) == ModelConfig()
    assert config_from_args(TrainConfig, args) == TrainConfig()


@pytest.mark.parametrize(
    "argv", [["--positions", "rope"], ["--d-model", "big"], ["--length-penalty", "x"]]
)
def test_bad_flag_values_are_refused_by_argparse(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as err:
        _parser().parse_args(argv)
    assert err.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_an_invalid_value_is_a_user_error_naming_the_field() -> None:
    args = _parser().parse_args(["--dropout", "1.5"])
    with pytest.raises(UserError, match="dropout"):
        config_from_args(ModelConfig, args)


def test_precedence_is_preset_then_toml_then_flags(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text(
        "[model]\nd_ff = 1000\nn_layers = 3\n\n[train]\nwarmup = 8000\n\n[decode]\nbeam = 5\n"
    )
    args = _parser().parse_args(["--n-layers", "2"])
    tables = load_toml(toml)
    cfg = config_from_args(ModelConfig, args, base=model_preset("big"), toml=tables)
    assert cfg.d_model == 1024  # the preset
    assert cfg.dropout == 0.3  # the preset
    assert cfg.d_ff == 1000  # the TOML over the preset
    assert cfg.n_layers == 2  # the flag over the TOML
    assert config_from_args(TrainConfig, args, toml=tables).warmup == 8000
    assert config_from_args(DecodeConfig, args, toml=tables).beam == 5


def test_load_toml_of_none_is_empty() -> None:
    assert load_toml(None) == {}


def test_a_bad_toml_file_is_a_user_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text("[model\nd_model = 3\n")
    with pytest.raises(UserError, match=r"broken\.toml: not valid TOML"):
        load_toml(bad)
    with pytest.raises(UserError, match=r"absent\.toml: config file not found"):
        load_toml(tmp_path / "absent.toml")
    odd = tmp_path / "odd.toml"
    odd.write_text("[modle]\nd_model = 3\n")
    with pytest.raises(UserError, match=r"odd\.toml: unknown table\(s\) modle"):
        load_toml(odd)


def test_an_unknown_toml_setting_is_a_user_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text("[model]\nd_modle = 3\n")
    with pytest.raises(UserError, match="d_modle"):
        config_from_args(ModelConfig, _parser().parse_args([]), toml=load_toml(path))


@pytest.mark.slow  # the whole demo twice, with a few seconds of training
def test_aiayn_demo_runs_end_to_end(tmp_path, capsys) -> None:
    """The whole flow on the numbers task (no apt needed), with a few seconds of training."""
    run = tmp_path / "runs" / "demo"
    args = ["demo", "--source", "numbers", "--run", str(run), "--test-limit", "5", "--no-progress"]
    assert main([*args, "--steps", "12", "--minutes", "5"]) == 0  # the steps decide
    out = capsys.readouterr().out
    assert "12 steps or 5 minutes" in out
    assert [p.name for p in (run / "checkpoints").glob("step_*")] == ["step_00000012"]
    assert "sacreBLEU" in out
    assert "nrefs:1" in out  # the score with its signature
    for name in ("average.safetensors", "evaluation.json", "test.hyp", "walkthrough.html"):
        assert (run / name).is_file(), name
    assert list((run / "attention").glob("*.png")), "no attention heatmaps"
    assert list((run / "plots").glob("*.png")), "no training curves"
    # A second demo reuses the prepared data and, resumed, trains on for --minutes.
    assert main([*args, "--minutes", "0.05", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "reusing the prepared data" in out
    assert "for 0.05 minutes" in out
    assert len(list((run / "checkpoints").glob("step_*"))) == 2


@pytest.mark.parametrize(("flag", "value"), [("--minutes", "0"), ("--steps", "-1")])
def test_aiayn_demo_rejects_a_bad_budget(tmp_path, capsys, flag: str, value: str) -> None:
    assert main(["demo", flag, value, "--run", str(tmp_path / "r")]) == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "budget"),
    [
        ([], ["--max-minutes", "60.0", "--max-steps", "1000"]),
        (["--steps", "0"], ["--max-minutes", "60.0", "--max-steps", "0"]),
    ],
    ids=["steps-decide", "minutes-decide"],
)
def test_demo_hands_its_budget_to_aiayn_train(tmp_path, monkeypatch, extra, budget) -> None:
    """By default 1000 steps with 60 minutes as a safety net; --steps 0 leaves it to the minutes."""
    import argparse

    from aiayn.cli import demo

    class Stop(Exception):
        pass

    trains: list[list[str]] = []

    def fake_cli(argv, quiet=False):
        if argv[0] == "train":
            trains.append(argv)
            raise Stop
        return 0

    monkeypatch.setattr(demo, "_cli", fake_cli)
    monkeypatch.setattr(demo, "_prepare", lambda args, data: "numbers")
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    with pytest.raises(Stop):
        demo.run(parser.parse_args(["--run", str(tmp_path / "demo"), *extra]))
    assert trains[0][-4:] == budget
    assert trains[0][trains[0].index("--config") + 1] == str(demo.RECIPE)  # recipes/demo.toml


def test_demo_reuses_prepared_data_only_when_its_settings_match(tmp_path, monkeypatch) -> None:
    """A demo-data directory of other settings (an older subset, vocabulary) is prepared anew."""
    import argparse
    from types import SimpleNamespace

    from aiayn.cli import demo

    built: list[argparse.Namespace] = []
    monkeypatch.setattr(demo, "_build", lambda args, data, source: built.append(args))
    manifest = {
        "source": "packaged",
        "options": {
            "max_words": demo.DEMO_MAX_WORDS,
            "min_words": demo.DEMO_MIN_WORDS,
            "vocab_size": demo.DEMO_VOCAB,
        },
        "source_info": {"origins": demo.DEMO_ORIGINS.split(",")},
    }
    monkeypatch.setattr("aiayn.data.load_prepared", lambda _: SimpleNamespace(manifest=manifest))
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    packaged = ["--no-progress", "--source", "packaged"]
    args = parser.parse_args(packaged)
    assert demo._prepare(args, tmp_path) == "packaged"
    assert built == []  # same settings: reused
    args = parser.parse_args([*packaged, "--origins", "help,ui,ding"])
    assert demo._prepare(args, tmp_path) == "packaged"
    assert [b.origins for b in built] == ["help,ui,ding"]
    built.clear()
    args = parser.parse_args([*packaged, "--max-words", "20", "--min-words", "3"])
    demo._prepare(args, tmp_path)
    assert [(b.max_words, b.min_words) for b in built] == [(20, 3)]
    built.clear()
    args = parser.parse_args([*packaged, "--vocab-size", "4000"])
    demo._prepare(args, tmp_path)
    assert [b.vocab_size for b in built] == [4000]


def test_aiayn_version_prints_the_package_version(capsys) -> None:
    import tomllib

    import aiayn

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert aiayn.__version__ == project["project"]["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"aiayn {aiayn.__version__}\n"


def _help(verb: str, capsys) -> str:
    assert main([verb, "--help"]) == 0
    return capsys.readouterr().out


def test_train_help_is_grouped_and_says_that_a_preset_changes_the_defaults(capsys) -> None:
    text = _help("train", capsys)
    headings = [line for line in text.splitlines() if line.endswith(":") and line[0] != " "]
    assert [h.split(" ")[0].rstrip(":") for h in headings] == [
        "options",
        "presets",
        "data",
        "output",
        "runtime",
        "model",
        "training",
    ]
    assert "A preset or a\n    schedule changes the defaults" in text
    section = text[text.index("\ndata:") : text.index("\noutput")]
    assert "--max-tokens" in section  # a TrainConfig field shown with the data
    section = text[text.index("\noutput") : text.index("\nruntime")]
    assert "--save-every-steps" in section
    assert "--log-every" in section
    assert "--positions {sinusoidal,sinusoidal-concat,learned}" in text  # choices listed
    assert "3.2.2: h (default 8)" in text  # the field's comment is its help


def test_every_literal_flag_lists_its_choices(capsys) -> None:
    assert "--length-penalty {gnmt,fairseq,none}" in _help("translate", capsys)
    assert "--length-penalty {gnmt,fairseq,none}" in _help("evaluate", capsys)
    text = _help("walkthrough", capsys)
    assert "--optimizer {adam,sgd}" in text
    assert "--lang {en,zh}" in text
    assert "WalkthroughConfig" not in text  # no internal class name
    assert "the example (defaults: the study note's toy example):" in text


# The runtime flags every verb shares: one converter each (issue 53) ---------------------------

RUNTIME_FLAGS = {  # the verbs that take each flag; every other verb refuses it
    "--threads": {"train", "translate", "evaluate", "demo", "table3", "explore"},
    "--device": {"train", "translate", "evaluate", "explore"},
}


def test_each_runtime_flag_has_one_converter_in_every_verb_that_takes_it() -> None:
    from aiayn.cli import build_parser, common

    parser = build_parser()
    (verbs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for flag, takers in RUNTIME_FLAGS.items():
        converter = common.threads if flag == "--threads" else common.device
        found = {
            name
            for name, sub in verbs.choices.items()
            for a in sub._actions
            if flag in a.option_strings
        }
        assert found == takers, flag
        for name in takers:
            (action,) = [a for a in verbs.choices[name]._actions if flag in a.option_strings]
            assert action.type is converter, (name, flag)
    seeds = {
        name: a
        for name, sub in verbs.choices.items()
        for a in sub._actions
        if "--seed" in a.option_strings
    }
    assert set(seeds) == {"prepare", "train", "walkthrough"}
    assert seeds["prepare"].type is common.seed  # train's and walkthrough's: their config's


def test_the_converters_accept_the_edges_of_their_ranges() -> None:
    from aiayn.cli.common import MAX_THREADS, device, seed, threads
    from aiayn.config import SEED_LIMIT, TrainConfig
    from aiayn.walkthrough import WalkthroughConfig

    assert threads("0") == 0  # the engine's default
    assert threads(str(MAX_THREADS)) == MAX_THREADS
    assert seed("0") == 0
    assert seed(str(SEED_LIMIT - 1)) == SEED_LIMIT - 1
    assert TrainConfig(seed=SEED_LIMIT - 1).seed == WalkthroughConfig(seed=SEED_LIMIT - 1).seed
    assert [device(d) for d in ("auto", "cpu", "cuda", "cuda:0", "cuda:07")] == [
        "auto",
        "cpu",
        "cuda",
        "cuda:0",
        "cuda:7",
    ]
    for bad in ("threads", "seed"):
        with pytest.raises(argparse.ArgumentTypeError):
            {"threads": threads, "seed": seed}[bad]("-1")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown device 'mps'"):
        device("mps")


def test_check_device_refuses_a_cuda_this_machine_lacks(monkeypatch) -> None:
    import torch

    from aiayn.cli.common import check_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert check_device(None) == check_device("auto") == "cpu"
    with pytest.raises(UserError, match=r"^--device cuda: CUDA is not available on this"):
        check_device("cuda")
    with pytest.raises(UserError, match=r"^--device: unknown device 'tpu'"):
        check_device("tpu")  # a value that did not come through the converter
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("auto") == "cuda"
    assert check_device("cuda:1") == "cuda:1"
    with pytest.raises(UserError, match=r"^--device cuda:2: this machine has 2 CUDA device"):
        check_device("cuda:2")


@pytest.mark.parametrize("verb", ["train", "explore"])
def test_threads_reach_torch_before_anything_is_loaded(verb, tmp_path, monkeypatch) -> None:
    """train and explore take --threads (as demo does); the count is set before loading."""
    import torch

    seen = []
    monkeypatch.setattr(torch, "set_num_threads", seen.append)
    (tmp_path / "empty").mkdir()
    if verb == "train":
        argv = ["train", "--data", str(tmp_path / "none"), "--run", str(tmp_path / "r")]
    else:  # an empty directory: nothing to load, so no server
        argv = ["explore", "--checkpoint", str(tmp_path / "empty"), "--no-browser"]
    assert main([*argv, "--threads", "3", "--device", "cpu"]) == 2  # then the data is missing
    assert seen == [3]


def test_a_flag_a_verb_does_not_take_points_to_the_verbs_help(capsys) -> None:
    assert main(["walkthrough", "--threads", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "aiayn walkthrough: error: unrecognized arguments: --threads 2 "
        "(see aiayn walkthrough --help)"
    )
