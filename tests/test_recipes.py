"""recipes/: each recipe is data `aiayn train --config` loads, and recipes/run.py runs one end to
end (prepare, train for the budget, average chosen on valid, test once) on a tiny Multi30k."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from aiayn.train import Settings, resolve_configs
from tests.multi30k_support import write_raw

REPO = Path(__file__).resolve().parents[1]
RECIPES = sorted((REPO / "recipes").glob("*.toml"))
WORDS = ["a", "dog", "runs", "on", "the", "green", "grass", "while", "two", "men", "watch"]
SPEC = importlib.util.spec_from_file_location("recipe_runner", REPO / "recipes" / "run.py")
runner = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(runner)

TINY = """# python recipes/run.py tiny.toml
[recipe]
source = "multi30k"
vocab_size = 300
average = [1, 2, 3]
{extra}
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_layers = 1
dropout = 0.0

[train]
max_steps = {steps}
warmup = 2
max_tokens = 400
save_every_steps = 2
keep_last = 10
valid_every = 0
log_every = 1

[decode]
beam = 2
"""


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    """Multi30k's raw files: 120 training pairs, 8 valid, 8 test (made-up captions)."""

    def pairs(n: int, offset: int) -> list[tuple[str, str]]:
        lines = [" ".join(WORDS[(i + offset + k) % len(WORDS)] for k in range(4)) for i in range(n)]
        return [(line + ".", line.upper() + ".") for line in lines]

    root = tmp_path_factory.mktemp("m30k")
    write_raw(root, {"train": pairs(120, 0), "val": pairs(8, 1), "test_2016_flickr": pairs(8, 2)})
    return root


def _recipe(tmp_path: Path, steps: int = 4, extra: str = "") -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY.format(steps=steps, extra=extra), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_a_recipe_starts_with_its_command_and_is_a_training_config(path: Path) -> None:
    """Line 1 is the command that runs the recipe; `aiayn train --config` merges its tables
    (its [recipe] passed over) and the runner reads it; no figure of a result is in it."""
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    command = "# aiayn demo " if path.stem == "demo" else f"# python recipes/run.py {path.name}"
    assert first.startswith(command.replace("run.py ", "run.py recipes/"))
    recipe, tables = runner.read_recipe(path)
    model, train = resolve_configs(Settings(config_file=path), recipe["vocab_size"])
    assert (model.d_model, train.warmup) == (tables["model"]["d_model"], tables["train"]["warmup"])
    assert not re.search(r"(?i)bleu\s*=|chrf\s*=|score\s*=", text)


def test_the_runner_trains_chooses_on_valid_and_tests_once(tmp_path, raw, capsys) -> None:
    run = tmp_path / "run"
    argv = [str(_recipe(tmp_path)), "--run", str(run), "--multi30k-dir", str(raw)]
    assert runner.main(argv) == 0
    result = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert (result["steps"], result["budget_steps"]) == (4, 4)
    assert set(result["valid"]) == {"1", "2"}  # 4 steps, saved every 2: two checkpoints
    best = max(result["valid"].values(), key=lambda v: v["sacrebleu"]["score"])
    assert result["valid"][str(result["averaged_checkpoints"])] == best
    assert {"sacrebleu", "moses_bleu", "chrf", "perplexity"} <= set(result)
    assert result["command"] == f"python recipes/run.py {argv[0]} --run RUN --multi30k-dir DIR"
    assert result["machine"]["matmul_peak_gflops"] > 0
    # Again: refused without --resume; with it the tested run is not tested a second time.
    assert runner.main(argv) == 2
    assert "exists; pass --resume" in capsys.readouterr().err
    before = (run / "results.json").read_bytes()
    assert runner.main([*argv, "--resume"]) == 0
    assert "done and tested" in capsys.readouterr().out
    assert (run / "results.json").read_bytes() == before


def test_the_runner_trains_to_convergence_and_resumes(tmp_path, raw) -> None:
    """With patience: checks every check_every updates on valid, stops at max_updates at the
    latest; a run stopped before its test goes on with --resume, its curve kept."""
    extra = "patience = 100\ncheck_every = 2\nmax_updates = 6\n"
    path, run = _recipe(tmp_path, steps=2, extra=extra), tmp_path / "run"
    argv = [str(path), "--run", str(run), "--multi30k-dir", str(raw), "--limit", "4"]
    runner.prepare_data(runner.read_recipe(path)[0], tmp_path / "run-data", raw)
    runner.train_to(path, tmp_path / "run-data", run, {}, None)  # stopped after 2 updates
    assert runner.trained(run)[0] == 2
    assert runner.main([*argv, "--resume"]) == 0
    result = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert [c["step"] for c in result["curve"]] == [2, 4, 6]
    assert result["steps"] == 6


def test_a_bad_recipe_is_one_line(tmp_path, capsys) -> None:
    path = _recipe(tmp_path, extra="epochs = 3\n")
    assert runner.main([str(path), "--run", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == f"run.py: error: {path}: [recipe]: unknown key(s) epochs\n"
