"""Validation BLEU during training (optional: ``--valid-bleu``).  Section 6.1.

Greedy decoding (beam 1, maximum length input + 50) of the first ``VALID_BLEU_SENTENCES``
validation sources, detokenized and scored with sacreBLEU against the raw references: a cheap
signal for the curves. The reported test BLEU comes from ``aiayn evaluate`` (beam 4, alpha
0.6, averaged checkpoints). Computed on the main process only.

Decoding and scoring live above training (``aiayn.translator``, ``aiayn.evaluate``), so the
caller passes them in as a ``BleuScorer``: ``aiayn train --valid-bleu`` passes
``functools.partial(aiayn.evaluate.greedy_bleu, lang=data.tgt_lang)``, sacreBLEU with the
tokenizer of the prepared data's target language (``tok:zh`` for Chinese, 13a for German; see
``aiayn.evaluate.bleu_tokenizer``). This module imports nothing from above it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiayn.model import Transformer

log = logging.getLogger(__name__)

VALID_BLEU_SENTENCES = 500
BleuScorer = Callable[[Transformer, Any, list[str], list[str]], float]
"""score(model, tokenizer, sources, references) -> corpus BLEU of the model's translations."""

_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def valid_bleu(model: Transformer, data: Any, world: Any, score: BleuScorer) -> float | None:
    """score(...) of the first validation texts, or None off the main process or without texts.

    ``data`` is a ``TrainData``; ``world`` an ``aiayn.train.distributed.World``.
    """
    if not world.is_main:
        return None
    if data.valid_texts is None or data.tokenizer is None:
        _warn_once("valid_bleu: the data has no validation texts or tokenizer; BLEU skipped")
        return None
    sources, references = data.valid_texts
    sources = list(sources[:VALID_BLEU_SENTENCES])
    references = list(references[:VALID_BLEU_SENTENCES])
    return float(score(model, data.tokenizer, sources, references))
