"""Synthetic copy and reverse tasks: the first check that a Transformer learns at all.

Pairs of token ids drawn uniformly from [4, vocab_size) (ids 0-3 are the specials), lengths
uniform in [min_len, max_len]. "copy" maps x to x, "reverse" maps x to x reversed.

>>> synthetic_pairs("reverse", 2, vocab_size=10, min_len=3, max_len=3, seed=0)[0][1][::-1] == (
...     synthetic_pairs("reverse", 2, vocab_size=10, min_len=3, max_len=3, seed=0)[0][0])
True
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from aiayn.data.specials import SPECIAL_TOKENS

Task = Literal["copy", "reverse"]
FIRST_ID = len(SPECIAL_TOKENS)  # 4: the first id that is not a special token


def synthetic_pairs(
    task: Task, n: int, vocab_size: int, min_len: int, max_len: int, seed: int
) -> list[tuple[list[int], list[int]]]:
    """n (source, target) id pairs of the copy or reverse task, ids in [4, vocab_size)."""
    if task not in ("copy", "reverse"):
        raise ValueError(f"task must be 'copy' or 'reverse', got {task!r}")
    if vocab_size <= FIRST_ID:
        raise ValueError(f"vocab_size must be > {FIRST_ID} (the specials), got {vocab_size}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=n)  # (n,)
    tokens = rng.integers(FIRST_ID, vocab_size, size=int(lengths.sum()))  # (sum of lengths,)
    pairs = []
    start = 0
    for length in lengths.tolist():
        src = tokens[start : start + length].tolist()
        start += length
        tgt = src if task == "copy" else src[::-1]
        pairs.append((src, list(tgt)))
    return pairs
