"""Downloading corpus files: cached, atomic, and checked (SHA-256 where known, else size).

A file is fetched into the cache once; a later run finds it there. A download is written to a
temporary file and renamed only after its checksum matched, so an interrupted or corrupted
download never sits in the cache under the real name. A mirror's base URL is checked once
(``check_url``: http, https or file, a host, a port in range) and joined to each file name with
exactly one "/" (``join_url``).
"""

from __future__ import annotations

import gzip
import http.client
import logging
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from aiayn import storage
from aiayn.errors import UserError

log = logging.getLogger(__name__)

USER_AGENT = "aiayn (https://pypi.org/project/aiayn/)"  # some hosts refuse Python's default


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
    complete: Callable[[Path], bool] | None = None,
) -> Path:
    """Download url to dest unless dest is already there (and matches sha256 when given).

    A download cut off before its Content-Length, or one that ``complete`` (a check of the
    file's own structure, for files without a known checksum) refuses, is a UserError and never
    lands under dest; a cached file that ``complete`` refuses is fetched again.
    """
    if dest.is_file() and complete is not None and not complete(dest):
        dest.unlink()
    if dest.is_file() and (sha256 is None or _sha256(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    storage.remove_leftovers(dest.parent, names=[dest.name])

    def write(tmp: Path) -> None:
        with tmp.open("wb") as out:
            request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            try:
                response = urllib.request.urlopen(request, timeout=timeout)
            except (urllib.error.URLError, OSError, ValueError) as e:
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
                received = 0
                try:
                    while chunk := response.read(1 << 20):
                        out.write(chunk)
                        received += len(chunk)
                        if bar is not None:
                            bar.update(len(chunk))
                except (http.client.HTTPException, ConnectionError, TimeoutError) as e:
                    raise UserError(
                        f"{url}: the download was cut off after {received:,} bytes "
                        f"({type(e).__name__}); nothing was kept, run again"
                    ) from None
                finally:
                    if bar is not None:
                        bar.close()
                if total is not None and received != total:
                    raise UserError(
                        f"{url}: the download was cut off after {received:,} of {total:,} bytes; "
                        "nothing was kept, run again"
                    )
        if complete is not None and not complete(tmp):
            raise UserError(
                f"{url}: the downloaded file is incomplete or not the expected kind of file; "
                "nothing was kept, run again"
            )
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


# Mirrors: one check of a base URL and one way to join a file name to it ------------------------

URL_SCHEMES = ("http", "https", "file")  # what fetch() downloads from (urllib.request)


def check_url(url: str, what: str = "URL") -> str:
    """url, if fetch() can download from it: http(s)://HOST[:PORT]/... or file:///PATH.

    Anything else is a UserError naming ``what`` (a flag, an environment variable) and the
    value: an empty string, whitespace, no scheme or another one (ftp:), no host, a port
    outside 1-65535.
    """
    reason = _url_problem(url)
    if reason:
        raise UserError(
            f"{what}: {url!r} is not a URL to download from ({reason}); "
            "give one like https://host/path/ or file:///path/"
        )
    return url


def url_from(value: str | None, flag: str, env: str) -> str | None:
    """The URL a flag gives, else the environment variable env (when set and not empty), checked
    by ``check_url`` under the name it came from; None when neither gives one."""
    if value is not None:
        return check_url(value, flag)
    if os.environ.get(env):
        return check_url(os.environ[env], f"${env}")
    return None


def _url_problem(url: str) -> str:
    """Why url is no URL to download from, or ""."""
    if not url:
        return "it is empty"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it holds a space or a control character"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:  # an unclosed "[" of an IPv6 address
        return str(e)
    try:
        port = parts.port
    except ValueError:  # not a number, or over 65535
        port = -1
    scheme = parts.scheme.lower()
    if not scheme:
        return "no scheme: it must start with http://, https:// or file://"
    if scheme not in URL_SCHEMES:
        return f"the scheme must be http, https or file, not {scheme!r}"
    if scheme == "file":
        return "" if parts.path else "a file: URL needs a path, file:///path/"
    if not parts.hostname:
        return "no host"
    if port is not None and not 1 <= port <= 65535:
        return "the port must be a number from 1 to 65535"
    return ""


def join_url(base: str, name: str) -> str:
    """base + "/" + name with exactly one "/" between them (base's query kept), base checked.

    >>> join_url("http://127.0.0.1:9", "train.en.gz")
    'http://127.0.0.1:9/train.en.gz'
    >>> join_url("https://host/raw/", "/val.de.gz")
    'https://host/raw/val.de.gz'
    >>> join_url("file:///srv/mirror", "dev.tgz")
    'file:///srv/mirror/dev.tgz'
    """
    parts = urllib.parse.urlsplit(check_url(base))
    path = parts.path.rstrip("/") + "/" + name.lstrip("/")
    return urllib.parse.urlunsplit(parts._replace(path=path))
