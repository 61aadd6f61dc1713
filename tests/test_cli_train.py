"""aiayn train / average / plot end to end in tmp_path, errors, and SIGTERM."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from aiayn.cli import main
from aiayn.train import latest_checkpoint, read_metrics

REPO = Path(__file__).resolve().parents[1]
SMALL = ["--preset", "tiny", "--d-model", "32", "--d-ff", "64", "--n-layers", "1"]
QUICK = ["--max-tokens", "300", "--warmup", "20", "--log-every", "2", "--no-progress"]


@pytest.fixture(scope="module")
def copy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data") / "copy"
    assert main(["prepare", "--source", "copy", "--out", str(out), "--num-pairs", "400"]) == 0
    return out


def test_train_resume_average_plot(copy_data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = ["train", "--data", str(copy_data), "--run", str(run), *SMALL, *QUICK]
    assert main([*args, "--max-steps", "4", "--valid-every", "2", "--save-every-steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "reached max_steps=4 at step 4" in out
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["d_model"] == 32
    assert (
        config["model"]["vocab_size"]
        == json.loads((copy_data / "manifest.json").read_text())["tokenizer"]["vocab_size"]
    )
    assert config["train"]["warmup"] == 20
    # Resume: --data comes from config.json; a train setting may change (max_steps).
    resume = ["train", "--run", str(run), "--resume", "--max-steps", "6", "--no-progress"]
    assert main([*resume, "--valid-bleu"]) == 0
    assert latest_checkpoint(run).name == "step_00000006"
    last_valid = [e for e in read_metrics(run) if e["event"] == "valid"][-1]
    assert last_valid["step"] == 6
    assert 0.0 <= last_valid["bleu"] <= 100.0  # greedy decoding + sacreBLEU ran
    assert json.loads((run / "config.json").read_text())["train"]["max_steps"] == 6
    # The checkpoint carries the data's tokenizer, so translate/evaluate need nothing else.
    from aiayn.weights import read_metadata

    meta = read_metadata(latest_checkpoint(run) / "model.safetensors")
    assert meta["tokenizer"] == (copy_data / "tokenizer.json").read_text(encoding="utf-8") or (
        json.loads(meta["tokenizer"]) == json.loads((copy_data / "tokenizer.json").read_text())
    )
    avg = tmp_path / "avg.safetensors"
    assert main(["average", str(run), "--last", "3", "--out", str(avg)]) == 0
    assert avg.is_file()
    assert main(["plot", str(run)]) == 0
    pngs = sorted(p.name for p in (run / "plots").glob("*.png"))
    assert pngs == ["bleu.png", "loss.png", "lr.png", "perplexity.png"]
    assert (run / "plots" / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_to_a_log_file_writes_plain_lines_and_checks_the_run_once(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """stderr not a terminal (capsys): no tqdm bar, a plain line every --log-every steps."""
    import aiayn.train
    import aiayn.train.loop

    data = tmp_path / "data"
    assert main(["prepare", "--source", "copy", "--out", str(data), "--num-pairs", "200"]) == 0
    prepared = capsys.readouterr()
    assert "\r" not in prepared.out + prepared.err  # prepare's bars are off too
    calls = []
    real_check = aiayn.train.loop.check_run

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real_check(*args, **kwargs)

    monkeypatch.setattr(aiayn.train.loop, "check_run", counted)
    monkeypatch.setattr(aiayn.train, "check_run", counted)
    run = tmp_path / "run"
    quick = ["--max-tokens", "300", "--warmup", "20", "--log-every", "2", "--max-steps", "4"]
    assert main(["train", "--data", str(data), "--run", str(run), *SMALL, *quick]) == 0
    captured = capsys.readouterr()
    assert len(calls) == 1  # the run, its config and its tokenizer checked once
    assert "\r" not in captured.out + captured.err
    lines = [x for x in captured.out.splitlines() if x.startswith("step ")]
    assert [x.split(":")[0] for x in lines if "loss" in x and "valid" not in x] == [
        "step 2/4",
        "step 4/4",
    ]
    assert "ppl" in lines[0]
    assert "tok/s" in lines[0]
    params = [x for x in captured.err.splitlines() if "parameters" in x]
    assert len(params) == 1
    assert params[0].startswith("aiayn train: ")
    assert f"run {run}" in params[0]


def test_the_progress_view_draws_a_bar_on_a_terminal_only(monkeypatch, capsys) -> None:
    from aiayn.cli.train import _Progress
    from aiayn.config import TrainConfig

    cfg = TrainConfig(max_steps=6, log_every=3)
    tick = {"event": "tick", "loss": 2.0, "nll": 1.5, "lr": 1e-3, "tokens": 100}
    for terminal in (False, True):
        monkeypatch.setattr(sys.stderr, "isatty", lambda terminal=terminal: terminal)
        view = _Progress(cfg, enabled=True)
        assert (view.bar is not None) == terminal
        for step in range(1, 7):
            view({**tick, "step": step})
        view.close()
        out = capsys.readouterr().out
        plain = [x.split(":")[0] for x in out.splitlines()]
        assert plain == ([] if terminal else ["step 3/6", "step 6/6"])


def test_plot_draws_bleu_when_logged(tmp_path: Path) -> None:
    events = [
        {"event": "train", "step": 1, "loss": 3.0, "nll": 2.5, "ppl": 12.2, "lr": 1e-4},
        {"event": "valid", "step": 1, "loss": 3.1, "nll": 2.6, "ppl": 13.5, "bleu": 1.5},
        {"event": "valid", "step": 2, "loss": 3.0, "nll": 2.5, "ppl": 12.2, "bleu": 2.5},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["plot", str(tmp_path), "--out", str(tmp_path / "p")]) == 0
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "bleu.png",
        "loss.png",
        "lr.png",
        "perplexity.png",
    ]


def test_plot_of_a_run_with_nothing_logged_is_one_line_and_makes_no_folder(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "metrics.jsonl").write_text("")
    assert main(["plot", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"aiayn plot: error: {tmp_path / 'metrics.jsonl'}: no train or valid events to plot yet\n"
    )
    assert not (tmp_path / "plots").exists()
    # Validation events alone (no train event, no BLEU): the two figures they fill, no more.
    valid = {"event": "valid", "step": 1, "loss": 3.1, "nll": 2.6, "ppl": 13.5}
    (tmp_path / "metrics.jsonl").write_text(json.dumps(valid) + "\n")
    assert main(["plot", str(tmp_path)]) == 0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["loss.png", "perplexity.png"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--warmup", "0"], "warmup: must be >= 1"),
        (["--device", "cuda:0" if not torch.cuda.is_available() else "cuda:99"], "--"),
        (["--resume"], "no such run directory"),
    ],
)
def test_train_errors_are_one_line(copy_data: Path, tmp_path: Path, capsys, extra, message) -> None:
    run = tmp_path / "run"
    code = main(["train", "--data", str(copy_data), "--run", str(run), *SMALL, *QUICK, *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len([line for line in err.splitlines() if line.startswith("aiayn train: error")]) == 1
    assert "Traceback" not in err


def test_train_refuses_missing_data_and_mismatched_resume(copy_data, tmp_path, capsys) -> None:
    assert main(["train", "--data", str(tmp_path / "nope"), "--run", str(tmp_path / "r")]) == 2
    assert "no prepared data directory" in capsys.readouterr().err
    run = tmp_path / "run"
    base = ["train", "--data", str(copy_data), "--run", str(run), *QUICK]
    assert main([*base, *SMALL, "--max-steps", "1", "--compile", "--device", "cpu"]) == 0
    capsys.readouterr()  # --compile is a CUDA option: a no-op on the CPU
    assert main([*base, "--resume", "--d-model", "48", "--max-steps", "2"]) == 2
    assert "architecture differs: d_model 48 != 32" in capsys.readouterr().err
    assert main([*base, *SMALL, "--max-steps", "2"]) == 2  # not --resume: never overwritten
    assert "already holds checkpoints" in capsys.readouterr().err
    assert latest_checkpoint(run).name == "step_00000001"


def test_sigterm_writes_a_checkpoint_and_exits_cleanly(copy_data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "aiayn", "train", "--data", str(copy_data), "--run", str(run)]
    cmd += [
        *SMALL,
        *QUICK,
        "--max-steps",
        "100000",
        "--log-every",
        "1",
        "--save-every-minutes",
        "0",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        metrics = run / "metrics.jsonl"
        while time.monotonic() < deadline and proc.poll() is None:
            if metrics.is_file() and metrics.read_text().count('"train"') >= 3:
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()[-2000:]
    events = read_metrics(run)
    assert events[-1]["event"] == "stop"
    assert events[-1]["reason"] == "interrupted by a signal"
    step = events[-1]["step"]
    assert step >= 3
    assert latest_checkpoint(run).name == f"step_{step:08d}"
    # ... and the run resumes from it.
    assert main(["train", "--run", str(run), "--resume", "--max-steps", str(step + 1)]) == 0
    assert latest_checkpoint(run).name == f"step_{step + 1:08d}"


def test_bf16_autocast_runs_on_the_cpu(copy_data: Path, tmp_path: Path, monkeypatch) -> None:
    """--bf16 on a CPU trains under torch.autocast("cpu", bfloat16): the matmuls of the step
    run in bf16 while the weights, the gradients and the loss stay float32; a CPU without
    native bf16 gets a warning (it would be slower), not a refusal."""
    from aiayn.train import runtime as rt
    from aiayn.train.distributed import World

    model = torch.nn.Linear(4, 4)
    _, autocast = rt.wrap(model, World(), rt.Runtime(bf16=True))  # type: ignore[arg-type]
    with autocast():
        y = model(torch.ones(2, 4))
    assert y.dtype == torch.bfloat16
    assert model.weight.dtype == torch.float32
    _, plain = rt.wrap(model, World(), rt.Runtime())  # type: ignore[arg-type]
    with plain():
        assert model(torch.ones(2, 4)).dtype == torch.float32
    warned: list[str] = []
    monkeypatch.setattr(rt, "cpu_bf16_native", lambda: False)
    monkeypatch.setattr(rt.log, "warning", lambda msg, *a: warned.append(msg))
    rt.wrap(model, World(), rt.Runtime(bf16=True))  # type: ignore[arg-type]
    assert warned
    assert "no native bf16" in warned[0]
    monkeypatch.undo()
    run = tmp_path / "run"
    args = ["train", "--data", str(copy_data), "--run", str(run), *SMALL, *QUICK, "--bf16"]
    assert main([*args, "--max-steps", "4"]) == 0
    losses = [
        json.loads(line)["loss"]
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if json.loads(line).get("event") == "train"
    ]
    assert losses
    assert all(math.isfinite(x) for x in losses)


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ("[train]\nthreads = 2\n", "unknown setting(s) in [train]: threads (--threads: how to run"),
        ("[model]\nd_modle = 8\n", "unknown setting(s) in [model]: d_modle"),
        ("[train]\nwarmup = 'ten'\n", "[train] warmup: must be an integer"),
    ],
)
def test_a_bad_config_is_one_line_before_the_data_is_looked_at(
    tmp_path: Path, capsys, toml: str, line: str
) -> None:
    """An unknown key of a --config table (or a value of the wrong type) is refused in one line
    naming the file, the table and the key, before the data or the run is opened: the data
    directory here does not exist, and its refusal must not come first."""
    config = tmp_path / "c.toml"
    config.write_text(toml, encoding="utf-8")
    argv = ["--config", str(config), "--data", str(tmp_path / "none"), "--run", str(tmp_path / "r")]
    assert main(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aiayn train: error: {config}: ")
    assert line in err
    assert err.count("\n") == 1
    assert not (tmp_path / "r").exists()
