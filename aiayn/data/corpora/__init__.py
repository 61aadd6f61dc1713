"""Corpora: where sentence pairs come from, each a named source of ``aiayn prepare``.

A ``Corpus`` yields (English or source side, other side) text pairs, either as one stream
that ``prepare`` splits by a hash of the English side ("all"), or as predefined "train",
"valid" and "test" streams (Multi30k, WMT14). Rules a source applies itself (the software-string
cleaning of the packaged corpus, for example) are counted in ``Corpus.drops``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

PairStream = Callable[[], Iterable[tuple[str, str]]]


@dataclass
class Corpus:
    """A named source of sentence pairs in languages ``langs`` (side 0, side 1)."""

    name: str
    langs: tuple[str, str]
    splits: dict[str, PairStream]  # {"all": ...} or {"train": ..., "valid": ..., "test": ...}
    info: dict[str, Any] = field(default_factory=dict)  # provenance for the manifest
    drops: Counter = field(default_factory=Counter)  # pairs dropped inside the source, by reason
    dedupe: bool = True  # drop repeated training pairs
    size_hint: int | None = None  # number of pairs, for progress bars
    decode_counter: Any = None  # a textio.DecodeCounter for sources that read user files
    notices: dict[str, str] = field(default_factory=dict)  # files written beside the data
    #                         (a licence and its attribution), by name


SOURCES = ("packaged", "multi30k", "wmt14", "tatoeba", "numbers", "copy", "reverse", "files")
