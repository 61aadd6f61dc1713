"""LibreOffice help pages and UI catalogs: human translations paired by identifier.

Help pages (``help/<lang>/text/**/*.html``) are parsed with ``html.parser``: the text of each
``p``, ``li``, ``h1``-``h6``, ``td`` and ``th`` element that carries an ``id`` attribute is
collected, and the two languages are joined on (page, id, occurrence of that id on the page).
Pairing by position would be wrong: some pages sort their entries by translated name.

UI catalogs (``resource/<lang>/LC_MESSAGES/*.mo``) are read with the standard ``gettext``
module: the msgid is the English text (keys are ``msgid``, ``context\\x04msgid``, or
``(msgid, n)`` for plural forms, of which n = 0 is kept).
"""

from __future__ import annotations

import gettext
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from aiayn.data.clean import collapse

TEXT_TAGS = frozenset({"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th"})
SKIP_TAGS = frozenset({"script", "style", "head", "title"})


class _HelpParser(HTMLParser):
    """Collects (id, text) of the text elements that carry an id, innermost element wins."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self._open: list[list] = []  # [tag, id, pieces, nested same-tag depth]
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP_TAGS:
            self._skip += 1
            return
        ident = dict(attrs).get("id") if tag in TEXT_TAGS else None
        if ident:
            self._open.append([tag, ident, [], 0])  # a new collector: its own end tag closes it
        elif self._open and self._open[-1][0] == tag:
            self._open[-1][3] += 1  # same tag nested without an id: not the collector's end
        elif tag == "br" and self._open:
            self._open[-1][2].append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
            return
        if not self._open or self._open[-1][0] != tag:
            return
        top = self._open[-1]
        if top[3] > 0:
            top[3] -= 1
            return
        self._open.pop()
        self.found.append((top[1], collapse("".join(top[2]))))

    def handle_data(self, data: str) -> None:
        if self._open and not self._skip:
            self._open[-1][2].append(data)

    def close(self) -> None:
        super().close()
        while self._open:  # elements left open at the end of the file
            top = self._open.pop()
            self.found.append((top[1], collapse("".join(top[2]))))


def help_paragraphs(html: str) -> dict[tuple[str, int], str]:
    """{(id, occurrence): text} of one help page.

    >>> page = '<p id="a">Click <b>OK</b>.</p><li id="a">Again</li><td id="b">x<p id="c">y</p></td>'
    >>> sorted(help_paragraphs(page).items())
    [(('a', 0), 'Click OK.'), (('a', 1), 'Again'), (('b', 0), 'x'), (('c', 0), 'y')]
    """
    parser = _HelpParser()
    parser.feed(html)
    parser.close()
    seen: dict[str, int] = {}
    out = {}
    for ident, text in parser.found:
        k = seen.get(ident, 0)
        seen[ident] = k + 1
        out[(ident, k)] = text
    return out


def pair_help_page(en_file: Path, other_file: Path) -> list[tuple[str, str]]:
    """(English, other) texts of one page joined on (id, occurrence), in English page order."""
    en = help_paragraphs(en_file.read_text(encoding="utf-8", errors="replace"))
    other = help_paragraphs(other_file.read_text(encoding="utf-8", errors="replace"))
    return [(text, other[key]) for key, text in en.items() if key in other]


def help_page_pairs(en_root: Path, other_root: Path) -> Iterator[tuple[str, Path, Path]]:
    """(relative page, English file, other file) for every page present in both trees."""
    for en_file in sorted(en_root.rglob("*.html")):
        rel = en_file.relative_to(en_root)
        other_file = other_root / rel
        if other_file.is_file():
            yield rel.as_posix(), en_file, other_file


def extract_help(en_root: Path, other_root: Path) -> Iterator[tuple[str, str, str]]:
    """(page, English, other) for every paired help paragraph of two help trees."""
    for rel, en_file, other_file in help_page_pairs(en_root, other_root):
        for en, other in pair_help_page(en_file, other_file):
            yield rel, en, other


def catalog_pairs(mo_file: Path) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a compiled gettext catalog; context dropped, plural form 0 kept."""
    with mo_file.open("rb") as fh:
        catalog = gettext.GNUTranslations(fh)._catalog
    for key, value in catalog.items():
        if isinstance(key, tuple):
            msgid, n = key
            if n != 0:
                continue
        else:
            msgid = key
        if not msgid:  # the header entry
            continue
        msgid = msgid.split("\x04", 1)[-1]
        yield msgid, value


def extract_catalogs(mo_dir: Path) -> Iterator[tuple[str, str, str]]:
    """(catalog name, msgid, msgstr) of every .mo file in a directory, in name order."""
    for mo_file in sorted(mo_dir.glob("*.mo")):
        for msgid, msgstr in catalog_pairs(mo_file):
            yield mo_file.stem, msgid, msgstr
