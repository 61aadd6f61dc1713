"""Tatoeba sentence pairs, English and another language: manythings.org's Anki bundles.

The study note's own kind of sentence ("I love you." / "我爱你。"). A bundle ``XXX-eng.zip``
holds ``XXX.txt``, one pair a line: ``English<TAB>other<TAB>attribution``, the third column
naming the two Tatoeba sentence ids and their authors, which the licence (CC-BY 2.0 FR) asks to
keep with the data. ``cmn.txt`` (Mandarin, simplified characters) has about 29,000 pairs, sorted
from the shortest English sentence to the longest; about 10% of its lines repeat an English
sentence with another translation, so ``prepare`` splits by a hash of the English side (no
English sentence in two splits).

The bundles are updated from time to time: nothing is pinned to one checksum; the size and
SHA-256 of what was read go into the manifest, with the licence and the attribution file.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import zipfile
import zlib
from pathlib import Path

from aiayn.data import layout
from aiayn.data.corpora import Corpus
from aiayn.data.corpora.download import fetch, join_url
from aiayn.errors import UserError

BASE_URL = "https://www.manythings.org/anki/"
ENV = "AIAYN_TATOEBA"  # a local cmn.txt (or the zip), in place of --tatoeba-file
LICENCE = "CC-BY 2.0 FR (Creative Commons Attribution 2.0 France)"
LICENCE_FILE = layout.LICENCE_FILE  # the attribution, a notice in the data directory
CREDIT = re.compile(r"CC-BY .*#\d+ \(.*\) & #\d+ \(.*\)")  # a pair's two sentences and authors
# Our language code (ISO 639-1, as in --lang-pair) -> the bundle's (ISO 639-3) name.
BUNDLES = {
    "zh": "cmn",
    "de": "deu",
    "fr": "fra",
    "es": "spa",
    "it": "ita",
    "pt": "por",
    "nl": "nld",
    "ru": "rus",
    "ja": "jpn",
    "ko": "kor",
    "tr": "tur",
    "pl": "pol",
    "uk": "ukr",
    "ar": "ara",
    "fi": "fin",
    "sv": "swe",
}


def bundle_name(other: str) -> str:
    """The bundle's language code of our language code: "zh" -> "cmn" (cmn-eng.zip, cmn.txt)."""
    if other not in BUNDLES:
        known = ", ".join(f"en-{k}" for k in BUNDLES)
        raise UserError(
            f"--source tatoeba: no bundle known for language {other!r} (known: {known})"
        )
    return BUNDLES[other]


def parse_bundle(raw: bytes, name: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(pairs (English, other), attribution of each pair) of a bundle's text file.

    Every non-empty line must have exactly three tab-separated fields; anything else is a
    ``UserError`` naming the file and line (a truncated file ends in a short line).

    >>> parse_bundle("Hi.\\t嗨。\\tCC-BY 2.0 (France) #1 (CM) & #2 (M)\\n".encode(), "cmn.txt")
    ([('Hi.', '嗨。')], ['CC-BY 2.0 (France) #1 (CM) & #2 (M)'])
    """
    if not raw.strip():
        raise UserError(f"{name}: is empty, expected Tatoeba pairs 'English<TAB>other<TAB>credit'")
    pairs: list[tuple[str, str]] = []
    credits: list[str] = []
    for lineno, line_bytes in enumerate(raw.split(b"\n"), start=1):
        try:
            line = line_bytes.rstrip(b"\r").decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(
                f"{name}:{lineno}: invalid UTF-8 (byte {e.start} of the line)"
            ) from None
        if lineno == 1:
            line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise UserError(
                f"{name}:{lineno}: expected 3 tab-separated fields (English, translation, "
                f"attribution), found {len(fields)}; is the file truncated or not a Tatoeba bundle?"
            )
        if not CREDIT.fullmatch(fields[2]):
            raise UserError(
                f"{name}:{lineno}: the attribution column is not Tatoeba's ('CC-BY 2.0 (France) "
                "Attribution: tatoeba.org #ID (author) & #ID (author)'); is the file truncated?"
            )
        pairs.append((fields[0], fields[1]))
        credits.append(fields[2])
    return pairs, credits


def _read_zip(path: Path, member: str) -> bytes:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if member not in names:
                raise UserError(
                    f"{path}: has no {member} (it holds {', '.join(names) or 'nothing'})"
                )
            return zf.read(member)
    except zipfile.BadZipFile as e:
        raise UserError(f"{path}: not a complete zip file ({e})") from None
    except (EOFError, OSError, zlib.error) as e:
        raise UserError(f"{path}: cannot read {member} ({e}); the zip is damaged") from None


def _read_local(path: Path, member: str) -> tuple[bytes, dict[str, object]]:
    if not path.exists():
        raise UserError(f"{path}: file not found")
    if path.is_dir():
        candidate = path / member
        if not candidate.is_file():
            raise UserError(f"{path}: is a directory without {member}")
        path = candidate
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if head.startswith(b"PK"):
        raw = _read_zip(path, member)
        return raw, {"file": str(path), "member": member, **_size_sum(path, "zip_")}
    return path.read_bytes(), {"file": str(path)}


def _size_sum(path: Path, prefix: str = "") -> dict[str, object]:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return {f"{prefix}bytes": path.stat().st_size, f"{prefix}sha256": h.hexdigest()}


def download_bundle(
    other: str, cache: Path, base_url: str = BASE_URL, refresh: bool = False, progress: bool = False
) -> Path:
    """Fetch ``XXX-eng.zip`` into cache/tatoeba (atomically); a damaged zip is removed."""
    code = bundle_name(other)
    dest = cache / "tatoeba" / f"{code}-eng.zip"
    if refresh:
        dest.unlink(missing_ok=True)
    url = join_url(base_url, f"{code}-eng.zip")
    fetch(url, dest, progress=progress, complete=zipfile.is_zipfile)
    return dest


def tatoeba_corpus(
    other: str,
    cache: Path,
    *,
    file: Path | None = None,
    base_url: str = BASE_URL,
    refresh: bool = False,
    progress: bool = False,
) -> Corpus:
    """English and ``other`` from a local bundle file (``file`` or $AIAYN_TATOEBA) or a download.

    ``file`` may be the bundle's text file (``cmn.txt``), the zip, or a directory holding the
    text file. The attribution column goes into the data directory as LICENSE-data.txt.
    """
    code = bundle_name(other)
    member = f"{code}.txt"
    if file is None and os.environ.get(ENV):
        file = Path(os.environ[ENV])
    if file is not None:
        raw, origin = _read_local(Path(file), member)
    else:
        archive = download_bundle(other, cache, base_url, refresh=refresh, progress=progress)
        raw = _read_zip(archive, member)
        origin = {"url": join_url(base_url, f"{code}-eng.zip"), **_size_sum(archive, "zip_")}
    read_from = origin.get("file") or origin["url"]
    pairs, credits = parse_bundle(
        raw, f"{read_from}:{member}" if "zip_sha256" in origin else str(read_from)
    )
    origin.update(
        {
            "member": member,
            "bytes": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "lines": len(pairs),
            "licence": LICENCE,
            "attribution": LICENCE_FILE,
        }
    )
    notice = io.StringIO()
    notice.write(
        f"Sentence pairs from Tatoeba (https://tatoeba.org), as bundled by manythings.org "
        f"({member}).\nLicence: {LICENCE}, https://creativecommons.org/licenses/by/2.0/fr/\n"
        "Each line below gives a pair's English sentence and its attribution (the Tatoeba "
        "sentence ids and their authors), in the order of the source file.\n\n"
    )
    for (en, _), credit in zip(pairs, credits, strict=True):
        notice.write(f"{en}\t{credit}\n")

    def stream():
        yield from pairs

    return Corpus(
        "tatoeba",
        ("en", other),
        {"all": stream},
        origin,
        size_hint=len(pairs),
        notices={LICENCE_FILE: notice.getvalue()},
    )
