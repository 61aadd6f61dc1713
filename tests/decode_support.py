"""Scripted step functions for the beam search's tests (tests/test_decode.py,
tests/test_decode_record.py): beam_search takes a step function, never the model (section 6.1).
"""

from __future__ import annotations

import torch

from aiayn.data import EOS


class PrefixLM:
    """A scripted step function whose scores depend only on (sentence key, prefix).

    It follows ``origin`` to know which sentence each row belongs to, and checks that the rows
    it is given are consistent (the prefix grows by one token a call).
    """

    def __init__(self, keys, vocab: int, scale: float = 2.0, eos_bias: float = 0.0, eos=EOS):
        self.keys, self.vocab, self.scale = list(keys), vocab, scale
        self.eos_bias, self.eos = eos_bias, eos
        self.sent: torch.Tensor | None = None
        self.calls = 0

    def scores(self, key: int, prefix: list[int]) -> torch.Tensor:
        g = torch.Generator().manual_seed(hash((key, *prefix)) % (2**31))
        s = torch.randn(self.vocab, generator=g) * self.scale  # (V,)
        s[self.eos] += self.eos_bias
        return s

    def __call__(self, prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        self.calls += 1
        if self.sent is None:
            assert prefix.size(1) == 1
            self.sent = torch.arange(prefix.size(0))
        elif origin is not None:
            self.sent = self.sent[origin]
        assert self.sent.numel() == prefix.size(0)
        rows = [
            self.scores(self.keys[s], p)
            for s, p in zip(self.sent.tolist(), prefix.tolist(), strict=True)
        ]
        return torch.stack(rows)  # (N, V)


def table_lm(table: dict[tuple[int, ...], dict[int, float]], vocab: int = 5):
    """A step function from a table: prefix (without BOS) -> {token: probability}."""

    def step(prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        out = torch.full((prefix.size(0), vocab), 1e-12)  # (N, V)
        for n, p in enumerate(prefix[:, 1:].tolist()):
            for tok, prob in table[tuple(p)].items():
                out[n, tok] = prob
        return out.log()  # (N, V)

    return step
