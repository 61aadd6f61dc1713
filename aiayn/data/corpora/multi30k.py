"""Multi30k (task 1, EN-DE image captions): the official raw files, local or downloaded.

train 29,000 pairs, val 1,014 (our "valid"), test_2016_flickr 1,000 (our "test"), from the
official repository ``multi30k/dataset``, ``data/task1/raw/``, where each file is gzipped. The
SHA-256 sums below are of the decompressed files (measured on copies of the official files;
the gzip files themselves were not available to hash), so a download is checked after
decompression. Licence: research use, following Flickr30k's terms.

Multi30k if it can be had, else the packaged corpus: ``aiayn demo`` and ``aiayn table3`` train
on Multi30k when a local copy (``--multi30k-dir`` or $AIAYN_MULTI30K) or a download (from its
official repository, or a mirror: ``--multi30k-url`` or $AIAYN_MULTI30K_URL) gives it, and
otherwise on the packaged corpus, saying which. ``fallbacks`` names the corpora to try,
``first_had`` tries them in turn, ``local_copy``, ``mirror`` and ``origin`` read and say where
Multi30k comes from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from aiayn.data.corpora import Corpus
from aiayn.data.corpora.download import check_url, fetch, gunzip, join_url, url_from
from aiayn.data.textio import DecodeCounter, Errors, read_aligned
from aiayn.errors import UserError

BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
ENV = "AIAYN_MULTI30K"  # a local copy of the raw files, in place of --multi30k-dir
URL_ENV = "AIAYN_MULTI30K_URL"  # a mirror of the official files, in place of --multi30k-url
FALLBACK = "packaged"  # the corpus taken when Multi30k cannot be had
SPLIT_FILES = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
LANGS = ("en", "de")
SHA256 = {  # of the decompressed files
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "test_2016_flickr.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test_2016_flickr.de": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
}


def download_multi30k(
    cache: Path,
    base_url: str = BASE_URL,
    sha256: dict[str, str] | None = None,
    progress: bool = False,
) -> Path:
    """Fetch the six .gz files, decompress them into cache/multi30k, check their SHA-256."""
    sums = SHA256 if sha256 is None else sha256
    check_url(base_url, "Multi30k's base URL")  # before anything is written
    dest = cache / "multi30k"
    dest.mkdir(parents=True, exist_ok=True)
    for stem in SPLIT_FILES.values():
        for lang in LANGS:
            name = f"{stem}.{lang}"
            url = join_url(base_url, f"{name}.gz")
            gz = fetch(url, dest / "gz" / f"{name}.gz", progress=progress)
            gunzip(gz, dest / name, sha256=sums.get(name))
    return dest


def multi30k_corpus(
    directory: Path | None,
    cache: Path,
    *,
    base_url: str = BASE_URL,
    sha256: dict[str, str] | None = None,
    errors: Errors = "strict",
    progress: bool = False,
) -> Corpus:
    """Multi30k from a local directory of the raw files (``directory`` or $AIAYN_MULTI30K), or
    downloaded into the cache."""
    directory = local_copy(directory)
    if directory is None:
        directory = download_multi30k(cache, base_url, sha256, progress)
        origin = {"url": base_url}
    else:
        missing = [
            f"{stem}.{lang}"
            for stem in SPLIT_FILES.values()
            for lang in LANGS
            if not (directory / f"{stem}.{lang}").is_file()
        ]
        if missing:
            raise UserError(
                f"{directory}: not a Multi30k directory, missing {', '.join(missing)} "
                "(expected the raw files train/val/test_2016_flickr .en/.de)"
            )
        from aiayn.data.store import sha256_file

        official = all(sha256_file(directory / n) == h for n, h in SHA256.items())
        origin = {"directory": str(directory), "matches_official_sha256": official}
    counter = DecodeCounter()

    def stream_of(stem: str):
        def stream() -> Iterator[tuple[str, str]]:
            yield from read_aligned(
                directory / f"{stem}.en", directory / f"{stem}.de", errors, counter
            )

        return stream

    splits = {split: stream_of(stem) for split, stem in SPLIT_FILES.items()}
    return Corpus(
        "multi30k",
        LANGS,
        splits,
        {**origin, "task": "task1 raw"},
        dedupe=False,
        decode_counter=counter,
        size_hint=31014,
    )


# Multi30k if it can be had, else the packaged corpus ----------------------------------------

T = TypeVar("T")


def local_copy(directory: str | Path | None) -> Path | None:
    """The local copy of the raw files: ``directory``, else $AIAYN_MULTI30K, else None: download."""
    if directory is not None:
        return Path(directory)
    return Path(os.environ[ENV]) if os.environ.get(ENV) else None


def mirror(url: str | None, flag: str = "--multi30k-url") -> str | None:
    """The mirror to download from: ``url`` (checked, a bad one named by ``flag``), else
    $AIAYN_MULTI30K_URL (named so), else None: the official repository, ``BASE_URL``."""
    return url_from(url, flag, URL_ENV)


def origin(directory: str | Path | None, url: str | None) -> str:
    """Where Multi30k comes from, in words: a local copy, else a checked download.

    >>> origin(None, None)
    'a download from its official repository, checksums checked'
    """
    if directory is not None:
        return f"the local copy {directory}"
    return f"a download from {url or 'its official repository'}, checksums checked"


def fallbacks(source: str, then: Sequence[str] = ()) -> tuple[str, ...]:
    """The corpora to try, in order, for --source: auto is Multi30k, else the packaged corpus
    (else ``then``); a named source is that one alone, with no fallback.

    >>> fallbacks("auto"), fallbacks("auto", ["numbers"]), fallbacks("packaged")
    (('multi30k', 'packaged'), ('multi30k', 'packaged', 'numbers'), ('packaged',))
    """
    return ("multi30k", FALLBACK, *then) if source == "auto" else (source,)


def first_had(
    names: Sequence[str], attempt: Callable[[str], T], on_miss: Callable[[str, UserError], None]
) -> tuple[str, T]:
    """(name, attempt(name)) for the first of ``names`` that can be had, tried in order.

    One that cannot (``attempt`` raises a UserError: no network, a checksum that does not match,
    no apt-get) is told to ``on_miss(name, error)`` before the next is tried; the last one's
    UserError is raised.
    """
    for name in names[:-1]:
        try:
            return name, attempt(name)
        except UserError as e:
            on_miss(name, e)
    return names[-1], attempt(names[-1])
