"""Token-budget batches of sentence pairs grouped by length.  Section 5.1.

"Sentence pairs were batched together by approximate sequence length. Each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target
tokens." A split is a set of (source ids, target ids) pairs stored without special tokens, as
one flat token array and offsets per side (in memory here, memory-mapped in
``aiayn.data.store``). ``token_batches`` cuts one epoch into batches whose padded size with the
specials, max(B * (S_max + 1), B * (T_max + 1)), stays within ``max_tokens``.

>>> split = InMemorySplit([([5, 6], [7]), ([5], [8, 9]), ([4] * 9, [4] * 9)])
>>> [b.tolist() for b in token_batches(split, 6, shuffle=False)]
[[0, 1], [2]]
>>> batch_from_indices(split, [0, 1]).src.tolist()
[[5, 6, 2], [5, 2, 0]]
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from aiayn.data.batch import Batch, collate

log = logging.getLogger(__name__)


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


def padded_sizes(split: Split) -> np.ndarray:
    """max(S + 1, T + 1) per pair: the tokens one pair costs in a padded batch (EOS/BOS added)."""
    return np.maximum(split.src_lengths, split.tgt_lengths).astype(np.int64) + 1  # (N,)


def oversized(split: Split, max_tokens: int) -> np.ndarray:
    """Indices of the pairs that alone exceed max_tokens (each becomes a batch of one)."""
    return np.flatnonzero(padded_sizes(split) > max_tokens)


def _cut(sizes: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """Greedy [start, end) cuts of ascending sizes with (end - start) * sizes[end - 1] <= budget."""
    n = len(sizes)
    cuts = []
    start = 0
    while start < n:
        first = int(sizes[start])
        if first > max_tokens:  # a pair over the budget forms its own batch
            cuts.append((start, start + 1))
            start += 1
            continue
        cap = max_tokens // first  # sizes ascend, so no batch from here holds more pairs
        window = sizes[start : start + cap]  # (<= cap,)
        fits = np.arange(1, len(window) + 1) * window <= max_tokens  # (<= cap,) True..False
        count = len(window) if fits.all() else int(np.argmin(fits))
        cuts.append((start, start + count))
        start += count
    return cuts


def token_batches(
    split: Split,
    max_tokens: int,
    *,
    seed: int = 1,
    epoch: int = 0,
    shuffle: bool = True,
    rank: int = 0,
    world_size: int = 1,
) -> list[np.ndarray]:
    """One epoch's batches (arrays of pair indices), each within max_tokens.  Section 5.1.

    Pairs are sorted by padded size max(S + 1, T + 1), then by the other side's size, ties
    broken at random, and cut greedily so that B * max(S_max + 1, T_max + 1) <= max_tokens. A
    pair over the budget alone forms a batch of one (counted in a warning). The order of the
    batches is shuffled; both the ties and the order are determined by (seed, epoch). With
    world_size > 1, rank r gets batches[r::world_size], all ranks the same number (the last
    len(batches) % world_size batches of the epoch are left out).
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size, got rank {rank}, world_size {world_size}")
    n = len(split)
    if n == 0:
        return []
    src = np.asarray(split.src_lengths, dtype=np.int64) + 1  # (N,) with EOS
    tgt = np.asarray(split.tgt_lengths, dtype=np.int64) + 1  # (N,) with BOS / EOS
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(n) if shuffle else np.arange(n)  # (N,) random tie-break
    big, small = np.maximum(src, tgt)[perm], np.minimum(src, tgt)[perm]  # (N,)
    order = perm[np.lexsort((small, big))]  # (N,) ascending by (big, small), stable
    sizes = np.maximum(src, tgt)[order]  # (N,) ascending
    cuts = _cut(sizes, max_tokens)
    n_over = int((sizes > max_tokens).sum())
    if n_over:
        log.warning(
            "%d pair(s) exceed max_tokens=%d on their own; each forms a batch of one",
            n_over,
            max_tokens,
        )
    batches = [order[a:b] for a, b in cuts]
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    if world_size > 1:
        # DEVIATION(5.1): the paper does not say; equal counts keep ranks in step, and the few
        # batches left over differ from epoch to epoch, so no pair is left out for good.
        per_rank = len(batches) // world_size
        batches = batches[rank::world_size][:per_rank]
    return batches


def batch_from_indices(split: Split, indices: Sequence[int] | np.ndarray) -> Batch:
    """The padded Batch of the pairs at indices (specials added by ``collate``)."""
    return collate([split.pair(int(i)) for i in indices])
