"""aiayn/storage.py: the write protocol, disk full, manifests, leftovers, the directory lock."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from aiayn import storage
from aiayn.errors import UserError
from aiayn.storage import DirectoryLock, DiskFull, atomic_write
from tests.storage_support import small_disk

REPO = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_atomic_write_leaves_no_partial_file_when_the_writer_raises(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"

    def broken(tmp: Path) -> None:
        tmp.write_bytes(b"half of a fi")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        atomic_write(path, broken)
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temporary
    path.write_bytes(b"the old, complete content")
    with pytest.raises(RuntimeError):
        atomic_write(path, broken)
    assert path.read_bytes() == b"the old, complete content"
    assert list(tmp_path.iterdir()) == [path]
    atomic_write(path, lambda tmp: tmp.write_bytes(b"new"))
    assert path.read_bytes() == b"new"
    assert list(tmp_path.iterdir()) == [path]
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # an ordinary file, not mkstemp's 0600


def test_the_temporary_is_fsynced_then_renamed_then_the_directory_fsynced(
    tmp_path: Path, monkeypatch
) -> None:
    calls = []
    monkeypatch.setattr(storage, "fsync_file", lambda p: calls.append(("file", Path(p).name)))
    monkeypatch.setattr(storage, "fsync_dir", lambda p: calls.append(("dir", Path(p))))
    real_replace = os.replace
    monkeypatch.setattr(
        storage.os,
        "replace",
        lambda a, b: (calls.append(("replace", Path(b).name)), real_replace(a, b)),
    )
    storage.write_text(tmp_path / "x.txt", "hello")
    assert [c[0] for c in calls] == ["file", "replace", "dir"]
    assert calls[0][1].startswith(f".x.txt.tmp-{os.getpid()}-")  # pid in the name
    assert calls[2][1] == tmp_path


def test_torch_short_write_and_enospc_are_disk_full(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.symlink_to("/dev/full")  # every write fails with ENOSPC
    with pytest.raises(RuntimeError) as caught:
        torch.save({"x": torch.zeros(1000)}, full)
    assert storage.is_disk_full(caught.value), caught.value  # "unexpected pos": no errno
    assert storage.is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert storage.is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not storage.is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not storage.is_disk_full(ValueError("unexpected pos"))


def test_injected_enospc_on_every_step_of_the_protocol(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"old")

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    for name in ("fsync_file",):
        with monkeypatch.context() as m:
            m.setattr(storage, name, no_space)
            with pytest.raises(
                DiskFull, match=r"^no space left on device while writing .*model\.bin$"
            ):
                atomic_write(path, lambda tmp: tmp.write_bytes(b"new"))
    with pytest.raises(DiskFull):
        atomic_write(path, lambda tmp: no_space())
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.bin"]
    with monkeypatch.context() as m:  # a directory build
        m.setattr(storage, "fsync_tree", no_space)
        with (
            pytest.raises(DiskFull, match=r"while writing .*built"),
            storage.atomic_directory(tmp_path / "built") as d,
        ):
            (d / "f").write_text("x")
    assert [p.name for p in tmp_path.iterdir()] == ["model.bin"]


@pytest.mark.parametrize("writer", ["bytes", "torch", "safetensors"])
def test_a_real_full_disk(tmp_path: Path, writer: str) -> None:
    from aiayn.config import ModelConfig
    from aiayn.model import Transformer
    from aiayn.weights import save_model

    with small_disk(tmp_path / "disk", "64k") as disk:
        (disk / "earlier.txt").write_text("complete")
        target = disk / "big"
        cfg = ModelConfig(vocab_size=500, d_model=64, n_heads=2, d_ff=64, n_layers=1)
        write = {
            "bytes": lambda: atomic_write(target, lambda tmp: tmp.write_bytes(b"x" * 200_000)),
            "torch": lambda: atomic_write(target, lambda tmp: torch.save(torch.zeros(50_000), tmp)),
            "safetensors": lambda: save_model(target, Transformer(cfg)),
        }[writer]
        with pytest.raises(DiskFull, match=f"no space left on device while writing {target}$"):
            write()
        assert sorted(p.name for p in disk.iterdir()) == ["earlier.txt"]
        assert (disk / "earlier.txt").read_text() == "complete"


def test_append_is_cut_back_on_a_failed_write(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "16k") as disk:
        log_file = disk / "metrics.jsonl"
        storage.append_text(log_file, '{"step": 1}\n')
        with pytest.raises(DiskFull, match=r"metrics\.jsonl"):
            storage.append_text(log_file, "x" * 40_000 + "\n")
        text = log_file.read_text()
        assert text.startswith('{"step": 1}\n')
        assert text.endswith("\n")  # no half line


# Manifests ---------------------------------------------------------------------------------


def test_manifest_checks_sizes_hashes_and_itself(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"0123456789")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("text")
    doc = storage.write_manifest(tmp_path, {"format": "test"})
    assert set(doc["files"]) == {"a.bin", "sub/b.txt"}
    manifest = storage.read_manifest(tmp_path)
    storage.check_files(tmp_path, manifest)
    (tmp_path / "a.bin").write_bytes(b"0123456780")  # same size, one byte differs
    with pytest.raises(UserError, match=r"a\.bin: SHA-256 differs"):
        storage.check_files(tmp_path, manifest)
    storage.check_files(tmp_path, manifest, hashes=False)  # sizes only: passes
    storage.set_hash_checks(False)
    try:
        storage.check_files(tmp_path, manifest)
    finally:
        storage.set_hash_checks(None)
    (tmp_path / "a.bin").write_bytes(b"012")
    with pytest.raises(UserError, match=r"a\.bin: 3 bytes, its manifest says 10"):
        storage.check_files(tmp_path, manifest, hashes=False)
    (tmp_path / "a.bin").unlink()
    with pytest.raises(UserError, match=r"a\.bin: missing"):
        storage.check_files(tmp_path, manifest)
    text = (tmp_path / "manifest.json").read_text()
    (tmp_path / "manifest.json").write_text(text.replace('"test"', '"tesT"'))
    with pytest.raises(UserError, match=r"manifest\.json: damaged"):
        storage.read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(text[:20])
    with pytest.raises(UserError, match=r"manifest\.json: unreadable manifest"):
        storage.read_manifest(tmp_path)


# Leftovers ---------------------------------------------------------------------------------


def test_leftovers_of_dead_writers_are_removed_and_live_ones_kept(tmp_path: Path, caplog) -> None:
    dead = dead_pid()
    live = subprocess.Popen(["sleep", "30"])
    try:
        names = {
            f".step_00000004.tmp-{dead}-abc123": "dir",
            f".latest.tmp-{dead}-abc123": "file",
            f".avg.safetensors.tmp-{live.pid}-abc123": "file",  # a writer still at work
            f".data.partial-{dead}-k2j3": "dir",  # prepare of an older aiayn
            ".latest.k2j3abcd.tmp": "file",  # mkstemp of an older aiayn, no pid
            "step_00000002": "dir",
            "latest": "file",
        }
        for name, kind in names.items():
            if kind == "dir":
                (tmp_path / name).mkdir()
                (tmp_path / name / "model.safetensors").write_bytes(b"half")
            else:
                (tmp_path / name).write_text("x")
        with caplog.at_level(logging.WARNING):
            removed = storage.remove_leftovers(tmp_path)
        assert {p.name for p in removed} == {
            f".step_00000004.tmp-{dead}-abc123",
            f".latest.tmp-{dead}-abc123",
            f".data.partial-{dead}-k2j3",
        }
        assert f"left by process {dead}, which is no longer running" in caplog.text
        # without a pid: kept unless old, or unless the caller holds the directory's lock
        assert (tmp_path / ".latest.k2j3abcd.tmp").exists()
        assert [p.name for p in storage.remove_leftovers(tmp_path, owned=True)] == [
            ".latest.k2j3abcd.tmp"
        ]
        assert (tmp_path / f".avg.safetensors.tmp-{live.pid}-abc123").exists()
        assert (tmp_path / "step_00000002").is_dir()
        assert (tmp_path / "latest").is_file()
    finally:
        live.kill()
        live.wait()
    assert storage.remove_leftovers(tmp_path, names=["other"]) == []
    assert len(storage.remove_leftovers(tmp_path, names=["avg.safetensors"])) == 1


def test_a_replace_cut_short_is_put_back(tmp_path: Path) -> None:
    dead = dead_pid()
    old = tmp_path / f".data.old-{dead}-abc123"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    storage.remove_leftovers(tmp_path, is_complete=lambda p: (p / "manifest.json").is_file())
    assert (tmp_path / "data" / "manifest.json").is_file()
    # ... but not over a directory that is there, and not when incomplete
    old.mkdir()
    storage.remove_leftovers(tmp_path, is_complete=lambda p: True)
    assert not old.exists()


def test_a_pid_that_runs_is_alive_and_zombies_are_not() -> None:
    assert storage.pid_alive(os.getppid())
    assert not storage.pid_alive(dead_pid())
    assert not storage.pid_alive(os.getpid())  # our own name at start-up: an earlier process
    child = subprocess.Popen(["true"])
    time.sleep(0.2)  # ended, not yet reaped: a zombie
    try:
        assert not storage.pid_alive(child.pid)
    finally:
        child.wait()


# The lock ----------------------------------------------------------------------------------

HOLD = """
import sys, time
sys.path.insert(0, sys.argv[2])
from aiayn.storage import DirectoryLock
DirectoryLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_a_lock_is_refused_while_held_and_taken_over_after_kill(tmp_path: Path, caplog) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path), str(REPO)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(UserError, match=rf"in use by another run \(pid {holder.pid}\)"):
            DirectoryLock(tmp_path).acquire()
    finally:
        holder.kill()  # SIGKILL: the kernel releases the lock
        holder.wait()
    with caplog.at_level(logging.DEBUG), DirectoryLock(tmp_path) as lock:
        assert f"from pid {holder.pid}, which is no longer running" in caplog.text
        with DirectoryLock(tmp_path):  # re-entrant within one process
            pass
        assert lock.held
        assert (tmp_path / "lock").read_text().strip() == str(os.getpid())
    with DirectoryLock(tmp_path):  # released
        pass


def test_fault_point_kills_the_nth_time() -> None:
    code = "from aiayn import storage\nfor i in range(5):\n print(i, flush=True)\n"
    code += " storage.fault_point('x')"
    env = {**os.environ, "AIAYN_FAULT": "x@3", "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert res.returncode == -9
    assert res.stdout.split() == ["0", "1", "2"]
    env["AIAYN_FAULT"] = "y"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert res.returncode == 0
