"""A SentencePiece pair over one vocabulary: Marian's (OPUS-MT) tokenizer.  Section 5.1.

EXTENSION (off by default: aiayn trains its own shared BPE, ``aiayn.data.bpe``): a model
imported from Hugging Face Transformers (``aiayn import-hf``) keeps the tokenizer it was trained
with. Marian tokenizes the source with one SentencePiece model and the target with another,
and maps both models' pieces to ids through one shared vocabulary. As in Transformers'
``MarianTokenizer``: a leading language code such as ``>>de<<`` is one token, a piece that is
not in the vocabulary is UNK, and decoding joins the pieces and turns "▁" into spaces. Unlike
it, no Moses punctuation normalisation is applied (Transformers applies it only where
``sacremoses`` is installed).

Ids 0-3 are aiayn's specials (PAD, BOS, EOS, UNK) as in every aiayn vocabulary; the importer
reorders Marian's vocabulary so (``aiayn.export.hf``). Needs the ``sentencepiece`` library:
``pip install 'aiayn[hf]'``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from aiayn.data.specials import SPECIAL_TOKENS, UNK
from aiayn.errors import UserError

KIND = "sentencepiece-pair"
INSTALL = "pip install 'aiayn[hf]'"
SPIECE_UNDERLINE = "▁"


def _processor(proto: bytes) -> Any:
    try:
        import sentencepiece
    except ImportError:
        raise UserError(
            f"this tokenizer needs sentencepiece, which is not installed; install it with: "
            f"{INSTALL}"
        ) from None
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


def is_pair(text: str) -> bool:
    """Whether a tokenizer JSON text is a SentencePiece pair (rather than a BPE tokenizer)."""
    return text.lstrip().startswith('{"aiayn_tokenizer"')


class SentencePiecePair:
    """Source and target SentencePiece models over one vocabulary, ids 0-3 aiayn's specials.

    ``pieces[i]`` is the vocabulary entry of id i. The interface is ``aiayn.data.Tokenizer``'s.
    """

    def __init__(self, source: bytes, target: bytes, pieces: Sequence[str]) -> None:
        if tuple(pieces[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise UserError(
                f"tokenizer: ids 0-3 must be {', '.join(SPECIAL_TOKENS)}, "
                f"got {', '.join(pieces[: len(SPECIAL_TOKENS)])}"
            )
        self.source, self.target, self.pieces = bytes(source), bytes(target), list(pieces)
        self._src, self._tgt = _processor(self.source), _processor(self.target)
        self._ids = {p: i for i, p in enumerate(self.pieces)}
        if len(self._ids) != len(self.pieces):
            raise UserError("tokenizer: the vocabulary has a piece twice")

    # Serialisation (the checkpoint's metadata holds to_str()) --------------------------------

    def to_str(self) -> str:
        """The pair as JSON text: both models (base64) and the vocabulary."""
        return json.dumps(
            {
                "aiayn_tokenizer": KIND,
                "source_spm": base64.b64encode(self.source).decode("ascii"),
                "target_spm": base64.b64encode(self.target).decode("ascii"),
                "pieces": self.pieces,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_str(cls, s: str) -> SentencePiecePair:
        try:
            data = json.loads(s)
            source = base64.b64decode(data["source_spm"])
            target = base64.b64decode(data["target_spm"])
            pieces = list(data["pieces"])
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"tokenizer: not a valid {KIND} JSON ({e})") from None
        return cls(source, target, pieces)

    def save(self, path: str | Path) -> None:
        from aiayn.storage import write_text

        write_text(path, self.to_str())

    # Text <-> ids ---------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def encode(self, text: str) -> list[int]:
        """The ids of a source text, without special tokens (UNK for a piece not in the vocab)."""
        code: list[int] = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:  # a language code
            code, text = [self._ids.get(text[: end + 2], UNK)], text[end + 2 :]
        pieces = self._src.encode(text, out_type=str)
        return code + [self._ids.get(p, UNK) for p in pieces]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def encode_target(self, text: str) -> list[int]:
        """The ids of a target text (a reference), with the target model."""
        return [self._ids.get(p, UNK) for p in self._tgt.encode(text, out_type=str)]

    def encode_target_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode_target(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        """The target text of ids; special tokens (UNK too) are skipped, as by Transformers."""
        n = len(SPECIAL_TOKENS)
        keep = [self.pieces[int(i)] for i in ids if n <= int(i) < len(self.pieces)]
        return self._tgt.decode_pieces(keep).replace(SPIECE_UNDERLINE, " ").strip()

    def decode_batch(self, batch: Iterable[Iterable[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]

    def id_to_token(self, i: int) -> str:
        return self.pieces[int(i)]

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Readable pieces for plot axes: SentencePiece's own, "▁" marking a leading space."""
        n = len(self.pieces)
        return [self.pieces[int(i)] if 0 <= int(i) < n else f"<{int(i)}?>" for i in ids]

    def settings(self) -> dict[str, object]:
        """The settings recorded in a manifest: models, vocabulary size, specials."""
        return {
            "library": "sentencepiece",
            "model": KIND,
            "vocab_size": self.vocab_size,
            "special_tokens": list(SPECIAL_TOKENS),
        }
