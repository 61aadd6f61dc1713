"""A small disk for the tests of a full disk (tests/test_storage.py, tests/test_faults.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(path: Path, size: str = "256k"):
    """A tmpfs of the given size at path (root only); skips the test where mount is refused."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the injected-ENOSPC tests still run)")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip(f"mount -t tmpfs not permitted here: {res.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
