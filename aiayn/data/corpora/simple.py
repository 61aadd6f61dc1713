"""Small sources: numbers written as words (num2words), copy and reverse, the user's files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from aiayn.data.corpora import Corpus
from aiayn.data.textio import DecodeCounter, Errors, read_aligned, read_tsv
from aiayn.errors import UserError

NUMBER_LANGS = ("de", "fr")


def numbers_corpus(tgt_lang: str, n: int, seed: int = 1) -> Corpus:
    """n unique numbers as English words -> German or French words (num2words).

    >>> pairs = list(numbers_corpus("de", 3).splits["all"]())
    >>> len(pairs), all(en and de for en, de in pairs)
    (3, True)
    """
    if tgt_lang not in NUMBER_LANGS:
        raise UserError(f"numbers: target language must be one of {NUMBER_LANGS}, got {tgt_lang!r}")
    if n < 1:
        raise UserError(f"numbers: --num-pairs must be >= 1, got {n}")

    def stream() -> Iterator[tuple[str, str]]:
        from num2words import num2words

        rng = np.random.default_rng(seed)
        high = 1000 + 10 * n
        # half of the draws below 1000, so short numbers are common too (unique throughout)
        small = rng.permutation(min(1000, n))[: n // 2]
        rest = rng.choice(np.arange(1000, high), size=n - len(small), replace=False)
        for k in np.concatenate([small, rest]).tolist():
            yield num2words(k, lang="en"), num2words(k, lang=tgt_lang)

    return Corpus(
        "numbers",
        ("en", tgt_lang),
        {"all": stream},
        {"generator": "num2words", "seed": seed},
        size_hint=n,
    )


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def synthetic_corpus(
    task: str, n: int, seed: int = 1, min_len: int = 1, max_len: int = 20
) -> Corpus:
    """The copy or reverse task as text: n sequences of letters separated by spaces.

    >>> list(synthetic_corpus("reverse", 1, min_len=3, max_len=3).splits["all"]())
    [('m n t', 't n m')]
    """
    if task not in ("copy", "reverse"):
        raise UserError(f"task must be copy or reverse, got {task!r}")

    def stream() -> Iterator[tuple[str, str]]:
        rng = np.random.default_rng(seed)
        lengths = rng.integers(min_len, max_len + 1, size=n)  # (n,)
        for length in lengths.tolist():
            words = [LETTERS[i] for i in rng.integers(0, len(LETTERS), size=length).tolist()]
            out = words if task == "copy" else words[::-1]
            yield " ".join(words), " ".join(out)

    return Corpus(
        task,
        ("src", "tgt"),
        {"all": stream},
        {"task": task, "seed": seed},
        dedupe=False,
        size_hint=n,
    )


def files_corpus(
    langs: tuple[str, str],
    src: str | Path | None = None,
    tgt: str | Path | None = None,
    tsv: str | Path | None = None,
    errors: Errors = "strict",
) -> Corpus:
    """The user's own pairs: two aligned text files (--src, --tgt) or one TSV (--tsv)."""
    counter = DecodeCounter()
    if tsv is not None and (src is not None or tgt is not None):
        raise UserError("files: give either --src and --tgt, or --tsv, not both")
    if tsv is not None:
        if not Path(tsv).is_file():
            raise UserError(f"{tsv}: file not found")
        info = {"tsv": str(tsv)}

        def stream() -> Iterator[tuple[str, str]]:
            yield from read_tsv(tsv, errors, counter)
    elif src is not None and tgt is not None:
        for p in (src, tgt):
            if not Path(p).is_file():
                raise UserError(f"{p}: file not found")
        info = {"src": str(src), "tgt": str(tgt)}

        def stream() -> Iterator[tuple[str, str]]:
            yield from read_aligned(src, tgt, errors, counter)
    else:
        raise UserError("--source files needs --src FILE --tgt FILE, or --tsv FILE")
    return Corpus("files", langs, {"all": stream}, info, decode_counter=counter)
