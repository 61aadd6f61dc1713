"""Prepare a corpus: clean and split text, learn the shared BPE, write token ids (section 5.1).

Sources (--source):
  packaged  real EN-DE (or EN-FR) translations from Debian packages, via apt-get (default)
  multi30k  Multi30k task 1 EN-DE, from --multi30k-dir or downloaded with checksums
  wmt14     WMT 2014 EN-DE, the paper's data, downloaded from statmt.org (large)
  tatoeba   everyday sentences, English-Chinese (en-zh, zh-en) or another bundle's language,
            from --tatoeba-file / $AIAYN_TATOEBA or downloaded (manythings.org, CC-BY 2.0 FR)
  numbers   numbers written as words, English -> German or French (num2words)
  copy      copy a sequence of letters (synthetic)
  reverse   reverse a sequence of letters (synthetic)
  files     your own pairs: --src FILE --tgt FILE, or --tsv FILE

The output directory is written atomically: it appears complete, or not at all.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from aiayn.cli._signals import interruptible

DEFAULT_VOCAB = {
    "packaged": 8000,
    "multi30k": 8000,
    "wmt14": 37000,  # 5.1: "a shared source-target vocabulary of about 37000 tokens"
    "tatoeba": 8000,
    "numbers": 1000,
    "copy": 300,
    "reverse": 300,
    "files": 8000,
}
DEFAULT_PAIRS = {"numbers": 20000, "copy": 10000, "reverse": 10000}
# Share of English sentences held out for valid and for test (hash split): Tatoeba's ~24,000
# English sentences give about 1,200 each, enough pairs (1,000-1,500) to score a model by.
DEFAULT_SHARE = {"tatoeba": 0.05}
SHARE = 0.02


# The byte-level BPE starts from the 256 bytes and the 4 special tokens (aiayn.data.bpe).
MIN_VOCAB = 260


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.cli.common import integer, real, seed
    from aiayn.data.corpora import SOURCES

    # DEVIATION(5.1): the default corpus is the packaged EN-DE one that any Debian machine can
    # obtain; the paper's WMT14 is --source wmt14 (it needs statmt.org).
    parser.add_argument("--source", choices=SOURCES, default="packaged", help="default packaged")
    parser.add_argument("--out", required=True, type=Path, help="the data directory to write")
    parser.add_argument(
        "--lang-pair",
        default=None,
        help="SRC-TGT, e.g. en-de (default), de-en, en-fr (packaged, numbers); labels for files",
    )
    parser.add_argument(
        "--vocab-size",
        type=integer(MIN_VOCAB, why="the 256 bytes and 4 special tokens of the byte-level BPE"),
        default=None,
        help="shared BPE vocabulary, specials included (default: 37000 wmt14, 8000 packaged/"
        "multi30k/files, 1000 numbers, 300 copy/reverse)",
    )
    parser.add_argument("--src", type=Path, help="files: source text, one sentence a line")
    parser.add_argument("--tgt", type=Path, help="files: target text, aligned with --src")
    parser.add_argument("--tsv", type=Path, help="files: one 'source<TAB>target' pair a line")
    parser.add_argument(
        "--multi30k-dir",
        type=Path,
        help="multi30k: local raw files, no download (default $AIAYN_MULTI30K, else a download)",
    )
    parser.add_argument(
        "--tatoeba-file",
        type=Path,
        help="tatoeba: a local bundle, its text file (cmn.txt), the zip or their directory "
        "(default $AIAYN_TATOEBA, else a download)",
    )
    parser.add_argument(
        "--mirror", help="multi30k/wmt14: base URL to download from instead of the official one"
    )
    parser.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: stop with the file and line (strict, default) or replace and count",
    )
    parser.add_argument(
        "--max-len",
        type=integer(1),
        default=250,
        help="max BPE tokens per side, train (default 250)",
    )
    parser.add_argument(
        "--max-ratio",
        type=real(1.0),
        default=3.0,
        help="max ratio of the sides' lengths in UTF-8 bytes (+10), train (default 3.0)",
    )
    parser.add_argument(
        "--max-words",
        type=integer(0),
        default=0,
        help="keep only pairs of at most N words a side, in every split (a subset of short "
        "sentences; default 0: no limit)",
    )
    parser.add_argument(
        "--min-words",
        type=integer(0),
        default=0,
        help="keep only pairs whose longer side has at least N words, in every split (default 0)",
    )
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="lowercase every text, and the tokenizer's input at translation (the Multi30k "
        "literature's flavour; default: the text as it is)",
    )
    parser.add_argument(
        "--origins",
        default=None,
        help="packaged: the parts to keep, comma-separated, of help (LibreOffice help), ui "
        "(LibreOffice UI strings) and ding (Ding's example sentences; EN-DE only) "
        "(default: all)",
    )
    parser.add_argument(
        "--num-pairs", type=integer(1), help="numbers/copy/reverse: pairs to generate"
    )
    parser.add_argument(
        "--valid-share",
        type=real(0.0, 0.5, hi_open=True),
        default=None,
        help="hash split (default 0.05 tatoeba, else 0.02)",
    )
    parser.add_argument(
        "--test-share",
        type=real(0.0, 0.5, hi_open=True),
        default=None,
        help="hash split (default 0.05 tatoeba, else 0.02)",
    )
    parser.add_argument(
        "--min-frequency", type=integer(1), default=2, help="BPE merges (default 2)"
    )
    parser.add_argument(
        "--bpe-max-pairs",
        type=integer(0),
        default=300_000,
        help="learn the BPE on at most this many training pairs, evenly spaced; 0: all "
        "(default 300000; bounds the memory at WMT scale)",
    )
    parser.add_argument(
        "--seed",
        type=seed,
        default=1,
        help="split hash and generators (default 1)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="downloads and extracted pairs (default $XDG_CACHE_HOME/aiayn or ~/.cache/aiayn)",
    )
    parser.add_argument("--refresh", action="store_true", help="download and extract again")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _lang_pair(args: argparse.Namespace) -> tuple[str, str]:
    from aiayn.errors import UserError

    default = {"copy": "src-tgt", "reverse": "src-tgt"}.get(args.source, "en-de")
    pair = args.lang_pair or default
    parts = pair.split("-")
    if len(parts) != 2 or not all(p.isalnum() for p in parts) or parts[0] == parts[1]:
        raise UserError(f"--lang-pair must look like en-de, got {pair!r}")
    return parts[0], parts[1]


# Flags that only one kind of source reads: given with another, they would be silently ignored.
_ONLY_FOR = {
    "--num-pairs": ("numbers", "copy", "reverse"),
    "--src": ("files",),
    "--tgt": ("files",),
    "--tsv": ("files",),
    "--multi30k-dir": ("multi30k",),
    "--tatoeba-file": ("tatoeba",),
    "--mirror": ("multi30k", "wmt14", "tatoeba"),
}


def open_corpus(args: argparse.Namespace, langs: tuple[str, str], cache: Path):
    """The Corpus that --source and its flags name."""
    from aiayn.data.corpora import simple
    from aiayn.data.corpora.download import check_url
    from aiayn.errors import UserError, require

    src, tgt = langs
    other = tgt if src == "en" else src
    n = args.num_pairs if args.num_pairs is not None else DEFAULT_PAIRS.get(args.source, 0)
    progress = not args.no_progress and sys.stderr.isatty()
    for flag, sources in _ONLY_FOR.items():
        given = getattr(args, flag.lstrip("-").replace("-", "_")) is not None
        if given and args.source not in sources:
            raise UserError(f"{flag} applies to --source {' or '.join(sources)}, not {args.source}")
    if args.mirror is not None:  # one check of the URL before any source downloads
        check_url(args.mirror, "--mirror")
    if args.source == "packaged":
        from aiayn.data.corpora.packaged import ORIGINS, packaged_corpus

        if "en" not in langs:
            raise UserError("--source packaged: --lang-pair en-de, de-en, en-fr or fr-en")
        origins = tuple(o.strip() for o in args.origins.split(",")) if args.origins else ORIGINS
        return packaged_corpus(
            other, cache, refresh=args.refresh, progress=progress, origins=origins
        )
    if args.origins:
        raise UserError(f"--origins applies to --source packaged, not {args.source}")
    if args.source == "multi30k":
        from aiayn.data.corpora.multi30k import BASE_URL, multi30k_corpus

        return multi30k_corpus(
            args.multi30k_dir,
            cache,
            base_url=args.mirror or BASE_URL,
            errors=args.errors,
            progress=progress,
        )
    if args.source == "wmt14":
        from aiayn.data.corpora.wmt14 import wmt14_corpus

        return wmt14_corpus(cache, base_url=args.mirror, errors=args.errors, progress=progress)
    if args.source == "tatoeba":
        from aiayn.data.corpora.tatoeba import BASE_URL as TATOEBA_URL
        from aiayn.data.corpora.tatoeba import tatoeba_corpus

        if "en" not in langs:
            raise UserError("--source tatoeba: --lang-pair en-zh or zh-en (or en-XX, XX-en)")
        return tatoeba_corpus(
            other,
            cache,
            file=args.tatoeba_file,
            base_url=args.mirror or TATOEBA_URL,
            refresh=args.refresh,
            progress=progress,
        )
    if args.source == "numbers":
        if "en" not in langs:
            raise UserError("--source numbers: --lang-pair en-de, en-fr, de-en or fr-en")
        require("num2words", "numbers")
        return simple.numbers_corpus(other, n, seed=args.seed)
    if args.source in ("copy", "reverse"):
        return simple.synthetic_corpus(args.source, n, seed=args.seed)
    for flag in ("--src", "--tgt", "--tsv"):
        path = getattr(args, flag[2:])
        if path is not None and path.is_dir():
            raise UserError(f"{flag} {path}: is a directory, not a text file")
        if path is not None and path.is_file() and path.stat().st_size == 0:
            raise UserError(f"{flag} {path}: is empty")
    return simple.files_corpus(langs, args.src, args.tgt, args.tsv, errors=args.errors)


def summary(manifest: dict, out: Path) -> str:
    """What `aiayn prepare` prints: the corpus, each split's pairs and tokens, what was dropped."""
    splits = manifest["splits"]
    lines = [
        f"prepared {manifest['source']} {manifest['src_lang']}-{manifest['tgt_lang']} in {out}"
    ]
    for name, info in splits.items():
        tok = info["tokens"]
        lines.append(
            f"  {name:5s} {info['pairs']:>9,} pairs, {tok['src']:>11,} source tokens, "
            f"{tok['tgt']:>11,} target tokens"
        )
    dropped = manifest["dropped"]
    kept = sum(s["pairs"] for s in splits.values())
    lines.append(f"  kept {kept:,} pairs, dropped {sum(dropped.values()):,}")
    for reason, count in dropped.items():
        if count:
            lines.append(f"    {reason}: {count:,}")
    if manifest["replaced_invalid_utf8_lines"]:
        lines.append(f"  invalid UTF-8 replaced in {manifest['replaced_invalid_utf8_lines']} lines")
    lines.append(
        f"  shared BPE vocabulary: {manifest['tokenizer']['vocab_size']:,} tokens "
        f"({manifest['tokenizer']['merges']:,} merges), {manifest['seconds']} s"
    )
    return "\n".join(lines)


def _share(given: float | None, source: str) -> float:
    return given if given is not None else DEFAULT_SHARE.get(source, SHARE)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    from aiayn.data.corpora.download import default_cache_dir
    from aiayn.data.prepare import PrepareOptions, prepare

    langs = _lang_pair(args)
    cache = args.cache_dir or default_cache_dir()
    opts = PrepareOptions(
        src_lang=langs[0],
        tgt_lang=langs[1],
        vocab_size=args.vocab_size if args.vocab_size is not None else DEFAULT_VOCAB[args.source],
        min_frequency=args.min_frequency,
        bpe_max_pairs=args.bpe_max_pairs,
        max_len=args.max_len,
        max_ratio=args.max_ratio,
        max_words=args.max_words,
        min_words=args.min_words,
        lowercase=args.lowercase,
        valid_share=_share(args.valid_share, args.source),
        test_share=_share(args.test_share, args.source),
        seed=args.seed,
        overwrite=args.overwrite,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    corpus = open_corpus(args, langs, cache)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # clean up as on Ctrl-C
    try:
        with interruptible():  # Ctrl-C: the half-written directory is removed first
            manifest = prepare(corpus, args.out, opts)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(summary(manifest, args.out))
    return 0
