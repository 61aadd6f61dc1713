"""Peak memory of preparing and iterating a WMT-sized corpus (section 5.1: 4.5M pairs).

Generates a synthetic parallel corpus with realistic sentence lengths (log-normal, median about
22 words, like WMT14 EN-DE) over a Zipf-distributed vocabulary of a million made-up words a side
(a long tail of rare words: more distinct words than real text of the same size, so the BPE
trainer's memory is overestimated rather than under). Then, as a user would run
``aiayn prepare`` and ``aiayn train``, two separate processes:

1. prepare: the same ``prepare`` as ``aiayn prepare --source files`` (shared BPE of 37000 learned
   on at most 300k pairs, every pair encoded, ids written to memory-mapped files);
2. epoch: load the directory, cut one epoch into 25000-token batches, build every batch tensor.

Prints the time and the peak resident memory (ru_maxrss) of each process; both must stay under
2 GB.

    .venv/bin/python benchmarks/data_memory.py                    # 4.5M pairs: about an hour
    .venv/bin/python benchmarks/data_memory.py --pairs 100000     # a minute or two
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
from harness import parser, provenance, write_report

LIMIT_MB = 2048


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


def phase_prepare(src: Path, tgt: Path, out: Path, vocab_size: int) -> dict:
    from aiayn.data.corpora.simple import files_corpus
    from aiayn.data.prepare import PrepareOptions, prepare

    t = time.perf_counter()
    corpus = files_corpus(("en", "de"), src, tgt)
    opts = PrepareOptions(
        src_lang="en",
        tgt_lang="de",
        vocab_size=vocab_size,
        valid_share=0.001,
        test_share=0.001,
        progress=True,
    )
    manifest = prepare(corpus, out, opts)
    train = manifest["splits"]["train"]
    return {
        "prepare_s": round(time.perf_counter() - t, 1),
        "prepare_peak_rss_mb": round(peak_rss_mb(), 1),
        "train_pairs": train["pairs"],
        "train_tokens_src": train["tokens"]["src"],
        "train_tokens_tgt": train["tokens"]["tgt"],
        "bpe_trained_on_pairs": manifest["tokenizer"]["trained_on_pairs"],
        "vocab_size": manifest["tokenizer"]["vocab_size"],
    }


def phase_epoch(data_dir: Path, max_tokens: int) -> dict:
    from aiayn.data import batch_from_indices, load_prepared, token_batches

    t = time.perf_counter()
    train = load_prepared(data_dir).split("train")
    batches = token_batches(train, max_tokens, seed=1, epoch=0)
    batching_s = time.perf_counter() - t
    seen = padded = 0
    for idx in batches:
        batch = batch_from_indices(train, idx)
        seen += len(batch)
        padded += max(batch.src.numel(), batch.tgt_in.numel())
    return {
        "batching_s": round(batching_s, 1),
        "epoch_s": round(time.perf_counter() - t, 1),
        "batches": len(batches),
        "pairs_seen": seen,
        "mean_batch_fill": round(padded / max(1, len(batches)) / max_tokens, 3),
        "epoch_peak_rss_mb": round(peak_rss_mb(), 1),
    }


def child(*args: str) -> dict:
    """Run this script with args in a new process; its last stdout line is a JSON dict."""
    out = subprocess.run([sys.executable, __file__, *args], check=True, stdout=subprocess.PIPE)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def main() -> int:
    ap = parser(__doc__, quick="100,000 pairs (a minute or two)")
    ap.add_argument("--pairs", type=int, default=4_500_000)
    ap.add_argument("--vocab-size", type=int, default=37_000)
    ap.add_argument("--max-tokens", type=int, default=25_000)
    ap.add_argument("--workdir", type=Path, help="work in a temp dir under this one")
    ap.add_argument("--corpus-dir", type=Path, help="reuse (or keep) corpus.en/.de here")
    ap.add_argument("--phase", choices=("generate", "prepare", "epoch"), help=argparse.SUPPRESS)
    ap.add_argument("--paths", nargs="+", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "generate":
        generate(args.paths[0], args.paths[1], args.pairs)
        print(json.dumps({}))
        return 0
    if args.phase == "prepare":
        vocab = str(args.vocab_size)
        print(json.dumps(phase_prepare(args.paths[0], args.paths[1], args.paths[2], int(vocab))))
        return 0
    if args.phase == "epoch":
        print(json.dumps(phase_epoch(args.paths[0], args.max_tokens)))
        return 0

    if args.quick:
        args.pairs = 100_000
    results: dict = {"pairs": args.pairs, **provenance(args.threads)}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        corpus_dir = args.corpus_dir or work
        src, tgt = corpus_dir / "corpus.en", corpus_dir / "corpus.de"
        if not (src.is_file() and tgt.is_file()):
            corpus_dir.mkdir(parents=True, exist_ok=True)
            t = time.perf_counter()
            child("--pairs", str(args.pairs), "--phase", "generate", "--paths", str(src), str(tgt))
            results["generate_s"] = round(time.perf_counter() - t, 1)
        out = work / "prepared"
        results.update(
            child("--vocab-size", str(args.vocab_size), "--phase", "prepare", "--paths",
                  str(src), str(tgt), str(out))
        )  # fmt: skip
        print(f"prepare: {results['prepare_s']} s", file=sys.stderr)
        results.update(
            child("--max-tokens", str(args.max_tokens), "--phase", "epoch", "--paths", str(out))
        )
    print(json.dumps(results, indent=2))
    write_report(args.json, results)
    peak = max(results["prepare_peak_rss_mb"], results["epoch_peak_rss_mb"])
    ok = peak < LIMIT_MB and results["pairs_seen"] == results["train_pairs"]
    print(f"peak RSS: prepare {results['prepare_peak_rss_mb']:.0f} MiB, epoch "
          f"{results['epoch_peak_rss_mb']:.0f} MiB: {'OK (< 2 GB)' if ok else 'FAIL'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
