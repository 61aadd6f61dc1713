"""Text in, translations out: a checkpoint, its tokenizer and the searches.  Section 6.1.

``load_translator(PATH, DecodeConfig())`` accepts a model file (``.safetensors``, e.g. from
``aiayn average``), a checkpoint directory (``model.safetensors`` inside) or a run directory
(its latest checkpoint). The tokenizer comes from the checkpoint's metadata unless one is given.
Sentences are sorted by length and batched under a token budget; results come back in input
order. Bad input is handled, never fatal: an empty line gives an empty translation (EOS alone,
scored by the model), a line longer than any seen in training is translated with a warning
(sinusoids extend to any position), a line over ``max_input_tokens`` (default: the model's
usable length, at most 1024 tokens) is not translated at all and gives an empty n-best list
(so a 1 MB line never reaches the search, whose memory grows with S times T), and unknown
characters go through the tokenizer's bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from aiayn.config import DecodeConfig
from aiayn.data.specials import EOS, PAD
from aiayn.decode import BeamStep, Hypothesis, max_lengths, model_step_fn, search
from aiayn.errors import UserError
from aiayn.kernels import Kernels, kernel_ops
from aiayn.model import Transformer
from aiayn.run_dir import resolve_checkpoint
from aiayn.weights import load_model

log = logging.getLogger(__name__)

TOKENIZER_KEY = "tokenizer"  # checkpoint metadata: Tokenizer.to_str()
TRAINED_LENGTH_KEY = "max_train_length"  # checkpoint metadata: longest sequence (tokens) trained on
DEFAULT_INPUT_LIMIT = 1024  # tokens of one input line (without EOS) when none is given


def length_batches(
    sources: Sequence[Sequence[int]],
    max_tokens: int,
    max_sentences: int,
    equal_length: bool = False,
) -> list[list[int]]:
    """Indices of sources in batches of similar length, longest first, under the budgets.

    Sorted by length, each source joins the last batch while that batch keeps at most
    ``max_sentences`` sources and B * (its first, longest |X| + EOS) <= ``max_tokens``; with
    ``equal_length`` also only while the lengths are equal (CTranslate2 takes one maximum
    length per call). Shared by ``Translator`` and the exported engines' translators.
    """
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
    out: list[list[int]] = []
    for i in order:
        last = out[-1] if out else None
        if (
            last is not None
            and (not equal_length or len(sources[last[0]]) == len(sources[i]))
            and len(last) < max_sentences
            and (len(last) + 1) * (len(sources[last[0]]) + 1) <= max_tokens
        ):
            last.append(i)
        else:
            out.append([i])
    return out


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Translator:
    """A model in eval mode with its tokenizer and search settings.  Section 6.1.

    ``max_tokens`` bounds B * S (source tokens with padding) of a batch and ``max_sentences``
    its B; the search multiplies the rows by the beam. ``cached=False`` re-runs the decoder on
    the whole prefix each step (for comparison only).
    """

    model: Transformer
    tokenizer: Any  # aiayn.data.Tokenizer
    config: DecodeConfig
    max_tokens: int = 6000
    max_sentences: int = 128
    cached: bool = True
    trained_length: int | None = None
    max_input_tokens: int | None = None  # None: the model's usable length, at most 1024

    def __post_init__(self) -> None:
        self.model.eval()
        if self.tokenizer.vocab_size != self.model.config.vocab_size:
            raise UserError(
                f"the tokenizer has {self.tokenizer.vocab_size} tokens but the model's vocabulary "
                f"has {self.model.config.vocab_size}: use the tokenizer the model was trained with"
            )

    @property
    def device(self) -> torch.device:
        return self.model.embedding.device

    @property
    def input_limit(self) -> int:
        """The most tokens (EOS not counted) a line may have to be translated.

        ``max_input_tokens`` if given, else 1024; a learned positional table caps it at its
        size less the EOS position (sinusoids extend to any position).
        """
        limit = self.max_input_tokens if self.max_input_tokens is not None else DEFAULT_INPUT_LIMIT
        cfg = self.model.config
        if cfg.positions == "learned":
            limit = min(limit, cfg.max_positions - 1)
        return limit

    def encode(
        self,
        lines: Sequence[str],
        first_line: int = 1,
        on_long: Callable[[int, int, int], None] | None = None,
    ) -> list[list[int]]:
        """Token ids of each line (no specials), with a warning for lines beyond training.

        A line of only whitespace is the empty line. A line longer than any sentence trained on
        is reported to ``on_long(line_number, n_tokens, longest_trained)`` (default: a warning
        in the log); both counts are BPE tokens without EOS, as ``input_limit`` counts them.
        """
        ids = self.tokenizer.encode_batch([x if x.strip() else "" for x in lines])
        for n, x in enumerate(ids):
            if len(x) > self.input_limit:
                continue  # not translated (see translate)
            # trained_length counts EOS (the longest sequence trained on): the line counts + 1
            if self.trained_length is not None and len(x) + 1 > self.trained_length:
                if on_long is not None:
                    on_long(first_line + n, len(x), self.trained_length - 1)
                    continue
                log.warning(
                    "line %d: %d tokens, longer than any sentence in training (%d tokens); "
                    "translating anyway (the sinusoidal positions extend, quality may drop)",
                    first_line + n,
                    len(x),
                    self.trained_length - 1,
                )
        return ids

    def batches(self, sources: Sequence[Sequence[int]]) -> list[list[int]]:
        """Indices of sources in batches of similar length (longest first) under the budget."""
        return length_batches(sources, self.max_tokens, self.max_sentences)

    def translate_ids(
        self, sources: Sequence[Sequence[int]], record: list[list[BeamStep]] | None = None
    ) -> list[list[Hypothesis]]:
        """The n-best list of each source (token ids without specials), in input order.

        ``record``: when a list, it receives each source's beam steps (``decode.BeamStep``).
        """
        results: list[list[Hypothesis]] = [[] for _ in sources]
        if record is not None:
            record[:] = [[] for _ in sources]
        cfg = self.config
        for idx in self.batches(sources):
            S = max(len(sources[i]) for i in idx) + 1
            src = torch.full((len(idx), S), PAD, dtype=torch.long)  # (B, S)
            for row, i in enumerate(idx):
                src[row, : len(sources[i])] = torch.as_tensor(sources[i], dtype=torch.long)
                src[row, len(sources[i])] = EOS
            limit = max_lengths(src, cfg.max_len_a, cfg.max_len_b)  # (B,)
            # An empty line translates to the empty sentence: only EOS may follow BOS.
            limit = limit.masked_fill((src != PAD).sum(dim=1) == 1, 1)  # (B,)
            if self.model.config.positions == "learned":
                limit = limit.clamp(max=self.model.config.max_positions)
            src = src.to(self.device)  # (B, S)
            step = model_step_fn(self.model, src, cached=self.cached)
            steps: list[list[BeamStep]] | None = [] if record is not None else None
            found = search(step, limit, cfg, device=self.device, record=steps)
            for i, hyps in zip(idx, found, strict=True):
                results[i] = hyps
            if record is not None and steps is not None:
                for i, s in zip(idx, steps, strict=True):
                    record[i] = s
        return results

    def translate(
        self,
        lines: Sequence[str],
        first_line: int = 1,
        on_skip: Callable[[int, int], None] | None = None,
        on_long: Callable[[int, int, int], None] | None = None,
    ) -> list[list[tuple[str, Hypothesis]]]:
        """(detokenized text, hypothesis) n-best lists of each line, in input order.

        A line of more than ``input_limit`` tokens gets an empty list and is reported to
        ``on_skip(line_number, n_tokens)`` (default: a warning in the log); ``on_long`` as in
        ``encode``.
        """
        ids = self.encode(lines, first_line, on_long)
        limit = self.input_limit
        keep = [i for i, x in enumerate(ids) if len(x) <= limit]
        for i, x in enumerate(ids):
            if len(x) > limit:
                if on_skip is not None:
                    on_skip(first_line + i, len(x))
                else:
                    log.warning(
                        "line %d: %d tokens, over the limit of %d: not translated",
                        first_line + i,
                        len(x),
                        limit,
                    )
        hyps = self.translate_ids([ids[i] for i in keep])
        out: list[list[tuple[str, Hypothesis]]] = [[] for _ in ids]
        for i, hs in zip(keep, hyps, strict=True):
            out[i] = [(self.tokenizer.decode(h.tokens), h) for h in hs]
        return out


def load_tokenizer(path: str | Path) -> Any:
    from aiayn.data import Tokenizer

    return Tokenizer.load(path)


def load_translator(
    checkpoint: str | Path,
    config: DecodeConfig | None = None,
    tokenizer: Any = None,
    device: str | torch.device | None = None,
    fallback_tokenizer: Any = None,
    kernels: Kernels = "fast",
    **kw: Any,
) -> Translator:
    """A Translator from a checkpoint (file, checkpoint dir or run dir).  Section 6.1.

    ``tokenizer`` (a Tokenizer or a path) overrides the one in the checkpoint's metadata;
    ``fallback_tokenizer`` (e.g. the prepared data's) is used when the checkpoint has none;
    ``kernels`` are the operations the model runs with ("fast": ``aiayn.kernels.FAST``, proven
    equal to "plain", ``aiayn.model.PLAIN``): a run-time choice, not stored in checkpoints. A
    checkpoint whose weights do not fit its config, or a tokenizer of another vocabulary, is a
    UserError with one clear message.
    """
    from aiayn.data import Tokenizer

    path = resolve_checkpoint(checkpoint)
    model, meta = load_model(path, device or default_device(), ops=kernel_ops(kernels))
    if isinstance(tokenizer, str | Path):
        tokenizer = load_tokenizer(tokenizer)
    if tokenizer is None and TOKENIZER_KEY not in meta:
        tokenizer = fallback_tokenizer
    if tokenizer is None:
        if TOKENIZER_KEY not in meta:
            raise UserError(f"{path}: the checkpoint holds no tokenizer; give one with --tokenizer")
        try:
            tokenizer = Tokenizer.from_str(meta[TOKENIZER_KEY])
        except UserError as e:
            raise UserError(f"{path}: {e}") from None
    trained = meta.get(TRAINED_LENGTH_KEY)
    try:
        return Translator(
            model,
            tokenizer,
            config or DecodeConfig(),
            trained_length=int(trained) if trained else None,
            **kw,
        )
    except UserError as e:
        raise UserError(f"{path}: {e}") from None
