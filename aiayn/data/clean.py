"""Cleaning rules for sentence pairs, each one named so that every drop is counted.

Generic rules (every source): one line per sentence with collapsed whitespace; empty or
whitespace-only pairs are dropped. Rules for software strings (the LibreOffice help and UI
catalogs): accelerator marks are stripped (``_File``, ``~File``, ``&File``), and strings that
are only placeholders or markup (``%s``, ``%(x)d``, ``{0}``, ``$x``, ``<b>``, ``&amp;``) or look
like identifiers (``label_foo``) are dropped, as are pairs whose two sides are identical.

>>> collapse("  a\\n b\\t c ")
'a b c'
>>> strip_accelerators("Data _series:"), strip_accelerators("~Open"), strip_accelerators("&Save")
('Data series:', 'Open', 'Save')
>>> only_placeholders("%s: %(name)d {0} <b></b> &amp;"), only_placeholders("%s files")
(True, False)
>>> is_identifier("label_foo"), is_identifier("E_xit")
(True, False)
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(
    r"%\(\w+\)[a-zA-Z]"  # %(name)s
    r"|%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]"  # %s, %d, %5.2f
    r"|%\w+%?"  # %OBJECTNAME, %1
    r"|\$\(\w+\)|\$\w+\$?"  # $(ARG), $x, $NAME$
    r"|\{[\w.:]*\}"  # {0}, {name}
    r"|</?\w+[^>]*>"  # <b>, </b>, <a href=...>
    r"|&#?\w+;"  # &amp;
)
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|\w+\.\w+")


def collapse(text: str) -> str:
    """Whitespace runs (newlines and tabs included) become one space; the ends are stripped."""
    return " ".join(text.split())


def strip_accelerators(text: str) -> str:
    """Remove one keyboard accelerator mark (_ ~ &) before a letter or digit."""
    for mark in ("~", "_", "&"):
        if text.count(mark) == 1:
            i = text.index(mark)
            nxt = text[i + 1 : i + 2]
            if nxt.isalnum() and not (mark == "&" and re.match(r"&#?\w+;", text[i:])):
                text = text[:i] + text[i + 1 :]
    return text


def only_placeholders(text: str) -> bool:
    """True when nothing but placeholders, markup, punctuation and spaces is left."""
    rest = _PLACEHOLDER.sub("", text)
    return not any(c.isalpha() for c in rest)


def is_identifier(text: str) -> bool:
    """True for strings that look like program identifiers (snake_case, dotted names)."""
    return _IDENTIFIER.fullmatch(text.strip()) is not None


def software_string_issue(en: str, other: str) -> str | None:
    """The reason to drop a software-string pair (or None to keep it); sides already cleaned."""
    if not en or not other:
        return "empty"
    if is_identifier(en):
        return "identifier"
    if only_placeholders(en) or only_placeholders(other):
        return "placeholder_or_markup"
    if en == other:
        return "identical"
    return None


def clean_software_pair(
    en: str, other: str, accelerators: bool = True
) -> tuple[str, str, str | None]:
    """(en, other, reason): collapsed, accelerators stripped, and the reason to drop or None."""
    if is_identifier(collapse(en)):
        return collapse(en), collapse(other), "identifier"
    if accelerators:
        en, other = strip_accelerators(en), strip_accelerators(other)
    en, other = collapse(en), collapse(other)
    return en, other, software_string_issue(en, other)
