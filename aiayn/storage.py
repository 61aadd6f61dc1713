"""Files on disk: one write protocol, manifests, what dead writers left, a directory lock.

Every file aiayn writes (checkpoints, averages, tokenizers, prepared data, plots, downloads,
reports, configs) goes through ``atomic_write`` or ``atomic_directory``:

1. write into a temporary beside the target, ``.NAME.tmp-PID-XXXXXX`` (same directory, so
   the rename cannot cross file systems; the writer's process id is in the name);
2. flush it to the disk (``fsync``);
3. ``os.replace`` it over the target: the name holds the old complete content or the new
   complete content, never a mixture;
4. ``fsync`` the directory, so that the rename itself survives a power cut.

A directory (a checkpoint, a prepared data directory) is built the same way as a whole and is
*complete* only when its ``manifest.json`` (every file's name, size and SHA-256) is present:
it is written last. Readers check the files against it (sizes always, hashes unless switched
off with ``set_hash_checks(False)`` or ``AIAYN_HASH_CHECK=0``), so a flipped byte is one
``UserError`` naming the file.

A full disk on any write path is a ``DiskFull`` error ("no space left on device while writing
FILE"); the temporary is removed, and what existed before is untouched. ``remove_leftovers``
deletes the temporaries of writers that died (kill -9, power cut) and logs each one; a
temporary whose process is still running is kept. ``DirectoryLock`` is an OS advisory lock
(``fcntl.flock``) that the kernel releases when its holder dies, so one training owns a run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import time
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from aiayn.errors import UserError

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SELF_DIGEST = "manifest_sha256"  # the manifest's own hash, over its other keys
LEGACY_AGE_S = 3600.0  # a temporary without a process id is a leftover once this old

# .NAME.tmp-PID-XXXX (a write in progress), .NAME.old-PID-XXXX (the previous NAME during a
# replace), .NAME.pruned-PID-XXXX (an old checkpoint being deleted), .NAME.partial-PID-XXXX
# (prepare before this module existed).
_TEMP = re.compile(r"^\.(?P<name>.+?)\.(?P<kind>tmp|old|pruned|partial)-(?P<pid>\d+)(?:-\w+)?$")
_LEGACY = re.compile(r"^\.(?P<name>.+)\.\w{6,8}\.(?:tmp|part)$")  # mkstemp's .NAME.XXXXXXXX.tmp


class DiskFull(UserError):
    """The file system ran out of space (or quota) while a file was being written."""


# The write protocol --------------------------------------------------------------------------


def temp_name(path: str | Path, kind: str = "tmp") -> Path:
    """``.NAME.KIND-PID-XXXXXX`` beside path: hidden, with the writer's pid, never reused."""
    path = Path(path)
    return path.parent / f".{path.name}.{kind}-{os.getpid()}-{secrets.token_hex(3)}"


def _new_temp_file(path: Path) -> Path:
    """Create the (empty) temporary of path; mode 0666 minus the umask, like open() would."""
    tmp = temp_name(path)
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    return tmp


def fsync_file(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | Path) -> None:
    """Make the renames inside a directory durable (a no-op where the OS refuses)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


_NO_SPACE = ("no space left", "os error 28", "code: 28", "storagefull", "disk quota")
# torch's zip writer reports a short write as "unexpected pos" or "failed writing file",
# without the errno; on a local file system a short write means a full disk.
_SHORT_WRITE = ("unexpected pos", "failed writing file")


def is_disk_full(e: BaseException) -> bool:
    """Whether an error raised while writing means the disk (or quota) is full."""
    for x in (e, e.__cause__, e.__context__):
        if x is None:
            continue
        if isinstance(x, OSError) and x.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if not isinstance(x, OSError | RuntimeError) and type(x).__name__ != "SafetensorError":
            continue
        text = str(x).lower()
        if any(s in text for s in _NO_SPACE + _SHORT_WRITE):
            return True
    return False


def no_space(path: str | Path) -> DiskFull:
    return DiskFull(f"no space left on device while writing {path}")


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call write(tmp) on a temporary beside path, fsync, rename it over path, fsync the dir.

    On any error (or Ctrl-C) the temporary is removed and path keeps its old content; a full
    disk becomes ``DiskFull`` naming path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp: Path | None = None
    try:
        tmp = _new_temp_file(path)
        write(tmp)
        fsync_file(tmp)
        fault_point("write.replace")
        os.replace(tmp, path)
        tmp = None
        fsync_dir(path.parent)
    except Exception as e:
        if is_disk_full(e):
            raise no_space(path) from None
        raise
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def write_text(path: str | Path, text: str) -> None:
    """The text (UTF-8, newlines as given) under path, by the write protocol."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8", newline=""))


def append_text(path: str | Path, text: str) -> None:
    """Append to a log file; on a failed write the file is cut back to where it was."""
    path = Path(path)
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            if is_disk_full(e):
                raise no_space(path) from None
            raise
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """fsync every file and directory under root (deepest first)."""
    for dirpath, _, files in os.walk(root, topdown=False):
        for f in files:
            fsync_file(Path(dirpath) / f)
        fsync_dir(dirpath)


@contextlib.contextmanager
def atomic_directory(final: str | Path, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of final to fill; on success it becomes final by one rename.

    The files written into it are fsynced before the rename, and the parent after it. With
    ``replace``, an existing final is first renamed to ``.NAME.old-PID-X`` and removed after
    (``remove_leftovers`` puts it back if the process dies in between). On any error the
    temporary is removed; a full disk becomes ``DiskFull`` naming final.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(final)
    tmp.mkdir()
    done = False
    try:
        yield tmp
        fsync_tree(tmp)
        fault_point("directory.rename")
        if final.exists():
            if not replace:
                raise FileExistsError(final)
            old = temp_name(final, "old")
            os.replace(final, old)
            fault_point("directory.replace")
            os.replace(tmp, final)
            done = True
            fsync_dir(final.parent)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
            done = True
        fsync_dir(final.parent)
    except Exception as e:
        if isinstance(e, DiskFull) or is_disk_full(e):  # a file inside: name the directory
            raise no_space(final) from None
        raise
    finally:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)


# Manifests -----------------------------------------------------------------------------------

_hash_checks: bool | None = None  # None: from the environment (AIAYN_HASH_CHECK=0 turns off)


def set_hash_checks(enabled: bool | None) -> None:
    """Check SHA-256 sums on load (the default) or only sizes; None: AIAYN_HASH_CHECK decides."""
    global _hash_checks
    _hash_checks = enabled


def hash_checks() -> bool:
    if _hash_checks is not None:
        return _hash_checks
    return os.environ.get("AIAYN_HASH_CHECK", "1") != "0"


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _self_digest(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != SELF_DIGEST}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def write_manifest(
    root: str | Path, fields: dict[str, Any], names: Iterable[str] | None = None
) -> dict[str, Any]:
    """Write root/manifest.json (last, by the write protocol): fields, files, its own hash.

    ``names`` (paths relative to root) default to every file under root. Returns the manifest.
    """
    root = Path(root)
    if names is None:
        names = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    files = {
        rel: {"bytes": (root / rel).stat().st_size, "sha256": sha256_file(root / rel)}
        for rel in sorted(set(names) - {MANIFEST})
    }
    doc = {**fields, "files": files}
    doc[SELF_DIGEST] = _self_digest(doc)
    fault_point("manifest.write")
    write_text(root / MANIFEST, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def read_manifest(root: str | Path) -> dict[str, Any]:
    """root/manifest.json; unreadable, or not matching its own hash, is a UserError naming it."""
    path = Path(root) / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: unreadable manifest ({' '.join(str(e).split())})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise UserError(f"{path}: not a manifest (no file list)")
    if SELF_DIGEST in doc and doc[SELF_DIGEST] != _self_digest(doc):
        raise UserError(f"{path}: damaged (its content does not match its own SHA-256)")
    return doc


def check_file(root: Path, rel: str, manifest: dict[str, Any], hashes: bool | None = None) -> None:
    """root/rel against its manifest entry: its size always, its SHA-256 when hashes are on."""
    entry = manifest["files"].get(rel)
    path = root / rel
    if entry is None:
        raise UserError(f"{path}: not listed in {root / MANIFEST}")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise UserError(f"{path}: missing (listed in {root / MANIFEST})") from None
    if size != entry["bytes"]:
        raise UserError(
            f"{path}: {size} bytes, its manifest says {entry['bytes']}: the file is damaged"
        )
    if (hash_checks() if hashes is None else hashes) and sha256_file(path) != entry["sha256"]:
        raise UserError(f"{path}: SHA-256 differs from its manifest: the file is damaged")


def check_files(root: str | Path, manifest: dict[str, Any], hashes: bool | None = None) -> None:
    """Every file a manifest lists (see ``check_file``)."""
    for rel in manifest["files"]:
        check_file(Path(root), rel, manifest, hashes)


# What dead writers left ----------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """Whether process pid runs (a zombie does not); this process counts as not running."""
    if pid == os.getpid() or pid <= 0:
        return False  # our own temporaries at start-up are a previous process's (pid reuse)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def remove_leftovers(
    directory: str | Path,
    names: Iterable[str] | None = None,
    owned: bool = False,
    is_complete: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """Delete the temporaries of writers that are no longer running; log and return them.

    ``names`` limits it to the temporaries of those targets. ``owned``: the caller holds the
    directory's lock, so even temporaries without a pid (older aiayn) are dead; without it,
    those are removed only when over an hour old. A ``.NAME.old-*`` whose NAME is missing is a
    replace cut short: it is renamed back when ``is_complete`` accepts it.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    wanted = set(names) if names is not None else None
    removed = []
    for p in sorted(directory.iterdir()):
        m = _TEMP.match(p.name)
        legacy = None if m else _LEGACY.match(p.name)
        if m is None and legacy is None:
            continue
        name = (m or legacy).group("name")  # type: ignore[union-attr]
        if wanted is not None and name not in wanted:
            continue
        if m is not None:
            pid = int(m.group("pid"))
            if pid_alive(pid):
                continue
            who = f"left by process {pid}, which is no longer running"
        else:
            with contextlib.suppress(FileNotFoundError):
                if not owned and time.time() - p.lstat().st_mtime < LEGACY_AGE_S:
                    continue
            who = "left by an earlier aiayn"
        target = directory / name
        restorable = m is not None and m.group("kind") == "old" and not target.exists()
        if restorable and is_complete is not None and is_complete(p):
            os.replace(p, target)
            fsync_dir(directory)
            log.warning("restored %s from %s (%s)", target, p.name, who)
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        log.warning("removed %s (%s)", p, who)
        removed.append(p)
    if removed:
        fsync_dir(directory)
    return removed


# A lock on a directory -----------------------------------------------------------------------


class DirectoryLock:
    """An exclusive ``flock`` on DIR/NAME for the life of a process (or until ``release``).

    The kernel drops it when the holder dies (kill -9 included), so a lock left by a dead
    process is simply taken over; the file records the holder's pid for the message. Within
    one process the lock is re-entrant (the CLI takes it before loading data, ``train`` again).
    """

    _held: typing.ClassVar[dict[Path, list[int]]] = {}  # path: [fd, count], this process's

    def __init__(self, directory: str | Path, name: str = "lock", what: str = "run") -> None:
        self.path = Path(directory).absolute() / name
        self.what = what
        self.held = False

    def acquire(self) -> DirectoryLock:
        held = self._held.get(self.path)
        if held is not None:
            held[1] += 1
            self.held = True
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UserError(
                f"{self.path.parent}: in use by another {self.what} (pid {holder}); wait for "
                "it to finish or stop it, or use another directory"
            ) from None
        previous = os.pread(fd, 64, 0).decode(errors="replace").strip()
        if previous and previous != str(os.getpid()):
            log.debug("took over %s from pid %s, which is no longer running", self.path, previous)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._held[self.path] = [fd, 1]
        self.held = True
        return self

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        held = self._held[self.path]
        held[1] -= 1
        if held[1] == 0:
            del self._held[self.path]
            fcntl.flock(held[0], fcntl.LOCK_UN)
            os.close(held[0])

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# Fault injection (tests) ---------------------------------------------------------------------

_fault_hits: dict[str, int] = {}


def fault_point(name: str) -> None:
    """``AIAYN_FAULT=NAME`` (or ``NAME@N``, the Nth time) makes this process SIGKILL itself here.

    The test suite (tests/test_faults.py) and tests/fault_trials.py use it to kill a training
    at chosen moments of a checkpoint write or of pruning; unset, it costs one dict lookup.
    """
    spec = os.environ.get("AIAYN_FAULT")
    if not spec:
        return
    point, _, nth = spec.partition("@")
    if point != name:
        return
    _fault_hits[name] = _fault_hits.get(name, 0) + 1
    if _fault_hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
