"""From a corpus to a prepared data directory: clean, split, learn the shared BPE, encode.

Section 5.1: sentence pairs, one byte-pair vocabulary shared by source and target. The steps,
each streaming so that a WMT-sized corpus (4.5M pairs) stays within a small memory budget:

1. Stage: read every pair, collapse whitespace (and lowercase, if asked: the tokenizer then
   lowercases what it encodes too), drop empty pairs, write them to staging files
   and keep two 64-bit hashes per pair (of the pair, and of its English side).
2. Split: sources without a predefined split are split by the hash of the English side, so an
   English sentence never appears in two splits. With predefined splits, training pairs whose
   English side occurs in valid or test are dropped ("overlap"). Repeated pairs are dropped
   from the splits of sources that ask for it ("duplicate").
3. Learn the BPE model on the training split's source and target text together.
4. Encode every split; training pairs over the length limit (BPE tokens) or with an extreme
   length ratio (UTF-8 bytes, see ``ratio_ok``) are dropped. Write the ids, the cleaned text,
   and finally the manifest.

Every dropped pair is counted under its reason; the counts go into the manifest and summary.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import time
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aiayn.data import layout
from aiayn.data.bpe import Tokenizer
from aiayn.data.clean import collapse
from aiayn.data.corpora import Corpus
from aiayn.data.store import (
    SIDES,
    SPLITS,
    IdWriter,
    building_directory,
    ids_dtype,
    write_manifest,
)
from aiayn.errors import UserError

log = logging.getLogger(__name__)

SPLIT_CODE = {"all": 0, "train": 1, "valid": 2, "test": 3}
CHUNK = 10_000  # pairs encoded at a time


@dataclass(frozen=True, kw_only=True)
class PrepareOptions:
    """Settings of ``prepare`` that are not the corpus itself (all recorded in the manifest)."""

    src_lang: str
    tgt_lang: str
    vocab_size: int = 8000  # 5.1: the paper's shared vocabulary has about 37000 tokens
    min_frequency: int = 2  # BPE merges need a pair seen at least this often
    bpe_max_pairs: int = 300_000  # learn the BPE on at most this many training pairs (0: all)
    max_len: int = 250  # BPE tokens per side (specials excluded), training pairs only
    max_ratio: float = 3.0  # longer / shorter side in UTF-8 bytes (+10), training pairs only
    max_words: int = 0  # EXTENSION: keep only pairs of at most this many words a side, every
    #                     split (a subset of short sentences, e.g. for the demo); 0: no limit
    min_words: int = 0  # EXTENSION: ... and at least this many words on the longer side
    lowercase: bool = False  # EXTENSION: lowercase every text, the tokenizer's input too (the
    #                          Multi30k literature trains on, and scores, lowercased text)
    valid_share: float = 0.02  # hash-split sources: share of English sentences for valid
    test_share: float = 0.02  # ... and for test
    seed: int = 1  # salts the split hash
    overwrite: bool = False
    progress: bool = False

    def __post_init__(self) -> None:
        if self.vocab_size < 1:
            raise UserError(f"--vocab-size must be >= 1, got {self.vocab_size}")
        if self.max_len < 1:
            raise UserError(f"--max-len must be >= 1, got {self.max_len}")
        if self.bpe_max_pairs < 0:
            raise UserError(f"--bpe-max-pairs must be >= 0, got {self.bpe_max_pairs}")
        if self.max_words < 0:
            raise UserError(f"--max-words must be >= 0, got {self.max_words}")
        if self.min_words < 0:
            raise UserError(f"--min-words must be >= 0, got {self.min_words}")
        if self.max_words and self.min_words > self.max_words:
            raise UserError(
                f"--min-words {self.min_words} is above --max-words {self.max_words}: no pair fits"
            )
        if self.max_ratio < 1:
            raise UserError(f"--max-ratio must be >= 1, got {self.max_ratio}")
        for name in ("valid_share", "test_share"):
            v = getattr(self, name)
            if not 0 <= v < 0.5:
                raise UserError(f"--{name.replace('_', '-')} must be in [0, 0.5), got {v}")


def _hash64(text: str, salt: bytes = b"") -> int:
    return int.from_bytes(
        hashlib.blake2b(text.encode(), digest_size=8, key=salt).digest(), "little"
    )


def _bar(
    iterable: Any, progress: bool, desc: str, total: int | None = None, unit: str = " pairs"
) -> Any:
    if not progress:
        return iterable
    from tqdm import tqdm

    # disable=None: no bar when stderr is not a terminal (a log file is not flooded)
    return tqdm(
        iterable, desc=desc, total=total, unit=unit, leave=False, mininterval=0.5, disable=None
    )


@dataclass
class _Staged:
    n: int
    split: np.ndarray  # (N,) int8, SPLIT_CODE
    pair_hash: np.ndarray  # (N,) uint64
    en_hash: np.ndarray  # (N,) uint64


def _stage(corpus: Corpus, opts: PrepareOptions, stage: Path, drops: Counter) -> _Staged:
    """Step 1: every non-empty pair, oriented src -> tgt, into stage/all.{src,tgt}."""
    langs = corpus.langs
    if (opts.src_lang, opts.tgt_lang) == langs:
        flip = False
    elif (opts.tgt_lang, opts.src_lang) == langs:
        flip = True
    else:
        raise UserError(
            f"{corpus.name}: has languages {langs[0]}-{langs[1]}, not "
            f"{opts.src_lang}-{opts.tgt_lang}"
        )
    en_side = 0 if "en" not in langs else langs.index("en")
    salt = str(opts.seed).encode()
    codes, pair_h, en_h = array("b"), array("Q"), array("Q")
    with (
        (stage / "all.src").open("w", encoding="utf-8", newline="\n") as fs,
        (stage / "all.tgt").open("w", encoding="utf-8", newline="\n") as ft,
    ):
        for name, stream in corpus.splits.items():
            code = SPLIT_CODE[name]
            total = corpus.size_hint if name in ("all", "train") else None
            for pair in _bar(stream(), opts.progress, f"read {name}", total):
                a, b = collapse(pair[0]), collapse(pair[1])
                if opts.lowercase:  # the references in DIR/text too: BLEU on lowercased text
                    a, b = a.lower(), b.lower()
                if not a or not b:
                    drops["empty"] += 1
                    continue
                words = max(a.count(" "), b.count(" ")) + 1  # collapse() left single spaces
                if opts.max_words and words > opts.max_words:
                    drops["over_max_words"] += 1  # the subset asked for: counted, all splits
                    continue
                if words < opts.min_words:
                    drops["under_min_words"] += 1
                    continue
                en = (a, b)[en_side]
                src, tgt = (b, a) if flip else (a, b)
                fs.write(src + "\n")
                ft.write(tgt + "\n")
                codes.append(code)
                pair_h.append(_hash64(src + "\t" + tgt))
                en_h.append(_hash64(en, salt))
    return _Staged(
        len(codes),
        np.frombuffer(codes, dtype=np.int8).copy(),
        np.frombuffer(pair_h, dtype=np.uint64).copy(),
        np.frombuffer(en_h, dtype=np.uint64).copy(),
    )


def _first_occurrence(keys: np.ndarray) -> np.ndarray:
    """(N,) bool: True where keys[i] is the first occurrence of its value."""
    first = np.zeros(len(keys), dtype=bool)  # (N,)
    _, index = np.unique(keys, return_index=True)
    first[index] = True
    return first


def _assign_splits(st: _Staged, corpus: Corpus, opts: PrepareOptions, drops: Counter) -> np.ndarray:
    """Step 2: the final split code of every staged pair, -1 for dropped pairs."""
    split = st.split.copy()  # (N,)
    if (split == 0).any():
        # Hash split: the English sentences with the smallest (salted) hashes go to valid and
        # test; every pair with the same English side lands in the same split.
        keys = np.unique(st.en_hash[split == 0])  # (U,) sorted: a random order of sentences
        n_valid = round(opts.valid_share * len(keys))
        n_test = round(opts.test_share * len(keys))
        if len(keys) >= 3:  # tiny corpora still get a non-empty valid and test split
            n_valid = max(n_valid, 1 if opts.valid_share > 0 else 0)
            n_test = max(n_test, 1 if opts.test_share > 0 else 0)
        rank = np.searchsorted(keys, st.en_hash)  # (N,)
        hashed = split == 0
        split[hashed & (rank < n_valid)] = SPLIT_CODE["valid"]
        split[hashed & (rank >= n_valid) & (rank < n_valid + n_test)] = SPLIT_CODE["test"]
        split[hashed & (rank >= n_valid + n_test)] = SPLIT_CODE["train"]
    else:
        held_out = np.isin(split, (SPLIT_CODE["valid"], SPLIT_CODE["test"]))
        leak = (split == SPLIT_CODE["train"]) & np.isin(st.en_hash, st.en_hash[held_out])
        drops["overlap_with_valid_test"] += int(leak.sum())
        split[leak] = -1
    if corpus.dedupe:
        # pair hashes offset by split so that only repeats within one split are dropped
        alive = np.flatnonzero(split >= 0)  # (A,)
        salt = split[alive].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # (A,)
        dup = alive[~_first_occurrence(st.pair_hash[alive] ^ salt)]
        drops["duplicate"] += len(dup)
        split[dup] = -1
    return split


def _write_stage_splits(stage: Path, split: np.ndarray) -> dict[str, int]:
    """Write the kept staged pairs into stage/{split}.{src,tgt}; returns pairs per split."""
    counts = {}
    outs = {
        (name, side): (stage / f"{name}.{side}").open("w", encoding="utf-8", newline="\n")
        for name in SPLITS
        for side in SIDES
    }
    try:
        code_to_name = {SPLIT_CODE[n]: n for n in SPLITS}
        for side in SIDES:
            with (stage / f"all.{side}").open(encoding="utf-8", newline="\n") as fh:
                for code, line in zip(split.tolist(), fh, strict=True):
                    if code >= 0:
                        outs[(code_to_name[code], side)].write(line)
        for name in SPLITS:
            counts[name] = int((split == SPLIT_CODE[name]).sum())
    finally:
        for fh in outs.values():
            fh.close()
    return counts


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="\n") as fh:
        for line in fh:
            yield line.rstrip("\n")


def _chunks(a: Iterator[str], b: Iterator[str], size: int) -> Iterator[tuple[list[str], list[str]]]:
    xs, ys = [], []
    for x, y in zip(a, b, strict=True):
        xs.append(x)
        ys.append(y)
        if len(xs) == size:
            yield xs, ys
            xs, ys = [], []
    if xs:
        yield xs, ys


RATIO_SLACK = 10  # bytes added to both lengths, so that "OK" -> "In Ordnung" is no outlier


def ratio_ok(src: str, tgt: str, max_ratio: float) -> bool:
    """(longer + 10) <= max_ratio * (shorter + 10), lengths in UTF-8 bytes.

    Bytes rather than words or BPE tokens: German compounds ("siebenundneunzig") and scripts
    without spaces are not penalised, and a CJK character weighs about three Latin letters.

    >>> ratio_ok("OK", "In Ordnung", 3.0), ratio_ok("Yes.", "x" * 100, 3.0)
    (True, False)
    """
    a, b = len(src.encode()), len(tgt.encode())
    return max(a, b) + RATIO_SLACK <= max_ratio * (min(a, b) + RATIO_SLACK)


def _length_stats(lengths: np.ndarray) -> dict[str, float]:
    if len(lengths) == 0:
        return {"min": 0, "mean": 0.0, "p50": 0, "p90": 0, "p99": 0, "max": 0}
    p50, p90, p99 = np.percentile(lengths, [50, 90, 99]).tolist()
    return {
        "min": int(lengths.min()),
        "mean": round(float(lengths.mean()), 2),
        "p50": p50,
        "p90": p90,
        "p99": p99,
        "max": int(lengths.max()),
    }


def _encode_split(
    name: str, tok: Tokenizer, stage: Path, root: Path, opts: PrepareOptions, drops: Counter
) -> dict[str, Any]:
    """Step 4 for one split: encode, filter (train only), write ids and cleaned text."""
    dtype = ids_dtype(tok.vocab_size)
    writers = {side: IdWriter(layout.ids_paths(root, name, side), dtype) for side in SIDES}
    f_src = layout.text_path(root, name, opts.src_lang).open("w", encoding="utf-8", newline="\n")
    f_tgt = layout.text_path(root, name, opts.tgt_lang).open("w", encoding="utf-8", newline="\n")
    src_lines, tgt_lines = _lines(stage / f"{name}.src"), _lines(stage / f"{name}.tgt")
    with f_src, f_tgt:
        chunks = _chunks(src_lines, tgt_lines, CHUNK)
        unit = f" x{CHUNK} pairs"
        for xs, ys in _bar(chunks, opts.progress, f"encode {name}", unit=unit):
            sx, sy = tok.encode_batch(xs), tok.encode_batch(ys)
            keep = []
            for i, (a, b) in enumerate(zip(sx, sy, strict=True)):
                # DEVIATION(5.1): the paper does not say how its pairs were cleaned; training
                # pairs over max_len tokens or with an extreme length ratio are dropped.
                if name == "train":
                    if max(len(a), len(b)) > opts.max_len:
                        drops["over_max_len"] += 1
                        continue
                    if not ratio_ok(xs[i], ys[i], opts.max_ratio):
                        drops["length_ratio"] += 1
                        continue
                keep.append(i)
            writers["src"].add([sx[i] for i in keep])
            writers["tgt"].add([sy[i] for i in keep])
            f_src.writelines(xs[i] + "\n" for i in keep)
            f_tgt.writelines(ys[i] + "\n" for i in keep)
    lengths = {side: w.close() for side, w in writers.items()}
    return {
        "pairs": len(lengths["src"]),
        "tokens": {side: int(lengths[side].sum()) for side in SIDES},
        "lengths": {side: _length_stats(lengths[side]) for side in SIDES},
    }


def prepare(corpus: Corpus, out: str | Path, opts: PrepareOptions) -> dict[str, Any]:
    """Build the prepared data directory out from corpus (atomically); returns the manifest."""
    started = time.perf_counter()
    drops: Counter = Counter()
    with building_directory(out, overwrite=opts.overwrite) as root:
        stage = root / "stage"
        stage.mkdir()
        layout.make_dirs(root)
        staged = _stage(corpus, opts, stage, drops)
        split = _assign_splits(staged, corpus, opts, drops)
        staged_counts = _write_stage_splits(stage, split)
        (stage / "all.src").unlink()
        (stage / "all.tgt").unlink()
        if staged_counts["train"] == 0:
            raise UserError(f"{corpus.name}: no training pairs left after cleaning ({dict(drops)})")

        # DEVIATION(5.1): the paper does not say how much text its BPE was learned on. Above
        # bpe_max_pairs, every k-th training pair is used: the trainer needs about 1 KB per
        # distinct word, and the millions of distinct words of WMT would not fit in 2 GB.
        n_train = staged_counts["train"]
        every = max(1, -(-n_train // opts.bpe_max_pairs)) if opts.bpe_max_pairs else 1
        n_bpe = -(-n_train // every)
        log.info("learning the shared BPE on %d of %d training pairs", n_bpe, n_train)

        def texts() -> Iterator[str]:
            for side in SIDES:
                for i, line in enumerate(_lines(stage / f"train.{side}")):
                    if i % every == 0:
                        yield line

        tok = Tokenizer.train(
            texts(),
            opts.vocab_size,
            min_frequency=opts.min_frequency,
            length=2 * n_bpe,
            show_progress=opts.progress and sys.stderr.isatty(),  # its bar: terminals only
            lowercase=opts.lowercase,
        )
        tok.save(layout.tokenizer_path(root))
        splits = {name: _encode_split(name, tok, stage, root, opts, drops) for name in SPLITS}
        for f in stage.iterdir():
            f.unlink()
        stage.rmdir()
        for name, text in corpus.notices.items():  # a licence and its attribution
            (root / name).write_text(text, encoding="utf-8", newline="\n")
        replaced = getattr(corpus.decode_counter, "replaced_lines", 0)
        source_drops = {f"source:{k}": v for k, v in sorted(corpus.drops.items())}
        manifest = {
            "source": corpus.name,
            "source_info": corpus.info,
            "notices": sorted(corpus.notices),
            "src_lang": opts.src_lang,
            "tgt_lang": opts.tgt_lang,
            "options": asdict(opts),
            "tokenizer": {**tok.settings(), "trained_on_pairs": n_bpe},
            "ids_dtype": ids_dtype(tok.vocab_size).name,
            "splits": splits,
            "dropped": {
                k: v for k, v in {**source_drops, **dict(sorted(drops.items()))}.items() if v
            },
            "replaced_invalid_utf8_lines": replaced,
            "seconds": round(time.perf_counter() - started, 1),
        }
        write_manifest(root, manifest)
    return manifest
