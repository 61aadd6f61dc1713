"""The layout of a prepared data directory, for its writer and its readers alike.  Section 5.1.

One home for the names of a data directory's files, as ``aiayn.run_dir`` is for a run:
``aiayn prepare`` writes them (``aiayn.data.prepare``), ``load_prepared`` reads them
(``aiayn.data.store``), and every other reader (the recipes' runner, ``aiayn table3``, the
scripts) asks this module for a path rather than spelling a name::

    DIR/manifest.json            written last: counts, lengths, tokenizer settings, hashes
    DIR/tokenizer.json           the shared BPE model (section 5.1)
    DIR/text/{split}.{lang}      cleaned text, one sentence a line (references for sacreBLEU)
    DIR/ids/{split}.{side}.bin   token ids of side src/tgt, flat, uint16 (or uint32), no specials
    DIR/ids/{split}.{side}.idx   int64 offsets, N + 1 of them: pair i is bin[idx[i]:idx[i+1]]
    DIR/LICENSE-data.txt         a corpus's licence and attribution, where it asks for one

The manifest's name is ``aiayn.storage.MANIFEST``, shared with every directory aiayn writes as
a whole (a checkpoint too): complete only once it is there. This module reads nothing.
"""

from __future__ import annotations

from pathlib import Path

from aiayn import storage

MANIFEST = storage.MANIFEST  # DIR/manifest.json
TOKENIZER_FILE = "tokenizer.json"  # DIR/tokenizer.json
TEXT_DIR = "text"  # DIR/text/
IDS_DIR = "ids"  # DIR/ids/
LICENCE_FILE = "LICENSE-data.txt"  # DIR/LICENSE-data.txt (Tatoeba's attribution)
SPLITS = ("train", "valid", "test")
SIDES = ("src", "tgt")


def manifest_path(root: str | Path) -> Path:
    """DIR/manifest.json."""
    return Path(root) / MANIFEST


def tokenizer_path(root: str | Path) -> Path:
    """DIR/tokenizer.json: the shared BPE model."""
    return Path(root) / TOKENIZER_FILE


def text_path(root: str | Path, split: str, lang: str) -> Path:
    """DIR/text/{split}.{lang}: the cleaned text of one side of a split."""
    return Path(root) / TEXT_DIR / f"{split}.{lang}"


def ids_paths(root: str | Path, split: str, side: str) -> tuple[Path, Path]:
    """DIR/ids/{split}.{side}.bin and .idx: the token ids of one side and their offsets."""
    prefix = Path(root) / IDS_DIR / f"{split}.{side}"
    return Path(f"{prefix}.bin"), Path(f"{prefix}.idx")


def make_dirs(root: str | Path) -> None:
    """Create DIR/text/ and DIR/ids/ (the writer, before it writes into them)."""
    for name in (TEXT_DIR, IDS_DIR):
        (Path(root) / name).mkdir()


def is_complete(root: str | Path) -> bool:
    """Whether a data directory has its manifest (written last); its files are checked on load."""
    return manifest_path(root).is_file()
