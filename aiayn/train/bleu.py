"""Validation BLEU during training (optional: ``--valid-bleu``).  Section 6.1.

Greedy decoding (beam 1, maximum length input + 50) of the first ``VALID_BLEU_SENTENCES``
validation sources, detokenized and scored with sacreBLEU against the raw references: a cheap
signal for the curves. The reported test BLEU comes from ``aiayn evaluate`` (beam 4, alpha
0.6, averaged checkpoints). Computed on the main process only.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

VALID_BLEU_SENTENCES = 500
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def valid_bleu(model: Any, data: Any, world: Any) -> float | None:
    """sacreBLEU of greedy translations of the validation texts, or None where unavailable."""
    if not world.is_main:
        return None
    if data.valid_texts is None or data.tokenizer is None:
        _warn_once("valid_bleu: the data has no validation texts or tokenizer; BLEU skipped")
        return None
    try:
        from aiayn.config import DecodeConfig
        from aiayn.evaluate import sacre_bleu
        from aiayn.translator import Translator
    except ImportError as e:  # the decoding modules are optional for training
        _warn_once(f"valid_bleu: decoding is unavailable ({e}); BLEU skipped")
        return None
    sources, references = data.valid_texts
    sources = list(sources[:VALID_BLEU_SENTENCES])
    references = list(references[:VALID_BLEU_SENTENCES])
    translator = Translator(model, data.tokenizer, DecodeConfig(beam=1, nbest=1))
    hyps = [nbest[0][0] for nbest in translator.translate(sources)]
    score, _signature = sacre_bleu(hyps, references)
    return score
