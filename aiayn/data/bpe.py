"""One byte-pair vocabulary shared by source and target.  Section 5.1.

"Sentences were encoded using byte-pair encoding, which has a shared source-target vocabulary of
about 37000 tokens." The model is learned with the ``tokenizers`` library on the source and the
target sentences together. It is byte-level: every text is first mapped to its UTF-8 bytes, and
all 256 bytes are in the initial alphabet, so no input character is ever unknown and decoding
gives back the exact text (CJK, emoji, combining marks, runs of spaces). This plays the part of
the "byte fallback" of other BPE implementations.

Ids 0-3 are the special tokens of ``aiayn.data.specials.SPECIAL_TOKENS`` (PAD, BOS, EOS,
UNK). They are never produced by ``encode``: a literal "</s>" in a text is encoded as ordinary
bytes.

>>> tok = Tokenizer.train(["the cat sat", "die Katze sass"], vocab_size=300)
>>> tok.decode(tok.encode("the cat, 猫 😺"))
'the cat, 猫 😺'
>>> [tok.id_to_token(i) for i in range(4)]
['<pad>', '<s>', '</s>', '<unk>']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from aiayn.data.specials import SPECIAL_TOKENS
from aiayn.errors import UserError

# The 256 printable characters that the byte-level pre-tokenizer uses for the 256 bytes
# (the GPT-2 table): byte b is shown as chr(b) when printable, else as chr(256 + k).
_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
_PRINTABLE += list(range(ord("®"), ord("ÿ") + 1))


def _byte_table() -> dict[str, int]:
    table = {}
    k = 0
    for b in range(256):
        if b in _PRINTABLE:
            table[chr(b)] = b
        else:
            table[chr(256 + k)] = b
            k += 1
    return table


_CHAR_TO_BYTE = _byte_table()


class Tokenizer:
    """Shared byte-level BPE: text <-> ids, ids 0-3 the specials.  Section 5.1."""

    def __init__(self, backend: object) -> None:
        """Wrap a ``tokenizers.Tokenizer`` (use ``train``, ``load`` or ``from_str`` instead)."""
        self._tok = backend
        for i, name in enumerate(SPECIAL_TOKENS):
            if backend.token_to_id(name) != i:
                raise UserError(
                    f"tokenizer: special token {name!r} must have id {i}, "
                    f"has {backend.token_to_id(name)}"
                )
        # A literal "<s>" in a text is ordinary text, never the special token.
        backend.encode_special_tokens = True

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        *,
        min_frequency: int = 2,
        length: int | None = None,
        show_progress: bool = False,
        lowercase: bool = False,
    ) -> Tokenizer:
        """Learn one BPE model on source and target texts together.  Section 5.1.

        vocab_size counts the 4 specials and the 256 bytes; smaller values are raised to 260.
        ``length`` (the number of texts) only sizes the progress bar. ``lowercase`` puts a
        lowercasing normalizer in front of the BPE, so every text it encodes, in training and
        at translation, is lowercased first (decode(encode(t)) == t.lower()).

        >>> tok = Tokenizer.train(["Ein Hund"], vocab_size=270, lowercase=True)
        >>> tok.decode(tok.encode("Ein HUND"))
        'ein hund'
        """
        from tokenizers import Tokenizer as _Tok
        from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

        # DEVIATION(5.1): byte-level BPE (bytes, not characters, as the base alphabet), so that
        # no input is ever unknown and decoding is exact; the paper's BPE works on characters.
        tok = _Tok(models.BPE(unk_token=SPECIAL_TOKENS[3]))
        if lowercase:  # EXTENSION: the lowercased text of the Multi30k literature
            tok.normalizer = normalizers.Lowercase()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=max(int(vocab_size), len(SPECIAL_TOKENS) + 256),
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=show_progress,
        )
        tok.train_from_iterator(texts, trainer=trainer, length=length)
        return cls(tok)

    @classmethod
    def from_str(cls, s: str) -> Tokenizer:
        """The tokenizer serialised by ``to_str`` (the ``tokenizers`` JSON format).

        A SentencePiece pair's JSON (an imported Marian model's, ``aiayn.data.spm``) gives that
        tokenizer instead: it has the same interface.
        """
        from tokenizers import Tokenizer as _Tok

        from aiayn.data import spm

        if spm.is_pair(s):
            return spm.SentencePiecePair.from_str(s)  # type: ignore[return-value]
        try:
            return cls(_Tok.from_str(s))
        except Exception as e:  # tokenizers raises its own exception type
            if isinstance(e, UserError):
                raise
            raise UserError(f"tokenizer: not a valid tokenizer JSON ({e})") from None

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """Read a tokenizer file written by ``save``; a missing or broken file is a UserError."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UserError(f"{p}: tokenizer file not found") from None
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"{p}: cannot read tokenizer ({e})") from None
        try:
            return cls.from_str(text)
        except UserError as e:
            raise UserError(f"{p}: {e}") from None

    def to_str(self) -> str:
        """The tokenizer as JSON text (the ``tokenizers`` format)."""
        return self._tok.to_str()

    def save(self, path: str | Path) -> None:
        """Write the tokenizer JSON to path, atomically."""
        from aiayn.storage import atomic_write

        text = self.to_str()

        def write(tmp: Path) -> None:
            tmp.write_text(text, encoding="utf-8")
            tmp.chmod(0o644)  # a data file, not a secret (mkstemp makes it private)

        atomic_write(path, write)

    @property
    def vocab_size(self) -> int:
        """V: the number of ids, specials included (the model's vocab_size)."""
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """The ids of text, without special tokens."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """encode for many texts at once (in parallel threads)."""
        # encode_batch_fast (tokenizers >= 0.20) skips the character offsets we never use
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        encs = encode(list(texts), add_special_tokens=False)
        return [e.ids for e in encs]

    def encode_target(self, text: str) -> list[int]:
        """The ids of a target text: ``encode``, the vocabulary being shared (5.1)."""
        return self.encode(text)

    def encode_target_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode_batch`` of target texts (a SentencePiece pair has its own for them)."""
        return self.encode_batch(texts)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ids; special tokens are skipped.  decode(encode(t)) == t."""
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def decode_batch(self, batch: Iterable[Iterable[int]]) -> list[str]:
        """decode for many id lists."""
        return [self.decode(ids) for ids in batch]

    def id_to_token(self, i: int) -> str:
        """The raw vocabulary entry of id i (byte-level characters)."""
        return self._tok.id_to_token(int(i))

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Readable pieces for plot axes: "▁" marks a leading space, partial UTF-8 as \\xNN.

        >>> tok = Tokenizer.train(["the cat sat on the mat"] * 3, vocab_size=270)
        >>> tok.tokens(tok.encode("the cat, 猫") + [2])
        ['the', '▁cat', ',', '▁', '\\\\xe7', '\\\\x8c', '\\\\xab', '</s>']
        """
        out = []
        for i in ids:
            piece = self._tok.id_to_token(int(i))
            if piece is None:
                out.append(f"<{int(i)}?>")
            elif piece in SPECIAL_TOKENS:
                out.append(piece)
            else:
                raw = bytes(_CHAR_TO_BYTE.get(c, 63) for c in piece)
                text = raw.decode("utf-8", errors="backslashreplace")
                out.append(text.replace(" ", "▁").replace("\n", "\\n").replace("\t", "\\t"))
        return out

    def settings(self) -> dict[str, object]:
        """The settings recorded in a manifest: model, vocabulary size, specials."""
        model = json.loads(self.to_str()).get("model", {})
        return {
            "library": "tokenizers",
            "model": model.get("type", "BPE"),
            "byte_level": True,
            "vocab_size": self.vocab_size,
            "merges": len(model.get("merges", [])),
            "special_tokens": list(SPECIAL_TOKENS),
        }
