"""The note's 14 steps on a trained model: a sentence, its BPE pieces, the model's own translation.

Sections 3.1-3.5 and 6.1. ``TrainedExample.load(PATH)`` reads any checkpoint that ``aiayn
translate`` takes (a model file, a checkpoint or run directory, or a shipped model's name: the
translator's own ``load_translator`` resolves it), splits the sentence with the model's own
tokenizer, translates it as ``aiayn translate`` does by default (beam 4, alpha 0.6, on the CPU),
and copies the weights into float64. The walkthrough then replays the toy example's steps on this
pair (``aiayn.walkthrough.build_trained``): the same proofs, the target being the model's own
translation read with teacher forcing. Only the paper's model can be walked through: a checkpoint
with a departure the note's formulas do not show (pre-LN, learned positions, biases in the
attention, SiLU, ...) is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch

from aiayn.config import DecodeConfig, ModelConfig
from aiayn.data.specials import BOS, EOS
from aiayn.errors import UserError
from aiayn.walkthrough.doc import Para, Section, Table
from aiayn.walkthrough.example import Example, WalkthroughConfig, float64
from aiayn.walkthrough.steps import Steps

NOTE_SENTENCE = (
    "I love you."  # the note's source sentence, as a model trained on sentences reads it
)
MAX_SOURCE_TOKENS = 200  # the walkthrough's limit: the translation (+50) stays in the float64 table
# The prose that differs from the toy walkthrough's: no positional-encoding or backward section.
TEXTS = {"s1.text": "trained.s1.text", "ln.text": "trained.ln.text"}
# Each field the note's formulas assume, with the paper's value (docs/deviations.md lists the rest).
PAPER_MODEL = {
    "norm_first": False,  # 3.1: post-LN, LayerNorm(x + Sublayer(x))
    "positions": "sinusoidal",  # 3.5
    "attn_bias": False,  # 3.2.2: W^Q, W^K, W^V, W^O without biases
    "activation": "relu",  # 3.3, Eq. (2)
    "logits_bias": False,  # 3.4: L = Z_D E^T
    "decoder_start": "bos",
}


def check_paper_model(cfg: ModelConfig, where: str) -> None:
    """A UserError naming every field where the model departs from the note's formulas."""
    off = [f"{k}={getattr(cfg, k)!r}" for k, v in PAPER_MODEL.items() if getattr(cfg, k) != v]
    if cfg.d_k != cfg.d_v:
        off.append(f"d_k={cfg.d_k} != d_v={cfg.d_v}")
    if off:
        raise UserError(
            f"{where}: the walkthrough follows the paper's model, and this one departs from it "
            f"({', '.join(off)}); translate or explore it instead"
        )


@dataclass
class TrainedExample(Example):
    """A sentence, the model's own translation of it, and the trained model in float64.

    ``src_ids`` are the sentence's BPE tokens with EOS; ``tgt_ids`` the translation's tokens as
    the search gave them (ending with EOS); the word lists of ``Example`` hold their pieces.
    """

    checkpoint: str
    src_ids: list[int]
    tgt_ids: list[int]
    translation: str
    decoding: DecodeConfig

    @property
    def src(self) -> torch.Tensor:
        return torch.tensor([self.src_ids])  # (1, S)

    @property
    def tgt_in(self) -> torch.Tensor:
        return torch.tensor([[BOS, *self.tgt_ids[:-1]]])  # (1, T): shifted right (3.2.3)

    @property
    def tgt_out(self) -> torch.Tensor:
        return torch.tensor([self.tgt_ids])  # (1, T)

    @classmethod
    def load(cls, checkpoint: str | Path, cfg: WalkthroughConfig | None = None) -> TrainedExample:
        """The checkpoint's model, tokenizer and translation of ``cfg.source``.

        ``cfg`` gives the sentence (``source``), the prose's language, the decimals and the
        loss's label smoothing; its toy-model fields are not used.
        """
        from aiayn.translator import load_translator

        cfg = cfg or WalkthroughConfig(source=NOTE_SENTENCE)
        if not cfg.source.strip():
            raise UserError("--source: the sentence is empty")
        decoding = DecodeConfig()  # aiayn translate's defaults: beam 4, alpha 0.6 (6.1)
        translator = load_translator(checkpoint, decoding, device="cpu", kernels="plain")
        model = translator.model
        check_paper_model(model.config, str(checkpoint))
        tok = translator.tokenizer
        ids = tok.encode(cfg.source)
        if len(ids) > MAX_SOURCE_TOKENS:
            raise UserError(
                f"--source: {len(ids)} BPE tokens, over the walkthrough's limit of "
                f"{MAX_SOURCE_TOKENS}; give a shorter sentence"
            )
        with torch.no_grad():
            ((text, best), *_) = translator.translate([cfg.source])[0]
        src_ids, tgt_ids = [*ids, EOS], list(best.tokens)  # the search's tokens end with EOS
        vocab = list(tok.tokens(range(model.config.vocab_size)))
        pieces = [vocab[i] for i in src_ids]
        tgt_in = [vocab[BOS], *(vocab[i] for i in tgt_ids[:-1])]
        tgt_out = [vocab[i] for i in tgt_ids]
        model = float64(model).eval()
        return cls(
            cfg,
            vocab,
            pieces,
            tgt_in,
            tgt_out,
            model,
            str(checkpoint),
            src_ids,
            tgt_ids,
            text,
            decoding,
        )


def intro(st: Steps) -> Section:
    """The model, the sentence's BPE pieces, the translation, and what the view shows."""
    ex, mcfg, view = cast(TrainedExample, st.ex), st.model.config, st.view
    sec = Section("example", st.t("trained.title"))
    sizes = {"d": mcfg.d_model, "h": mcfg.n_heads, "dk": mcfg.d_k, "dff": mcfg.d_ff}
    sizes |= {"n": mcfg.n_layers, "nd": mcfg.decoder_layers, "v": mcfg.vocab_size}
    dec = ex.decoding
    search = (
        st.t("trained.greedy")
        if dec.beam == 1
        else st.t("trained.beam", k=dec.beam, alpha=f"{dec.alpha:g}")
    )
    heads = view.heads or tuple(range(1, mcfg.n_heads + 1))
    shown = {"rows": view.rows or "∞", "cols": view.cols or "∞", "top": view.top or "all"}
    pieces = zip(ex.src_words, ex.src_ids, strict=True)
    src_rows = [[str(p), w, str(i)] for p, (w, i) in enumerate(pieces)]
    targets = zip(ex.tgt_in_words, ex.tgt_out_words, ex.tgt_ids, strict=True)
    tgt_rows = [[str(t), w, y, str(i)] for t, (w, y, i) in enumerate(targets)]
    sec.add(
        Para(st.t("trained.text")),
        Para(
            st.t(
                "trained.model",
                path=ex.checkpoint,
                p=f"{st.model.num_parameters():,}",
                **sizes,
            )
        ),
        Para(st.t("trained.source", src=ex.cfg.source, n=len(ex.src_ids) - 1)),
        Table(st.header("trained.pieces"), src_rows),
        Para(st.t("trained.translation", tgt=ex.translation, search=search)),
        Table(st.header("trained.target"), tgt_rows),
        Para(
            st.t(
                "trained.shown",
                heads=st.t("sep").join(map(str, heads)),
                h=mcfg.n_heads,
                **shown,
            )
        ),
    )
    return sec
