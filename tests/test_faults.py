"""Fault injection (issue 16): kill -9, full disks, flipped bytes, two trainings, Ctrl-C twice.

The kill trials fork a training of a tiny model and kill it (SIGKILL) at random moments and at
chosen points of the write protocol (``AIAYN_FAULT``); tests/fault_trials.py holds the trial
machinery and runs the long series. After every kill: no corrupt and no lost checkpoint, no
leftover once start-up has cleaned up, and the run resumes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from aiayn import run_dir as layout
from aiayn import storage
from aiayn.cli import main
from aiayn.errors import UserError
from aiayn.storage import DiskFull
from aiayn.train import checkpoints as ckpt
from aiayn.train import latest_checkpoint, list_checkpoints, train
from tests.fault_trials import run_trials
from tests.fault_trials import setup as trial_setup
from tests.storage_support import small_disk

REPO = Path(__file__).resolve().parents[1]

SMALL = ["--preset", "tiny", "--d-model", "16", "--d-ff", "32", "--n-layers", "1"]
QUICK = ["--max-tokens", "300", "--warmup", "20", "--log-every", "2", "--no-progress"]


@pytest.fixture(scope="module")
def copy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data") / "copy"
    assert main(["prepare", "--source", "copy", "--out", str(out), "--num-pairs", "200"]) == 0
    return out


def trained_run(tmp_path: Path, steps: int = 6, keep_last: int = 100) -> Path:
    """A run of the tiny model with a checkpoint every 3 steps (library train, in process)."""
    run = tmp_path / "run"
    model, cfg, data = trial_setup(max_steps=steps)
    import dataclasses

    train(model, dataclasses.replace(cfg, keep_last=keep_last), data, run)
    return run


def one_line_error(capsys, *names: str) -> str:
    """The one error line on stderr (train may print its one-line header before it)."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1, err
    assert err.splitlines()[-1] == errors[0], err
    for name in names:
        assert name in errors[0], err
    return errors[0]


# kill -9 -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_trials_lose_nothing_and_leave_nothing(tmp_path: Path) -> None:
    """24 kills: every chosen point of the checkpoint write and the prune, and random moments."""
    counts = run_trials(24, seed=0, workdir=tmp_path, max_delay=0.6)
    assert counts["details"] == []
    assert counts["trials"] == 24
    assert counts["at_points"] == 12  # each of the 10 points at least once
    assert counts["not_killed"] == 0  # every point was reached, every child was killed
    assert counts["corrupt"] == counts["lost"] == counts["leftover"] == 0
    assert counts["resume_failed"] == 0
    assert counts["final_resume"] == "ok"
    assert counts["leftovers_removed"] > 0  # kills inside writes did leave temporaries


def fork_and_die(fault: str, fn) -> None:
    """Run fn in a forked child with AIAYN_FAULT=fault; it must die of SIGKILL there."""
    pid = os.fork()
    if pid == 0:
        try:
            os.environ["AIAYN_FAULT"] = fault
            storage._fault_hits.clear()
            fn()
        finally:
            os._exit(0)  # not reached when the fault fires
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), f"{fault} was never reached"
    assert os.WTERMSIG(status) == signal.SIGKILL


def test_a_killed_prepare_leaves_a_temporary_the_next_prepare_removes(
    tmp_path: Path, caplog
) -> None:
    out = tmp_path / "data"
    args = ["prepare", "--source", "copy", "--out", str(out), "--num-pairs", "60"]
    fork_and_die("prepare.rename", lambda: main(args))
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1
    assert left[0].startswith(".data.tmp-")
    assert main(args) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["data"]
    assert f"removed {tmp_path / left[0]}" in caplog.text
    # killed between moving the old directory away and renaming the new one in: put back
    fork_and_die("directory.replace", lambda: main([*args, "--overwrite"]))
    assert not out.exists()
    assert main([*args, "--overwrite"]) == 0
    assert "restored" in caplog.text
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_a_killed_average_leaves_a_temporary_the_next_average_removes(
    tmp_path: Path, caplog
) -> None:
    run = trained_run(tmp_path)
    out = tmp_path / "avg.safetensors"
    args = ["average", str(run), "--last", "2", "--out", str(out)]
    fork_and_die("write.replace", lambda: main(args))
    assert [p.name for p in tmp_path.glob(".avg.safetensors.tmp-*")]
    assert main(args) == 0
    assert not list(tmp_path.glob(".avg*"))
    assert "removed" in caplog.text


def test_a_half_pruned_or_half_written_checkpoint_is_never_complete(tmp_path: Path) -> None:
    run = trained_run(tmp_path)
    assert [p.name for p in list_checkpoints(run)] == ["step_00000003", "step_00000006"]
    root = run / "checkpoints"
    # What the old pruning left: meta.json and trainer.pt, no model, no manifest.
    half = root / "step_00000009"
    half.mkdir()
    for f in ("meta.json", "trainer.pt"):
        (half / f).write_bytes((root / "step_00000006" / f).read_bytes())
    assert [p.name for p in list_checkpoints(run)] == ["step_00000003", "step_00000006"]
    (root / "latest").write_text("step_00000009\n")
    assert latest_checkpoint(run).name == "step_00000006"  # with a warning
    # A checkpoint of an older aiayn (three files, no manifest): accepted, unverified.
    legacy = root / "step_00000003"
    (legacy / "manifest.json").unlink()
    assert [p.name for p in list_checkpoints(run)] == ["step_00000003", "step_00000006"]
    # A complete checkpoint that lost a file is corrupt: one error naming it, no fallback.
    (root / "step_00000006" / "model.safetensors").unlink()
    with pytest.raises(UserError, match=r"step_00000006/model\.safetensors: missing"):
        list_checkpoints(run)


# Flipped bytes -----------------------------------------------------------------------------


def flip(path: Path, where: float = 0.6, n: int = 1) -> None:
    data = bytearray(path.read_bytes())
    i = int(len(data) * where)
    for k in range(n):
        data[i + k] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("model.safetensors", 0.7),  # tensor data
        ("model.safetensors", 0.02),  # the header
        ("trainer.pt", 0.5),
        ("meta.json", 0.5),
        ("manifest.json", 0.5),
    ],
)
def test_a_flipped_byte_in_a_checkpoint_is_one_error_naming_the_file(
    tmp_path: Path, name: str, where: float
) -> None:
    run = trained_run(tmp_path, steps=3)
    d = latest_checkpoint(run)
    flip(d / name, where)
    model, cfg, data = trial_setup(max_steps=4)
    with pytest.raises(UserError) as caught:
        train(model, cfg, data, run, resume=True)
    message = str(caught.value)
    assert "\n" not in message
    assert f"step_00000003/{name}" in message or "step_00000003/manifest.json" in message


def test_hash_checks_can_be_switched_off_for_huge_files(tmp_path: Path) -> None:
    from aiayn.weights import load_state

    run = trained_run(tmp_path, steps=3)
    f = latest_checkpoint(run) / "model.safetensors"
    flip(f, 0.8)
    with pytest.raises(UserError, match="SHA-256 differs"):
        load_state(f)
    storage.set_hash_checks(False)
    try:
        load_state(f)  # sizes only: the flip goes unseen, as documented
    finally:
        storage.set_hash_checks(None)


def test_a_flipped_byte_in_an_averaged_file_is_refused(tmp_path: Path) -> None:
    from aiayn.train import average_to_file
    from aiayn.weights import load_state

    run = trained_run(tmp_path)
    out = tmp_path / "avg.safetensors"
    average_to_file([d / "model.safetensors" for d in list_checkpoints(run)], out)
    load_state(out)
    flip(out, 0.8)
    with pytest.raises(UserError, match=r"avg\.safetensors: its weights do not match"):
        load_state(out)


@pytest.mark.parametrize(
    "rel", ["ids/train.src.bin", "ids/train.tgt.idx", "tokenizer.json", "text/valid.src"]
)
def test_a_flipped_byte_in_prepared_data_is_one_error_naming_the_file(
    copy_data: Path, tmp_path: Path, rel: str, capsys
) -> None:
    import shutil

    from aiayn.data import load_prepared

    data = tmp_path / "data"
    shutil.copytree(copy_data, data)
    flip(data / rel, 0.5)
    with pytest.raises(UserError, match=f"{rel}: SHA-256 differs"):
        load_prepared(data)
    run = tmp_path / "run"
    assert main(["train", "--data", str(data), "--run", str(run), *SMALL, *QUICK]) == 2
    one_line_error(capsys, rel)


def test_a_flipped_byte_in_the_prepared_manifest(copy_data: Path, tmp_path: Path) -> None:
    import shutil

    from aiayn.data import load_prepared

    data = tmp_path / "data"
    shutil.copytree(copy_data, data)
    text = (data / "manifest.json").read_text()
    i = text.index('"pairs": ') + len('"pairs": ')
    (data / "manifest.json").write_text(text[:i] + "9" + text[i + 1 :])  # a count changed
    with pytest.raises(UserError, match=r"manifest\.json: damaged"):
        load_prepared(data)


@pytest.mark.slow
def test_cli_readers_refuse_a_flipped_checkpoint_in_one_line(
    copy_data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    args = ["train", "--data", str(copy_data), "--run", str(run), *SMALL, *QUICK]
    assert main([*args, "--max-steps", "2", "--save-every-steps", "1"]) == 0
    capsys.readouterr()
    f = latest_checkpoint(run) / "model.safetensors"
    flip(f, 0.8)
    src = tmp_path / "in.txt"
    src.write_text("a b c\n")
    assert main(["translate", "--checkpoint", str(run), "--input", str(src)]) == 2
    one_line_error(capsys, "step_00000002/model.safetensors", "SHA-256")
    assert main(["average", str(run), "--last", "2", "--out", str(tmp_path / "a.st")]) == 2
    one_line_error(capsys, "step_00000002/model.safetensors")
    assert main(["train", "--run", str(run), "--resume", "--max-steps", "3", "--no-progress"]) == 2
    one_line_error(capsys, "step_00000002/model.safetensors")
    flip(f, 0.8)  # back as it was
    flip(latest_checkpoint(run) / "trainer.pt", 0.5)
    assert main(["train", "--run", str(run), "--resume", "--max-steps", "3", "--no-progress"]) == 2
    one_line_error(capsys, "step_00000002/trainer.pt")


# A full disk -------------------------------------------------------------------------------


def test_a_full_disk_during_training_keeps_the_last_checkpoint(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "1m") as disk:
        run = disk / "run"
        model, cfg, data = trial_setup(max_steps=3)
        train(model, cfg, data, run)
        used = sum(f.stat().st_size for f in (run / "checkpoints" / "step_00000003").iterdir())
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * max(free - used // 2, 0))  # room for half of one
        before = {f.name: f.read_bytes() for f in (run / "checkpoints" / "step_00000003").iterdir()}
        model, cfg, data = trial_setup(max_steps=6)
        with pytest.raises(DiskFull, match=r"^no space left on device while writing .*step_0000"):
            train(model, cfg, data, run, resume=True)
        root = run / "checkpoints"
        assert sorted(p.name for p in root.iterdir()) == ["latest", "step_00000003"]
        after = {f.name: f.read_bytes() for f in (root / "step_00000003").iterdir()}
        assert after == before
        (disk / "filler").unlink()
        model, cfg, data = trial_setup(max_steps=6)
        assert train(model, cfg, data, run, resume=True).progress.step == 6


def test_a_full_disk_in_prepare_and_average_is_one_line(
    copy_data: Path, tmp_path: Path, capsys
) -> None:
    run = trained_run(tmp_path)
    with small_disk(tmp_path / "disk", "32k") as disk:
        (disk / "earlier").write_text("kept")
        args = ["prepare", "--source", "copy", "--out", str(disk / "data"), "--num-pairs", "2000"]
        assert main(args) == 2
        one_line_error(capsys, "no space left on device while writing", str(disk / "data"))
        assert sorted(p.name for p in disk.iterdir()) == ["earlier"]
        out = disk / "avg.safetensors"
        (disk / "filler").write_bytes(b"\0" * (os.statvfs(disk).f_bavail * 4096 - 4096))
        assert main(["average", str(run), "--last", "2", "--out", str(out)]) == 2
        one_line_error(capsys, f"no space left on device while writing {out}")
        assert sorted(p.name for p in disk.iterdir()) == ["earlier", "filler"]


# Two trainings on one run ------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_training_on_a_run_is_refused_and_a_dead_ones_lock_taken_over(
    copy_data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "aiayn", "train", "--data", str(copy_data), "--run", str(run)]
    cmd += [*SMALL, *QUICK, "--max-steps", "100000", "--save-every-steps", "5"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if latest_checkpoint(run) is not None:
                break
            time.sleep(0.2)
        assert proc.poll() is None
        base = ["train", "--run", str(run), "--no-progress"]
        assert main([*base, "--resume"]) == 2
        one_line_error(capsys, f"in use by another training (pid {proc.pid})")
        assert main([*base, "--data", str(copy_data), *SMALL]) == 2
        one_line_error(capsys, f"pid {proc.pid}")
        with pytest.raises(UserError, match=f"pid {proc.pid}"):  # the library refuses too
            ckpt_session_start(run)
    finally:
        proc.kill()  # kill -9: the kernel releases its lock
        proc.wait()
    step = int(latest_checkpoint(run).name[5:])
    assert main(["train", "--run", str(run), "--resume", "--max-steps", str(step + 1)]) == 0
    assert latest_checkpoint(run).name == f"step_{step + 1:08d}"
    events = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [e["step"] for e in events if e["event"] == "train"]
    assert steps == sorted(steps)  # one writer: no interleaved events


def ckpt_session_start(run: Path) -> None:
    from aiayn.train.distributed import World
    from aiayn.train.session import Session

    model_cfg, cfg, data = trial_setup()
    from aiayn.model import Transformer

    model = Transformer(model_cfg)
    session = Session(run, World(), model, torch.optim.Adam(model.parameters()), cfg, data)
    try:
        session.start(model_cfg, resume=True)
    finally:
        session.close()


# Ctrl-C twice ------------------------------------------------------------------------------


def test_a_second_ctrl_c_during_the_final_save_does_not_lose_it(
    tmp_path: Path, monkeypatch
) -> None:
    run = tmp_path / "run"
    model, cfg, data = trial_setup(max_steps=1000)
    real_save_model = ckpt.save_model
    interrupts = []

    def save_model_then_ctrl_c(*args, **kwargs):
        real_save_model(*args, **kwargs)
        if interrupts:  # the final save: the user presses Ctrl-C again, mid-write
            os.kill(os.getpid(), signal.SIGINT)
            interrupts.append("second")

    def on_event(event):
        if event["event"] == "tick" and event["step"] == 4 and not interrupts:
            os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C
            interrupts.append("first")

    monkeypatch.setattr(ckpt, "save_model", save_model_then_ctrl_c)
    result = train(model, cfg, data, run, on_event=on_event)
    assert interrupts == ["first", "second"]
    assert result.stop_reason == "interrupted by a signal"
    assert result.progress.step == 4
    assert latest_checkpoint(run).name == "step_00000004"  # the final save completed
    assert layout.is_complete(run / "checkpoints" / "step_00000004")
    assert not [p for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]
