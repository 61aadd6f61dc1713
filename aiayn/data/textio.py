"""Reading the user's text files: strict UTF-8 with the file and line named on error.

Bad input gets a clear answer: two files with different line counts, a TSV line without exactly
two fields, or invalid UTF-8 (unless ``errors="replace"``, which substitutes U+FFFD and counts
the lines it touched) raise a ``UserError`` that names the file, the line and the problem.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aiayn.errors import UserError

Errors = Literal["strict", "replace"]


@dataclass
class DecodeCounter:
    """Lines in which invalid UTF-8 was replaced (``errors="replace"``)."""

    replaced_lines: int = 0


def count_lines(path: str | Path) -> int:
    """Lines in a file: newline characters, plus one for a last line without a newline."""
    p = Path(path)
    n = 0
    last = b"\n"
    try:
        with p.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                n += chunk.count(b"\n")
                last = chunk[-1:]
    except FileNotFoundError:
        raise UserError(f"{p}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, expected a text file") from None
    return n + (last != b"\n")


def read_lines(
    path: str | Path, errors: Errors = "strict", counter: DecodeCounter | None = None
) -> Iterator[str]:
    """The lines of a UTF-8 file without their line ends (a leading BOM is dropped)."""
    p = Path(path)
    try:
        fh = p.open("rb")
    except FileNotFoundError:
        raise UserError(f"{p}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, expected a text file") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            raw = raw.rstrip(b"\n").rstrip(b"\r")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if errors != "replace":
                    raise UserError(
                        f"{p}:{lineno}: invalid UTF-8 ({e.reason} at byte {e.start} of the "
                        "line); fix the file or pass --errors replace"
                    ) from None
                line = raw.decode("utf-8", errors="replace")
                if counter is not None:
                    counter.replaced_lines += 1
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield line


def read_aligned(
    src: str | Path,
    tgt: str | Path,
    errors: Errors = "strict",
    counter: DecodeCounter | None = None,
) -> Iterator[tuple[str, str]]:
    """Pairs of lines from two aligned files; different line counts are a UserError."""
    n_src, n_tgt = count_lines(src), count_lines(tgt)
    if n_src != n_tgt:
        raise UserError(
            f"{src} has {n_src} lines but {tgt} has {n_tgt}: the two files must be aligned "
            "line by line"
        )
    yield from zip(read_lines(src, errors, counter), read_lines(tgt, errors, counter), strict=True)


def read_tsv(
    path: str | Path, errors: Errors = "strict", counter: DecodeCounter | None = None
) -> Iterator[tuple[str, str]]:
    """Pairs from a TSV file, one "source<TAB>target" a line; other shapes are a UserError."""
    for lineno, line in enumerate(read_lines(path, errors, counter), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            if not line.strip():
                yield "", ""  # an empty line is an empty pair: dropped and counted later
                continue
            raise UserError(
                f"{path}:{lineno}: expected 2 tab-separated fields (source, target), "
                f"found {len(fields)}"
            )
        yield fields[0], fields[1]
