"""Data: corpora, the shared BPE vocabulary and token-budget batches.  Section 5.1.

The contract every other module relies on: the special token ids in ``aiayn.data.specials``,
the padded ``Batch`` and ``collate`` in ``aiayn.data.batch``. ``splits`` holds the pairs as
token ids, ``token_budget`` the token-budget batches, ``bpe`` the shared byte-pair
``Tokenizer``, ``synthetic`` the copy and reverse tasks, ``layout`` the names of a prepared data
directory's files, ``store`` its reader (``load_prepared``), ``prepare`` and ``corpora`` the way
from a corpus to it.
"""

from aiayn.data.batch import Batch, collate
from aiayn.data.bpe import Tokenizer
from aiayn.data.specials import BOS, EOS, PAD, SPECIAL_TOKENS, UNK
from aiayn.data.splits import ArraySplit, InMemorySplit, Split
from aiayn.data.store import MemmapSplit, PreparedData, load_prepared
from aiayn.data.synthetic import synthetic_pairs
from aiayn.data.token_budget import batch_from_indices, oversized, padded_sizes, token_batches

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
