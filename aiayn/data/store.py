"""The prepared data directory: cleaned text, the shared BPE model, token ids, a manifest.

Its layout (the file names) is ``aiayn.data.layout``; ``aiayn prepare`` writes it through
``IdWriter``, ``building_directory`` and ``write_manifest``, and ``load_prepared`` reads it.
The token arrays are memory-mapped, so a split of millions of pairs costs almost no memory
until its pages are read. The directory is built by ``aiayn.storage.atomic_directory`` (one
rename at the end); it is complete only when its manifest says so and every file it lists has
the recorded size and SHA-256 (hashes are skipped with ``--no-hash-check``); anything else is
refused with a ``UserError`` naming the file.
"""

from __future__ import annotations

import contextlib
import logging
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aiayn import storage
from aiayn.data import layout
from aiayn.data.bpe import Tokenizer
from aiayn.data.splits import ArraySplit
from aiayn.errors import UserError

log = logging.getLogger(__name__)

FORMAT = "aiayn-prepared"
VERSION = 1
SPLITS, SIDES = layout.SPLITS, layout.SIDES


def ids_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits, else uint32."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


sha256_file = storage.sha256_file


class IdWriter:
    """Appends id sequences to the ``.bin`` file and writes the offsets (``.idx``) on close."""

    def __init__(self, paths: tuple[Path, Path], dtype: np.dtype) -> None:
        (self.bin_path, self.idx_path), self.dtype = paths, dtype
        self._fh = self.bin_path.open("wb")  # closed by close()
        self._lengths = array("q")
        self.n_tokens = 0

    def add(self, seqs: Sequence[Sequence[int]]) -> None:
        """Append sequences (ids without specials)."""
        lengths = [len(s) for s in seqs]
        flat = np.fromiter(
            (t for s in seqs for t in s), dtype=self.dtype, count=sum(lengths)
        )  # (sum of lengths,)
        flat.tofile(self._fh)
        self._lengths.extend(lengths)
        self.n_tokens += len(flat)

    def close(self) -> np.ndarray:
        """Finish both files; returns the lengths (N,) int64."""
        self._fh.close()
        lengths = np.frombuffer(self._lengths, dtype=np.int64)  # (N,)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)  # (N + 1,)
        np.cumsum(lengths, out=offsets[1:])
        offsets.tofile(self.idx_path)
        return lengths


def _memmap(path: Path, dtype: np.dtype, count: int) -> np.ndarray:
    if count == 0:  # np.memmap cannot map an empty file
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=(count,))


class MemmapSplit(ArraySplit):
    """A split of a prepared directory; token arrays and offsets are memory-mapped."""

    def __init__(self, root: Path, name: str, n_pairs: int, n_tokens: dict[str, int], dtype: str):
        arrays = []
        for side in SIDES:
            bin_path, idx_path = layout.ids_paths(root, name, side)
            tokens = _memmap(bin_path, np.dtype(dtype), n_tokens[side])
            offsets = _memmap(idx_path, np.dtype(np.int64), n_pairs + 1)
            if n_pairs == 0:
                offsets = np.zeros(1, dtype=np.int64)
            arrays += [tokens, offsets]
        super().__init__(*arrays)
        self.name = name


@dataclass
class PreparedData:
    """A prepared data directory: tokenizer, memory-mapped splits, cleaned texts, manifest."""

    path: Path
    manifest: dict[str, Any]
    tokenizer: Tokenizer

    @property
    def src_lang(self) -> str:
        return self.manifest["src_lang"]

    @property
    def tgt_lang(self) -> str:
        return self.manifest["tgt_lang"]

    def _check_name(self, name: str) -> dict[str, Any]:
        splits = self.manifest["splits"]
        if name not in splits:
            raise UserError(f"{self.path}: no split {name!r}; it has {', '.join(splits)}")
        return splits[name]

    def split(self, name: str) -> MemmapSplit:
        """The memory-mapped pairs of split "train", "valid" or "test"."""
        info = self._check_name(name)
        return MemmapSplit(
            self.path, name, info["pairs"], info["tokens"], self.manifest["ids_dtype"]
        )

    def text_paths(self, name: str) -> tuple[Path, Path]:
        """Paths of the cleaned source and reference text of a split."""
        self._check_name(name)
        return (
            layout.text_path(self.path, name, self.src_lang),
            layout.text_path(self.path, name, self.tgt_lang),
        )

    def texts(self, name: str) -> tuple[list[str], list[str]]:
        """(sources, references): the cleaned raw text of a split, one string a pair."""
        src_path, tgt_path = self.text_paths(name)
        out = []
        for p in (src_path, tgt_path):
            with p.open(encoding="utf-8", newline="\n") as fh:
                out.append([line.rstrip("\n") for line in fh])
        return out[0], out[1]


def load_prepared(path: str | Path) -> PreparedData:
    """Open a prepared data directory; a missing or incomplete one is a UserError naming it."""
    root = Path(path)
    if not root.is_dir():
        raise UserError(
            f"{root}: no prepared data directory here; run `aiayn prepare --out {root}`"
        )
    manifest_path = layout.manifest_path(root)
    if not manifest_path.is_file():
        raise UserError(
            f"{root}: incomplete prepared data directory (no {layout.MANIFEST}); "
            f"run `aiayn prepare --out {root}` again"
        )
    manifest = storage.read_manifest(root)
    if manifest.get("format") != FORMAT or manifest.get("complete") is not True:
        raise UserError(f"{manifest_path}: not a complete {FORMAT} manifest")
    if manifest.get("version") != VERSION:
        raise UserError(
            f"{manifest_path}: format version {manifest.get('version')}, this aiayn reads "
            f"version {VERSION}; prepare the data again"
        )
    try:
        storage.check_files(root, manifest)
    except UserError as e:
        raise UserError(f"{e}; run `aiayn prepare --out {root} --overwrite` again") from None
    tokenizer = Tokenizer.load(layout.tokenizer_path(root))
    return PreparedData(root, manifest, tokenizer)


def verify_hashes(data: PreparedData) -> list[str]:
    """Files whose SHA-256 differs from the manifest's (empty when all match)."""
    return [
        rel
        for rel, info in data.manifest["files"].items()
        if sha256_file(data.path / rel) != info["sha256"]
    ]


@contextlib.contextmanager
def building_directory(out: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of out to build in; on success it is renamed to out.

    On any error (or Ctrl-C) the temporary directory is removed, so out is either the complete
    new directory, or what it was before; a full disk is ``DiskFull`` naming out. What killed
    runs of ``prepare`` left beside out is removed first (and logged). An existing non-empty
    out is kept unless overwrite.
    """
    out = Path(out).absolute()
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory")
    storage.remove_leftovers(out.parent, names=[out.name], is_complete=layout.is_complete)
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UserError(f"{out}: directory exists and is not empty; pass --overwrite to replace it")
    with storage.atomic_directory(out, replace=True) as tmp:
        yield tmp
        storage.fault_point("prepare.rename")


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Hash every file under root, then write its manifest (the last file, atomically)."""
    fields = {"format": FORMAT, "version": VERSION, "complete": True, **manifest}
    storage.write_manifest(root, fields)
