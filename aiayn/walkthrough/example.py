"""The note's toy example: its settings, its vocabulary, its model in float64.

The note works with d_model = 6 and "6 dimensions to 8 word scores": the eight words are the
words of the source and the target together with the begin and end tokens,

    <s>  </s>  I  love  you  我  爱  你        (ids 0 .. 7)

There is no separate padding token: one sentence pair needs no padding, and the model's
``pad_id`` (which must name a vocabulary entry) is the id of ``<s>``, a token that never stands
where padding is looked for (the source, whose padding keys are masked, and the targets
y_1..y_n, </s>, whose padding rows the loss skips). The decoder input starts with <s>; the
decoder's self-attention uses the causal mask only, as in ``aiayn.model``.

>>> ex = Example.build(WalkthroughConfig())
>>> ex.vocab
['<s>', '</s>', 'I', 'love', 'you', '我', '爱', '你']
>>> ex.src_words, ex.tgt_in_words, ex.tgt_out_words
(['I', 'love', 'you', '</s>'], ['<s>', '我', '爱', '你'], ['我', '爱', '你', '</s>'])
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import torch

from aiayn.config import SEED_LIMIT, ModelConfig
from aiayn.errors import UserError
from aiayn.model import Transformer, sinusoidal_positions

BOS, EOS = "<s>", "</s>"

# A CJK character is a word by itself; anything else is split at white space.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana, CJK ideographs
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")


@dataclass(frozen=True, kw_only=True)
class WalkthroughConfig:
    """The walkthrough's settings: the note's example by default (not the paper's sizes)."""

    source: str = "I love you"  # the note's source sentence (any sentence works)
    target: str = "我 爱 你"  # its translation; CJK characters are words by themselves
    d_model: int = 6  # the note: d_model = 6
    n_heads: int = 2  # h; d_k = d_v = d_model / h = 3
    d_ff: int = 12  # the FFN's inner size, small like the rest (the paper: 4 d_model)
    n_layers: int = 1  # the note shows one layer; the paper stacks N = 6 (3.1)
    seed: int = 0  # the random initialisation
    label_smoothing: float = 0.1  # 5.4: eps_ls
    # EXTENSION: optimizer="sgd" shows a plain gradient step instead (off by default).
    optimizer: Literal["adam", "sgd"] = "adam"  # 5.3: Adam(0.9, 0.98, 1e-9)
    lr: float | None = None  # None: Eq. (3) at step lr_step
    # DEVIATION(5.3): the step shown uses the rate of step lr_step (the peak), not of step 1.
    lr_step: int = 4000  # the step whose Eq. (3) rate is used: 4000 = warmup, the peak
    warmup: int = 4000  # 5.3: warmup_steps
    decimals: int = 3  # how many decimals the matrices show
    lang: Literal["en", "zh"] = "en"  # the language of the prose

    def __post_init__(self) -> None:
        checks = (
            (self.d_model >= 2 and self.d_model % 2 == 0, "d_model", "must be even and >= 2"),
            (self.n_heads >= 1, "n_heads", "must be >= 1"),
            (self.d_model % max(self.n_heads, 1) == 0, "n_heads", "must divide d_model"),
            (self.d_ff >= 1, "d_ff", "must be >= 1"),
            (1 <= self.n_layers <= 12, "n_layers", "must be between 1 and 12"),
            (0 <= self.seed < SEED_LIMIT, "seed", "must be in [0, 2^32)"),
            (0.0 <= self.label_smoothing < 1.0, "label_smoothing", "must be in [0, 1)"),
            (self.lr is None or self.lr > 0, "lr", "must be > 0"),
            (self.lr_step >= 1, "lr_step", "must be >= 1 (Eq. (3) counts from 1)"),
            (self.warmup >= 1, "warmup", "must be >= 1"),
            (0 <= self.decimals <= 8, "decimals", "must be between 0 and 8"),
            (self.optimizer in ("adam", "sgd"), "optimizer", "must be adam or sgd"),
            (self.lang in ("en", "zh"), "lang", "must be en or zh"),
        )
        for ok, name, message in checks:
            if not ok:
                raise ValueError(f"{name}: {message}, got {getattr(self, name)!r}")


def words(text: str) -> list[str]:
    """Split a sentence into words: white space, and each CJK character on its own.

    >>> words("我爱你"), words("I love  you")
    (['我', '爱', '你'], ['I', 'love', 'you'])
    """
    return _WORD.findall(text)


def float64(model: Transformer) -> Transformer:
    """The model in float64, its positional table computed in float64 too.

    ``Transformer.positions`` caches its table in float32 precision whatever the model's dtype
    (about 3e-8 off in float64); the walkthrough's proofs and the twin's tests want the exact
    table, so it is rebuilt here in float64.
    """
    model.double()
    model._pe = sinusoidal_positions(256, model.config.d_model, dtype=torch.float64)
    return model


@dataclass
class Example:
    """The sentence pair, its vocabulary and ids, and the float64 model in eval mode."""

    cfg: WalkthroughConfig
    vocab: list[str]
    src_words: list[str]
    tgt_in_words: list[str]
    tgt_out_words: list[str]
    model: Transformer

    @classmethod
    def build(cls, cfg: WalkthroughConfig) -> Example:
        """Vocabulary <s>, </s>, then the words in order of first appearance; the model."""
        src, tgt = words(cfg.source), words(cfg.target)
        if not src:
            raise UserError("--source: the source sentence has no words")
        if not tgt:
            raise UserError("--target: the target sentence has no words")
        for w in (*src, *tgt):
            if w in (BOS, EOS):
                raise UserError(f"{w!r} is a special token and cannot be a word of the sentences")
        vocab = [BOS, EOS]
        for w in (*src, *tgt):
            if w not in vocab:
                vocab.append(w)
        model_cfg = ModelConfig(
            vocab_size=len(vocab),
            d_model=cfg.d_model,
            n_heads=cfg.n_heads,
            d_ff=cfg.d_ff,
            n_layers=cfg.n_layers,
            dropout=0.0,  # the walkthrough shows one deterministic pass (5.4's dropout: see text)
            pad_id=0,  # <s>: see the module docstring
        )
        with torch.random.fork_rng(devices=[]):  # the caller's random state is left alone
            torch.manual_seed(cfg.seed)
            model = float64(Transformer(model_cfg)).eval()
        return cls(cfg, vocab, [*src, EOS], [BOS, *tgt], [*tgt, EOS], model)

    def ids(self, ws: list[str]) -> torch.Tensor:
        """Token ids of a word list as a batch of one.  Shapes: -> (1, L)."""
        return torch.tensor([[self.vocab.index(w) for w in ws]])  # (1, L)

    @property
    def src(self) -> torch.Tensor:
        return self.ids(self.src_words)  # (1, S)

    @property
    def tgt_in(self) -> torch.Tensor:
        return self.ids(self.tgt_in_words)  # (1, T)

    @property
    def tgt_out(self) -> torch.Tensor:
        return self.ids(self.tgt_out_words)  # (1, T)
