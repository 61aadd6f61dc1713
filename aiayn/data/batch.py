"""The padded Batch and ``collate``, which frames token ids with the specials.  3.2.3, 5.1.

Stored token ids carry no special tokens; ``collate`` adds them: the source ends with EOS, the
decoder input is BOS + y ("output embeddings are offset by one position", 3.2.3) and the target
is y + EOS. Every tensor is right-padded with PAD, batch-first.

>>> b = collate([([5, 6], [7]), ([5], [8, 9])])
>>> b.src.tolist(), b.tgt_in.tolist(), b.tgt_out.tolist()
([[5, 6, 2], [5, 2, 0]], [[1, 7, 0], [1, 8, 9]], [[7, 2, 0], [8, 9, 2]])
>>> b.n_src_tokens, b.n_tgt_tokens
(5, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from aiayn.data.specials import BOS, EOS, PAD


@dataclass
class Batch:
    """src (B, S), tgt_in (B, T), tgt_out (B, T): int64 token ids, right-padded with PAD."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor

    @property
    def n_src_tokens(self) -> int:
        """Non-padding source tokens (EOS included)."""
        return int((self.src != PAD).sum())

    @property
    def n_tgt_tokens(self) -> int:
        """Non-padding target tokens (EOS included): the tokens the loss counts."""
        return int((self.tgt_out != PAD).sum())

    def __len__(self) -> int:
        return self.src.size(0)

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            self.src.to(device, non_blocking=True),
            self.tgt_in.to(device, non_blocking=True),
            self.tgt_out.to(device, non_blocking=True),
        )


def collate(pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> Batch:
    """Pad a list of (source ids, target ids) pairs into a Batch (specials added here)."""
    B = len(pairs)
    S = max(len(s) for s, _ in pairs) + 1
    T = max(len(t) for _, t in pairs) + 1
    src = torch.full((B, S), PAD, dtype=torch.long)  # (B, S)
    tgt_in = torch.full((B, T), PAD, dtype=torch.long)  # (B, T)
    tgt_out = torch.full((B, T), PAD, dtype=torch.long)  # (B, T)
    for b, (s, t) in enumerate(pairs):
        src[b, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        src[b, len(s)] = EOS
        tgt_in[b, 0] = BOS
        tgt_in[b, 1 : len(t) + 1] = torch.as_tensor(t, dtype=torch.long)
        tgt_out[b, : len(t)] = torch.as_tensor(t, dtype=torch.long)
        tgt_out[b, len(t)] = EOS
    return Batch(src, tgt_in, tgt_out)
