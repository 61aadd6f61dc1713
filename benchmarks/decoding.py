"""The decoding competitors of ``benchmarks/run.py``, all under one length rule.  Section 6.1.

Every competitor decodes the same source batch with aiayn's maximum-length rule,
``aiayn.decode.max_lengths``: at most floor(a |X| + b) output tokens a sentence, EOS included,
and a sentence ends at its EOS. The benchmark uses a = 1, b = 0 (output as long as the input),
so that random weights, which rarely emit EOS, decode about as many tokens as a trained model
would. aiayn's searches run through ``aiayn.decode`` (greedy and beam, with and without the
cache); the textbook greedy decode is ``TextbookTransformer.greedy`` (``baselines.py``), which
re-runs the decoder on the whole prefix and keeps finished sentences in the batch until every
sentence has ended.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from aiayn.decode import Hypothesis, beam_search, greedy_search, max_lengths, model_step_fn
from aiayn.model import Transformer

MAX_LEN_A, MAX_LEN_B = 1.0, 0  # at most |X| output tokens, EOS included

Run = Callable[[], list[list[Hypothesis]]]


def aiayn_runs(
    model: Transformer,
    src: Tensor,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    beam: int = 4,
) -> dict[str, Run]:
    """Callables translating src (B, S) once each: greedy and beam, cached and uncached."""
    limit = max_lengths(src, max_len_a, max_len_b)  # (B,)
    runs: dict[str, Run] = {}
    for cached in (True, False):
        name = "cached" if cached else "uncached"
        runs[f"greedy {name}"] = lambda c=cached: greedy_search(
            model_step_fn(model, src, c), limit, device=src.device
        )
        runs[f"beam {beam} {name}"] = lambda c=cached: beam_search(
            model_step_fn(model, src, c), limit, beam, device=src.device
        )
    return runs
