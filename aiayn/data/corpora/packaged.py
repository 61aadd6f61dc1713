"""The packaged corpus: real human translations from Debian packages, obtained with apt-get.

EN-DE: LibreOffice help (paired by paragraph id), LibreOffice UI catalogs and Ding's example
sentences, from ``libreoffice-help-en-us``, ``libreoffice-help-de``, ``libreoffice-l10n-de`` and
``trans-de-en``. EN-FR: the French LibreOffice packages (Ding is German only). The packages are
fetched with ``apt-get download`` into the cache and unpacked with ``dpkg-deb -x`` (nothing is
installed); the extracted pairs are cached as a TSV, so a second run skips all of it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from aiayn import storage
from aiayn.data.clean import clean_software_pair, collapse
from aiayn.data.corpora import Corpus
from aiayn.data.corpora.ding import extract_ding
from aiayn.data.corpora.libreoffice import extract_catalogs, extract_help
from aiayn.errors import UserError

log = logging.getLogger(__name__)

EXTRACTOR_VERSION = 1  # bump when extraction or cleaning changes: invalidates cached pairs
HELP_EN = "libreoffice-help-en-us"
PACKAGES = {
    "de": (HELP_EN, "libreoffice-help-de", "libreoffice-l10n-de", "trans-de-en"),
    "fr": (HELP_EN, "libreoffice-help-fr", "libreoffice-l10n-fr"),
}
LICENCES = {"help": "MPL-2.0", "ui": "MPL-2.0", "ding": "GPL-2+"}
ORIGINS = ("help", "ui", "ding")  # LibreOffice help paragraphs, UI strings, Ding's sentences
OTHER_SOURCES = "or use another source: --source multi30k, numbers or files"


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UserError(
            f"{cmd[0]} not found: the packaged corpus needs Debian or Ubuntu tools (apt-get, "
            f"dpkg-deb; `apt install apt dpkg`) {OTHER_SOURCES}"
        ) from None


def _apt_lists_missing() -> bool:
    lists = Path("/var/lib/apt/lists")
    return not any(lists.glob("*_Packages")) if lists.is_dir() else True


def download_debs(packages: tuple[str, ...], cache: Path, refresh: bool = False) -> dict[str, Path]:
    """{package: .deb path}: found in cache/debs, else fetched with `apt-get download`."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = {p: sorted(debs.glob(f"{p}_*.deb")) for p in packages}
    missing = [p for p in packages if refresh or not found[p]]
    if missing:
        for tool in ("apt-get", "dpkg-deb"):
            if shutil.which(tool) is None:
                raise UserError(
                    f"{tool} not found: the packaged corpus needs Debian or Ubuntu package tools "
                    f"(apt-get, dpkg-deb) {OTHER_SOURCES}"
                )
        with tempfile.TemporaryDirectory(prefix=".download-", dir=debs) as tmp:
            result = _run(["apt-get", "download", *missing], Path(tmp))
            if result.returncode != 0:
                hint = (
                    "the package lists are missing: run `sudo apt-get update` once"
                    if _apt_lists_missing()
                    else "check the package names, or run `sudo apt-get update`"
                )
                err = " ".join(result.stderr.strip().splitlines()[-2:])
                raise UserError(
                    f"apt-get download {' '.join(missing)} failed ({err}); {hint}, {OTHER_SOURCES}"
                )
            for f in Path(tmp).glob("*.deb"):
                name = f.name.split("_", 1)[0]
                for old in debs.glob(f"{name}_*.deb"):
                    old.unlink()
                storage.fsync_file(f)  # the write protocol: the temporary is on disk, then renamed
                os.replace(f, debs / f.name)
                storage.fsync_dir(debs)
        found = {p: sorted(debs.glob(f"{p}_*.deb")) for p in packages}
    absent = [p for p in packages if not found[p]]
    if absent:
        raise UserError(f"apt-get download gave no .deb for {', '.join(absent)}; {OTHER_SOURCES}")
    return {p: found[p][-1] for p in packages}


def unpack(deb: Path, dest: Path) -> Path:
    """`dpkg-deb -x deb dest` (no installation): the package's files under dest."""
    if shutil.which("dpkg-deb") is None:
        raise UserError(f"dpkg-deb not found (install dpkg) {OTHER_SOURCES}")
    dest.mkdir(parents=True, exist_ok=True)
    result = _run(["dpkg-deb", "-x", str(deb), str(dest)], dest)
    if result.returncode != 0:
        raise UserError(f"{deb}: dpkg-deb -x failed ({result.stderr.strip()}); delete it and retry")
    return dest


def extract_pairs(root: Path, lang: str) -> Iterator[tuple[str, str, str, str | None]]:
    """(origin, English, other, reason to drop or None) from unpacked package trees under root.

    root/<package>/ holds each unpacked package. Origins: "help", "ui", "ding".
    """
    help_dir = {"de": "de", "fr": "fr"}[lang]
    en_help = root / HELP_EN / "usr/share/libreoffice/help/en-US/text"
    other_help = root / f"libreoffice-help-{lang}" / f"usr/share/libreoffice/help/{help_dir}/text"
    for _page, en, other in extract_help(en_help, other_help):
        en, other, reason = clean_software_pair(en, other, accelerators=False)
        yield "help", en, other, reason
    mo_dir = root / f"libreoffice-l10n-{lang}" / f"usr/lib/libreoffice/program/resource/{lang}"
    for _catalog, en, other in extract_catalogs(mo_dir / "LC_MESSAGES"):
        en, other, reason = clean_software_pair(en, other)
        yield "ui", en, other, reason
    if lang == "de":
        for en, de in extract_ding(root / "trans-de-en" / "usr/share/trans/de-en"):
            en, de = collapse(en), collapse(de)
            yield "ding", en, de, ("identical" if en == de else None)


def cached_pairs(
    lang: str, cache: Path, refresh: bool = False, progress: bool = False
) -> tuple[Path, dict]:
    """(TSV of origin/English/other, extraction stats): extracted once, then read from cache."""
    if lang not in PACKAGES:
        raise UserError(f"packaged corpus: no language pair en-{lang}; use en-de or en-fr")
    debs = download_debs(PACKAGES[lang], cache, refresh)
    key = "-".join(sorted(d.stem.replace("%3a", "_") for d in debs.values()))
    tag = f"en-{lang}-v{EXTRACTOR_VERSION}-{hash_str(key):016x}"
    tsv, stats_file = cache / "pairs" / f"{tag}.tsv", cache / "pairs" / f"{tag}.json"
    if tsv.is_file() and stats_file.is_file() and not refresh:
        return tsv, json.loads(stats_file.read_text(encoding="utf-8"))
    tsv.parent.mkdir(parents=True, exist_ok=True)
    stats: dict = {"packages": {p: d.name for p, d in debs.items()}, "dropped": Counter()}
    kept: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=cache) as tmp:
        for package, deb in debs.items():
            log.info("unpacking %s", deb.name)
            unpack(deb, Path(tmp) / package)
        seen: set[tuple[str, str]] = set()

        def write(part: Path) -> None:
            with part.open("w", encoding="utf-8", newline="\n") as fh:
                rows = extract_pairs(Path(tmp), lang)
                if progress:
                    from tqdm import tqdm

                    rows = tqdm(  # disable=None: no bar when stderr is not a terminal
                        rows,
                        desc="extract",
                        unit=" pairs",
                        leave=False,
                        mininterval=0.5,
                        disable=None,
                    )
                for origin, en, other, reason in rows:
                    if reason is None and (en, other) in seen:
                        reason = "duplicate"
                    if reason is not None:
                        stats["dropped"][f"{origin}:{reason}"] += 1
                        continue
                    seen.add((en, other))
                    kept[origin] += 1
                    fh.write(f"{origin}\t{en}\t{other}\n")  # collapse() removed tabs, newlines

        storage.atomic_write(tsv, write)
    stats["kept"] = dict(kept)
    stats["dropped"] = dict(stats["dropped"])
    storage.write_text(stats_file, json.dumps(stats, indent=2))
    return tsv, stats


def hash_str(s: str) -> int:
    """A stable 64-bit hash of a string (Python's hash() is salted per process)."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little")


def packaged_corpus(
    lang: str,
    cache: Path,
    refresh: bool = False,
    progress: bool = False,
    origins: tuple[str, ...] = ORIGINS,
) -> Corpus:
    """EN-DE (or EN-FR) pairs of the Debian packages, extracted by our own code.

    ``origins`` keeps only the pairs of those parts (help, ui, ding); the others are counted
    as dropped ("<origin>:not_selected", which the manifest reports as
    "source:<origin>:not_selected", like every drop inside a source).
    """
    unknown = sorted(set(origins) - set(ORIGINS))
    if unknown or not origins:
        raise UserError(
            f"--origins: {','.join(unknown) or 'nothing'} is not a part of the packaged corpus; "
            f"choose from {','.join(ORIGINS)}"
        )
    tsv, stats = cached_pairs(lang, cache, refresh, progress)
    keep = frozenset(origins)

    def stream() -> Iterator[tuple[str, str]]:
        with tsv.open(encoding="utf-8") as fh:
            for line in fh:
                origin, en, other = line.rstrip("\n").split("\t")
                if origin in keep:
                    yield en, other

    corpus = Corpus(
        "packaged",
        ("en", lang),
        {"all": stream},
        {
            "packages": stats["packages"],
            "extractor_version": EXTRACTOR_VERSION,
            "kept_by_origin": stats["kept"],
            "origins": [o for o in ORIGINS if o in keep],
            "licences": LICENCES,
        },
        size_hint=sum(n for o, n in stats["kept"].items() if o in keep),
    )
    corpus.drops.update(stats["dropped"])
    corpus.drops.update({f"{o}:not_selected": n for o, n in stats["kept"].items() if o not in keep})
    return corpus
