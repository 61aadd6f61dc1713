"""Data: corpora, the shared BPE vocabulary and token-budget batches.  Section 5.1.

The contract every other module relies on (``Batch``, the special token ids) lives in
``aiayn.data.batch``. ``bpe`` holds the shared byte-pair ``Tokenizer``, ``batching`` the splits
and the token-budget batches, ``synthetic`` the copy and reverse tasks, ``store`` the prepared
data directory (``load_prepared``), ``prepare`` and ``corpora`` the way from a corpus to it.
"""

from aiayn.data.batch import BOS, EOS, PAD, SPECIAL_TOKENS, UNK, Batch, collate
from aiayn.data.batching import (
    ArraySplit,
    InMemorySplit,
    Split,
    batch_from_indices,
    oversized,
    padded_sizes,
    token_batches,
)
from aiayn.data.bpe import Tokenizer
from aiayn.data.store import MemmapSplit, PreparedData, load_prepared
from aiayn.data.synthetic import synthetic_pairs

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "SPECIAL_TOKENS",
    "UNK",
    "ArraySplit",
    "Batch",
    "InMemorySplit",
    "MemmapSplit",
    "PreparedData",
    "Split",
    "Tokenizer",
    "batch_from_indices",
    "collate",
    "load_prepared",
    "oversized",
    "padded_sizes",
    "synthetic_pairs",
    "token_batches",
]
