"""WMT 2014 EN-DE, the paper's data (section 5.1): "about 4.5 million sentence pairs".

The recipe of the paper's setup as reproduced by tensor2tensor and fairseq: training on Europarl
v7, Common Crawl and News Commentary v9; newstest2013 as the development set; newstest2014
(the full 3,003-sentence version) as the test set, read from the SGM files as sacreBLEU does.
The archives come from statmt.org. We know no official checksums for them, so none is invented
here: each archive is checked by structure instead (the inner paths must exist, the two sides
must have equal line counts) and the counts are compared with the published ones.
"""

from __future__ import annotations

import logging
import re
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiayn import storage
from aiayn.data.corpora import Corpus
from aiayn.data.corpora.download import check_url, fetch, join_url
from aiayn.data.textio import DecodeCounter, Errors, count_lines, read_aligned, read_lines
from aiayn.errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Part:
    """One corpus inside an archive: the archive URL and the inner paths of the two sides."""

    url: str
    en: str
    de: str
    lines: int | None = None  # published line count, compared (a warning), not enforced


TRAIN = (
    Part(
        "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "training/europarl-v7.de-en.en",
        "training/europarl-v7.de-en.de",
        1_920_209,
    ),
    Part(
        "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.de-en.en",
        "commoncrawl.de-en.de",
        2_399_123,
    ),
    Part(
        "http://statmt.org/wmt14/training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.de-en.en",
        "training/news-commentary-v9.de-en.de",
        201_288,
    ),
)
VALID = Part(
    "http://statmt.org/wmt14/dev.tgz",
    "dev/newstest2013-src.en.sgm",
    "dev/newstest2013-ref.de.sgm",
    3000,
)
TEST = Part(
    "http://statmt.org/wmt14/test-full.tgz",
    "test-full/newstest2014-deen-src.en.sgm",
    "test-full/newstest2014-deen-ref.de.sgm",
    3003,
)
RECIPE = {"train": TRAIN, "valid": (VALID,), "test": (TEST,)}

_SEG = re.compile(r"<seg[^>]*>(.*)</seg>")


def sgm_segments(path: Path, errors: Errors = "strict") -> Iterator[str]:
    """The text of each <seg> of an SGM file (stripped, whitespace collapsed, as sacreBLEU)."""
    for line in read_lines(path, errors):
        m = _SEG.search(line)
        if m:
            yield " ".join(m.group(1).split())


def _copy_to(src: Any, tmp: Path) -> None:
    with tmp.open("wb") as out:
        shutil.copyfileobj(src, out)


def _extract_member(archive: Path, inner: str, dest: Path) -> Path:
    """Copy one member of a tar archive to dest (member names never become paths)."""
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            try:
                member = tar.getmember(inner)
            except KeyError:
                raise UserError(
                    f"{archive}: has no {inner}; the archive is not the expected one "
                    "(delete it from the cache to download it again)"
                ) from None
            src = tar.extractfile(member)
            if src is None:
                raise UserError(f"{archive}: {inner} is not a regular file")
            with src:
                storage.atomic_write(dest, lambda tmp: _copy_to(src, tmp))
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UserError(f"{archive}: not a readable tar archive ({e})") from None
    return dest


def fetch_part(part: Part, cache: Path, base_url: str | None, progress: bool) -> tuple[Path, Path]:
    """Download the archive of part (once) and extract its two sides; check their line counts."""
    name = part.url.rsplit("/", 1)[-1]
    url = part.url if base_url is None else join_url(base_url, name)
    archive = fetch(url, cache / "archives" / name, progress=progress)
    en = _extract_member(archive, part.en, cache / "extracted" / part.en)
    de = _extract_member(archive, part.de, cache / "extracted" / part.de)
    if not part.en.endswith(".sgm"):
        n_en, n_de = count_lines(en), count_lines(de)
        if n_en != n_de:
            raise UserError(f"{archive}: {part.en} has {n_en} lines but {part.de} has {n_de}")
        if part.lines is not None and base_url is None and n_en != part.lines:
            log.warning("%s: %d lines, the published count is %d", part.en, n_en, part.lines)
    return en, de


def wmt14_corpus(
    cache: Path,
    *,
    base_url: str | None = None,
    recipe: dict[str, tuple[Part, ...]] | None = None,
    errors: Errors = "strict",
    progress: bool = False,
) -> Corpus:
    """WMT14 EN-DE: downloaded from statmt.org (or base_url, for tests) into cache/wmt14."""
    recipe = RECIPE if recipe is None else recipe
    if base_url is not None:
        check_url(base_url, "WMT14's base URL")  # before anything is written
    root = cache / "wmt14"
    files = {
        split: [fetch_part(p, root, base_url, progress) for p in parts]
        for split, parts in recipe.items()
    }
    counter = DecodeCounter()

    def stream_of(split: str):
        def stream() -> Iterator[tuple[str, str]]:
            for en, de in files[split]:
                if en.suffix == ".sgm":
                    src, ref = list(sgm_segments(en, errors)), list(sgm_segments(de, errors))
                    if len(src) != len(ref):
                        raise UserError(f"{en} has {len(src)} segments but {de} has {len(ref)}")
                    yield from zip(src, ref, strict=True)
                else:
                    yield from read_aligned(en, de, errors, counter)

        return stream

    info = {
        "urls": {s: [p.url for p in parts] for s, parts in recipe.items()},
        "checksums": "none published; verified by structure and line counts",
    }
    if base_url is not None:
        info["base_url"] = base_url
    return Corpus(
        "wmt14",
        ("en", "de"),
        {s: stream_of(s) for s in recipe},
        info,
        dedupe=False,
        decode_counter=counter,
        size_hint=sum(p.lines or 0 for p in recipe["train"]) or None,
    )
