"""Peak memory of preparing and iterating a WMT-sized corpus (section 5.1: 4.5M pairs).

Generates a synthetic parallel corpus with realistic sentence lengths (log-normal, median about
22 words, like WMT14 EN-DE) over a Zipf-distributed vocabulary of a million made-up words a side
(a long tail of rare words, as in real text; generated in a child process so that its memory
is not counted), runs the same
``prepare`` as ``aiayn prepare --source files`` (shared BPE of 37000, ids written to memory-mapped
files), then cuts one epoch into 25000-token batches and builds every batch tensor. Prints the
time of each step and the peak resident memory (ru_maxrss), which must stay under 2 GB.

    .venv/bin/python benchmarks/data_memory.py              # 4.5M pairs: slow (tens of minutes)
    .venv/bin/python benchmarks/data_memory.py --pairs 100000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_lexicon(rng: np.random.Generator, n: int) -> list[str]:
    """n made-up words of 2-11 letters (vectorised: one long random string, then slices)."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzäöüß"))
    lengths = rng.integers(2, 12, size=n)  # (n,)
    ends = np.cumsum(lengths)  # (n,)
    big = "".join(letters[rng.integers(0, len(letters), size=int(ends[-1]))].tolist())
    return [big[b - k : b] for b, k in zip(ends.tolist(), lengths.tolist(), strict=True)]


def generate(path_src: Path, path_tgt: Path, pairs: int, seed: int = 0) -> None:
    """Write pairs lines of synthetic source and target text (the target a noisy reordering)."""
    rng = np.random.default_rng(seed)
    n_words = 1_000_000
    src_lex, tgt_lex = make_lexicon(rng, n_words), make_lexicon(rng, n_words)
    zipf = 1.0 / np.arange(1, n_words + 1)
    zipf /= zipf.sum()
    chunk = 50_000
    with path_src.open("w", encoding="utf-8") as fs, path_tgt.open("w", encoding="utf-8") as ft:
        for start in range(0, pairs, chunk):
            n = min(chunk, pairs - start)
            lengths = np.clip(rng.lognormal(np.log(22), 0.6, size=n).astype(int), 1, 120)
            words = rng.choice(n_words, size=int(lengths.sum()), p=zipf)
            ends = np.cumsum(lengths)
            src_lines, tgt_lines = [], []
            for a, b in zip(ends - lengths, ends, strict=True):
                ws = words[a:b]
                src_lines.append(" ".join(src_lex[w] for w in ws))
                tw = ws[::-1] if (b % 3 == 0) else ws
                tgt_lines.append(" ".join(tgt_lex[w] for w in tw) + " .")
            fs.write("\n".join(src_lines) + "\n")
            ft.write("\n".join(tgt_lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4_500_000)
    parser.add_argument("--vocab-size", type=int, default=37_000)
    parser.add_argument("--max-tokens", type=int, default=25_000)
    parser.add_argument("--workdir", type=Path, help="work in a temp dir under this one")
    parser.add_argument(
        "--corpus-dir", type=Path, help="reuse (or keep) the generated corpus.en/.de here"
    )
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--generate-only", nargs=2, type=Path, metavar=("SRC", "TGT"))
    args = parser.parse_args()
    if args.generate_only:
        generate(*args.generate_only, args.pairs)
        return 0

    from aiayn.data import batch_from_indices, token_batches
    from aiayn.data.corpora.simple import files_corpus
    from aiayn.data.prepare import PrepareOptions, prepare
    from aiayn.data.store import load_prepared

    results: dict[str, float] = {"pairs": args.pairs}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        corpus_dir = args.corpus_dir or work
        src, tgt = corpus_dir / "corpus.en", corpus_dir / "corpus.de"
        if not (src.is_file() and tgt.is_file()):
            corpus_dir.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, __file__, "--pairs", str(args.pairs), "--generate-only"]
            subprocess.run([*cmd, str(src), str(tgt)], check=True)
        results["generate_s"] = round(time.perf_counter() - t, 1)
        results["rss_after_generate_mb"] = round(peak_rss_mb(), 1)
        print(f"generated {args.pairs:,} pairs in {results['generate_s']} s", file=sys.stderr)

        t = time.perf_counter()
        corpus = files_corpus(("en", "de"), src, tgt)
        opts = PrepareOptions(
            src_lang="en",
            tgt_lang="de",
            vocab_size=args.vocab_size,
            valid_share=0.001,
            test_share=0.001,
            progress=True,
        )
        manifest = prepare(corpus, work / "prepared", opts)
        results["prepare_s"] = round(time.perf_counter() - t, 1)
        results["rss_after_prepare_mb"] = round(peak_rss_mb(), 1)
        results["train_pairs"] = manifest["splits"]["train"]["pairs"]
        results["train_tokens_src"] = manifest["splits"]["train"]["tokens"]["src"]
        results["train_tokens_tgt"] = manifest["splits"]["train"]["tokens"]["tgt"]
        print(f"prepared in {results['prepare_s']} s", file=sys.stderr)

        t = time.perf_counter()
        train = load_prepared(work / "prepared").split("train")
        batches = token_batches(train, args.max_tokens, seed=1, epoch=0)
        results["batching_s"] = round(time.perf_counter() - t, 1)
        seen = 0
        padded = 0
        for idx in batches:
            batch = batch_from_indices(train, idx)
            seen += len(batch)
            padded += max(batch.src.numel(), batch.tgt_in.numel())
        results["epoch_s"] = round(time.perf_counter() - t, 1)
        results["batches"] = len(batches)
        results["pairs_seen"] = seen
        results["mean_batch_fill"] = round(padded / len(batches) / args.max_tokens, 3)
        results["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    ok = results["peak_rss_mb"] < 2048 and seen == results["train_pairs"]
    print(f"peak RSS {results['peak_rss_mb']:.0f} MiB: {'OK (< 2 GB)' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
