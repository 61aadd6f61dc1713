"""Downloading corpus files: cached, atomic, and checked (SHA-256 where known, else size).

A file is fetched into the cache once; a later run finds it there. A download is written to a
temporary file and renamed only after its checksum matched, so an interrupted or corrupted
download never sits in the cache under the real name.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from aiayn import storage
from aiayn.errors import UserError

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """$AIAYN_CACHE, else $XDG_CACHE_HOME/aiayn, else ~/.cache/aiayn."""
    if os.environ.get("AIAYN_CACHE"):
        return Path(os.environ["AIAYN_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "aiayn"


def _sha256(path: Path) -> str:
    return storage.sha256_file(path)


def fetch(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    progress: bool = False,
    timeout: float = 60.0,
) -> Path:
    """Download url to dest unless dest is already there (and matches sha256 when given)."""
    if dest.is_file() and (sha256 is None or _sha256(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    storage.remove_leftovers(dest.parent, names=[dest.name])

    def write(tmp: Path) -> None:
        with tmp.open("wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=timeout)
            except (urllib.error.URLError, OSError) as e:
                raise UserError(
                    f"cannot download {url} ({getattr(e, 'reason', e)}); without a network, "
                    "put the files in a local directory and point the matching flag at it"
                ) from None
            with response:
                total = int(response.headers.get("Content-Length") or 0) or None
                bar = None
                if progress:
                    from tqdm import tqdm

                    bar = tqdm(  # disable=None: no bar when stderr is not a terminal
                        total=total,
                        unit="B",
                        unit_scale=True,
                        desc=dest.name,
                        leave=False,
                        disable=None,
                    )
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                if bar is not None:
                    bar.close()
        if sha256 is not None:
            got = _sha256(tmp)
            if got != sha256:
                raise UserError(
                    f"{url}: checksum mismatch (expected sha256 {sha256}, got {got}); "
                    "the download is corrupt or the file changed upstream"
                )

    storage.atomic_write(dest, write)
    log.info("downloaded %s", url)
    return dest


def gunzip(src: Path, dest: Path, *, sha256: str | None = None) -> Path:
    """Decompress a .gz file to dest (atomically), checking the SHA-256 of the result."""
    if dest.is_file() and (sha256 is None or _sha256(dest) == sha256):
        return dest
    storage.remove_leftovers(dest.parent, names=[dest.name])

    def write(tmp: Path) -> None:
        with tmp.open("wb") as out, gzip.open(src, "rb") as fh:
            try:
                shutil.copyfileobj(fh, out)
            except (OSError, EOFError) as e:
                if storage.is_disk_full(e):
                    raise
                raise UserError(f"{src}: not a valid gzip file ({e})") from None
        if sha256 is not None and (got := _sha256(tmp)) != sha256:
            src.unlink(missing_ok=True)  # a corrupt download must not stay in the cache
            raise UserError(
                f"{src}: decompressed content has sha256 {got}, expected {sha256}; "
                "the download was removed, run again to fetch it anew"
            )

    storage.atomic_write(dest, write)
    return dest
