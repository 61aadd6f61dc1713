"""What the loop reads: the training data and this process's batches from a saved position.

``TrainData`` holds the splits (token ids without specials), the tokenizer and where they came
from; ``BatchStream`` gives this rank's token-budget batches (section 5.1) epoch after epoch,
from a data position (epoch, batch index) that a checkpoint records, so a resumed run reads
the batches the uninterrupted one would have read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiayn.data import Batch, Split, batch_from_indices, token_batches
from aiayn.errors import UserError
from aiayn.train.distributed import World


@dataclass
class TrainData:
    """The splits (token ids without specials), the tokenizer if any, and where they came from."""

    train: Split
    valid: Split | None = None
    tokenizer: Any = None  # aiayn.data.Tokenizer: stored in every checkpoint when given
    source: str | None = None  # the data directory, recorded in config.json
    valid_texts: tuple[list[str], list[str]] | None = None  # (sources, references) for BLEU
    tgt_lang: str | None = None  # the references' language: their BLEU tokenizer (zh: tok:zh)


class BatchStream:
    """This rank's batches, epoch after epoch, from a data position (epoch, batch index)."""

    def __init__(
        self, split: Split, max_tokens: int, seed: int, world: World, epoch: int, index: int
    ) -> None:
        self.split, self.max_tokens, self.seed, self.world = split, max_tokens, seed, world
        self.epoch, self.index = epoch, index
        self._load()

    def _load(self) -> None:
        w = self.world
        self.batches = token_batches(
            self.split,
            self.max_tokens,
            seed=self.seed,
            epoch=self.epoch,
            rank=w.rank,
            world_size=w.world_size,
        )
        if not self.batches:
            raise UserError(
                f"the training split gives no batch for each of {w.world_size} process(es) "
                f"with max_tokens={self.max_tokens}"
            )

    @property
    def epochs_done(self) -> float:
        return self.epoch + self.index / len(self.batches)

    def next(self) -> Batch:
        if self.index >= len(self.batches):
            self.epoch, self.index = self.epoch + 1, 0
            self._load()
        indices = self.batches[self.index]
        self.index += 1
        return batch_from_indices(self.split, indices)
