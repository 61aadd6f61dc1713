"""Splits: a set of sentence pairs as token ids without specials.  Section 5.1.

A split holds (source ids, target ids) pairs stored without special tokens, as one flat token
array and offsets per side: in memory here (``InMemorySplit``), memory-mapped in
``aiayn.data.store``. ``aiayn.data.token_budget`` cuts a split into batches.

>>> split = InMemorySplit([([5, 6], [7]), ([5], [8, 9])])
>>> len(split), split.src_lengths.tolist(), [a.tolist() for a in split.pair(1)]
(2, [2, 1], [[5], [8, 9]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Split(Protocol):
    """What batching needs of a split: lengths without specials, and pair i as id arrays."""

    src_lengths: np.ndarray  # (N,) int64
    tgt_lengths: np.ndarray  # (N,) int64

    def __len__(self) -> int: ...

    def pair(self, i: int) -> tuple[np.ndarray, np.ndarray]: ...


class ArraySplit:
    """Pairs stored as flat token arrays with offsets: side k of pair i is tokens[off[i]:off[i+1]].

    The arrays may be in memory or ``np.memmap``; nothing is copied.
    """

    def __init__(
        self,
        src_tokens: np.ndarray,
        src_offsets: np.ndarray,
        tgt_tokens: np.ndarray,
        tgt_offsets: np.ndarray,
    ) -> None:
        if len(src_offsets) != len(tgt_offsets) or len(src_offsets) < 1:
            raise ValueError(
                f"offsets must have N + 1 entries on both sides, got {len(src_offsets)} "
                f"and {len(tgt_offsets)}"
            )
        self.src_tokens, self.tgt_tokens = src_tokens, tgt_tokens
        self.src_offsets, self.tgt_offsets = src_offsets, tgt_offsets
        self.src_lengths = np.diff(np.asarray(src_offsets, dtype=np.int64))  # (N,)
        self.tgt_lengths = np.diff(np.asarray(tgt_offsets, dtype=np.int64))  # (N,)

    def __len__(self) -> int:
        return len(self.src_lengths)

    def pair(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(source ids, target ids) of pair i as int64 arrays, without specials."""
        i = int(i)
        if not 0 <= i < len(self):
            raise IndexError(f"pair index {i} out of range for a split of {len(self)} pairs")
        s0, s1 = int(self.src_offsets[i]), int(self.src_offsets[i + 1])
        t0, t1 = int(self.tgt_offsets[i]), int(self.tgt_offsets[i + 1])
        src = np.asarray(self.src_tokens[s0:s1], dtype=np.int64)  # (S,)
        tgt = np.asarray(self.tgt_tokens[t0:t1], dtype=np.int64)  # (T,)
        return src, tgt

    def pairs(self) -> list[tuple[list[int], list[int]]]:
        """Every pair as lists (small splits only: this loads everything)."""
        return [tuple(a.tolist() for a in self.pair(i)) for i in range(len(self))]


def _flatten(seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))  # (N,)
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)  # (N + 1,)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.fromiter(
        (t for s in seqs for t in s), dtype=np.int64, count=int(offsets[-1])
    )  # (sum of lengths,)
    return tokens, offsets


class InMemorySplit(ArraySplit):
    """A split built from a list of (source ids, target ids) pairs, ids without specials."""

    def __init__(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> None:
        src_tokens, src_offsets = _flatten([s for s, _ in pairs])
        tgt_tokens, tgt_offsets = _flatten([t for _, t in pairs])
        super().__init__(src_tokens, src_offsets, tgt_tokens, tgt_offsets)
