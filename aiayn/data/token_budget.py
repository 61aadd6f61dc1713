"""Token-budget batches of sentence pairs grouped by length.  Section 5.1.

"Sentence pairs were batched together by approximate sequence length. Each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target
tokens." ``token_batches`` cuts one epoch of a split (``aiayn.data.splits``) into batches whose
padded size with the specials, max(B * (S_max + 1), B * (T_max + 1)), stays within
``max_tokens``; ``batch_from_indices`` pads one of them into a ``Batch``
(``aiayn.data.specials``).

>>> from aiayn.data.splits import InMemorySplit
>>> split = InMemorySplit([([5, 6], [7]), ([5], [8, 9]), ([4] * 9, [4] * 9)])
>>> [b.tolist() for b in token_batches(split, 6, shuffle=False)]
[[0, 1], [2]]
>>> batch_from_indices(split, [0, 1]).src.tolist()
[[5, 6, 2], [5, 2, 0]]
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from aiayn.data.batch import Batch, collate
from aiayn.data.splits import Split

log = logging.getLogger(__name__)


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
