"""Example sentences of the Ding German-English dictionary (Debian package trans-de-en).

A line is ``de1 | de2 :: en1 | en2``: the two sides hold the same number of sub-entries,
aligned by position; inside a sub-entry, ``;`` separates synonyms, and ``{}``, ``[]``, ``()``,
``<>`` and ``/ABBR/`` hold notes. Most sub-entries are words or phrases; the full-sentence
examples (capitalised, ending in . ! or ?) on both sides are what we keep. Of the synonyms the
first is kept; sentences with a slash alternative (``He / It is``) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from aiayn.data.clean import collapse

_NOTES = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|<[^<>]*>|(?<!\S)/[^\s/]+/(?!\S)")
_SENTENCE = re.compile(r"[\"'„“‚‘»«¿¡]?[A-ZÄÖÜ0-9].*[.!?][\"'“”‘’«»]?")


def strip_notes(text: str) -> str:
    """Remove {} [] () <> notes and /ABBR/ marks, collapse whitespace.

    >>> strip_notes("Ich habe fertig. /IHF/ (Scherz) [humor.]")
    'Ich habe fertig.'
    """
    previous = None
    while previous != text:  # nested notes, innermost first
        previous, text = text, _NOTES.sub(" ", text)
    return collapse(text).replace(" .", ".").replace(" ,", ",")


def is_sentence(text: str) -> bool:
    """Capitalised, ends in . ! or ? (optionally quoted), and is not a slash alternative."""
    return bool(_SENTENCE.fullmatch(text)) and "/" not in text and " " in text


def parse_line(line: str) -> list[tuple[str, str]]:
    """(German, English) full-sentence examples of one dictionary line.

    >>> parse_line("Abfall {m} | Bitte nicht! | Das ist gut.; Das passt. :: "
    ...            "waste | Please do not! | That is good.; That fits.")
    [('Bitte nicht!', 'Please do not!'), ('Das ist gut.', 'That is good.')]
    """
    if line.startswith("#") or " :: " not in line:
        return []
    de_part, en_part = line.rstrip("\n").split(" :: ", 1)
    de_subs, en_subs = de_part.split(" | "), en_part.split(" | ")
    if len(de_subs) != len(en_subs):
        return []
    out = []
    for de, en in zip(de_subs, en_subs, strict=True):
        de = strip_notes(de.split("; ")[0])
        en = strip_notes(en.split("; ")[0])
        if is_sentence(de) and is_sentence(en):
            out.append((de, en))
    return out


def extract_ding(path: Path) -> Iterator[tuple[str, str]]:
    """(English, German) example sentences of a Ding dictionary file, in file order."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            for de, en in parse_line(line):
                yield en, de
