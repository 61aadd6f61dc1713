"""Serving speed and BLEU: aiayn's cached beam against CTranslate2 (float32, int8) and ONNX Runtime.

One process, engines alternating round by round (a load change on a shared machine hits all of
them), the same thread count for each (default 2). Every engine translates the same sources with
beam 4, alpha 0.6 and the |Y|^alpha length penalty (length_penalty="fairseq", the one
CTranslate2 has; docs/serving.md), max length |X| + 50, and is scored with sacreBLEU; the two
"native" rows call CTranslate2 at its own defaults instead (NativeCT2: not equal work). Test sets:
the demo's (--data, a prepared directory, split test) and Multi30k test2016 (--multi30k DIR with
test_2016_flickr.{src,tgt}), each optional. The model is --checkpoint (default: the demo's).

    .venv/bin/python benchmarks/serve_speed.py --checkpoint runs/demo --data runs/demo-data \\
        --multi30k PATH/TO/multi30k --json benchmarks/results/serve-2threads.json

--quick runs every engine once on a few lines of a random-weight model (a test of the script).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch
from harness import parser, provenance, shown, write_report

from aiayn.config import DecodeConfig
from aiayn.evaluate import sacre_bleu

ENGINES = (
    "aiayn cached",
    "ctranslate2 float32",
    "ctranslate2 int8",
    "onnxruntime",
    "ct2 float32 native",
    "ct2 int8 native",
)


class NativeCT2:
    """CTranslate2 called as its users call it: one call, token batches, its own stopping rule.

    Not equal work with the rows above, which reproduce aiayn's search exactly: this one stops a
    beam at K finished hypotheses (patience 1) and gives every sentence the longest source's
    limit (max |X| + 50). A measure of the engine at its own defaults, beside the exact rows.
    """

    def __init__(self, path: Path, threads: int, compute_type: str) -> None:
        import ctranslate2

        self.engine = ctranslate2.Translator(
            str(path), device="cpu", compute_type=compute_type, intra_threads=threads
        )
        self.vocab = json.loads((path / "shared_vocabulary.json").read_text(encoding="utf-8"))
        self.index = {w: i for i, w in enumerate(self.vocab)}

    def translate_ids(self, sources):
        from aiayn.data import EOS
        from aiayn.decode import Hypothesis

        src = [[self.vocab[i] for i in s] for s in sources]
        out = self.engine.translate_batch(
            src,
            beam_size=4,
            length_penalty=0.6,
            max_batch_size=2048,
            batch_type="tokens",
            max_decoding_length=max(len(s) for s in sources) + 1 + 50,
            return_scores=True,
        )
        hyps = [([self.index[w] for w in r.hypotheses[0]] + [EOS], r.scores[0]) for r in out]
        return [[Hypothesis(tokens, score, score)] for tokens, score in hyps]


def quick_checkpoint(tmp: Path) -> tuple[Path, list[tuple[str, list[str], list[str], str]]]:
    """A random-weight checkpoint with its tokenizer, and a few lines as the test set."""
    from aiayn import ModelConfig, Transformer
    from aiayn.data import EOS, Tokenizer
    from aiayn.weights import save_model

    lines = ["a dog runs on the grass .", "two men are playing football .", "a red car ."]
    refs = ["ein Hund rennt auf dem Gras .", "zwei Männer spielen Fußball .", "ein rotes Auto ."]
    tok = Tokenizer.train(lines + refs, vocab_size=300)
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    model = Transformer(cfg).eval()
    with torch.no_grad():
        model.embedding[EOS] *= 4.0  # short outputs
    path = tmp / "model.safetensors"
    save_model(path, model, metadata={"tokenizer": tok.to_str()})
    return path, [("quick", lines * 3, refs * 3, "de")]


def test_sets(args: argparse.Namespace) -> list[tuple[str, list[str], list[str], str]]:
    """(name, sources, references, the references' language: their BLEU tokenizer) a set."""
    sets = []
    if args.data is not None:
        from aiayn.data import load_prepared

        prepared = load_prepared(args.data)
        src, ref = prepared.texts("test")
        sets.append(("demo test", list(src), list(ref), prepared.tgt_lang))
    if args.multi30k is not None:
        d = Path(args.multi30k)
        read = lambda lang: (d / f"test_2016_flickr.{lang}").read_text("utf-8").splitlines()  # noqa: E731
        sets.append(("multi30k test2016", read(args.src_lang), read(args.tgt_lang), args.tgt_lang))
    if args.limit:
        sets = [(n, s[: args.limit], r[: args.limit], lang) for n, s, r, lang in sets]
    return sets


def main() -> int:
    ap = parser(__doc__, quick="a few lines, one round (a test)")
    ap.add_argument("--checkpoint", default="runs/demo", help="model file, checkpoint or run")
    ap.add_argument("--data", default=None, help="the demo's prepared data (its test split)")
    ap.add_argument("--multi30k", default=None, help="directory with test_2016_flickr.*")
    ap.add_argument("--src-lang", default="en")
    ap.add_argument("--tgt-lang", default="de")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; best time kept")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences of each set")
    ap.add_argument("--engines", default=",".join(ENGINES))
    args = ap.parse_args()

    from aiayn.export import load_engine, publish
    from aiayn.export.ct2 import export_ctranslate2
    from aiayn.export.ort import export_onnx
    from aiayn.translator import load_translator

    run = provenance(args.threads, quick=True)
    tmp = Path(tempfile.mkdtemp(prefix="serve-speed-"))
    if args.quick:
        checkpoint, sets = quick_checkpoint(tmp)
        args.rounds = 1
    else:
        checkpoint, sets = Path(args.checkpoint), test_sets(args)
    if not sets:
        ap.error("give a test set: --data DIR and/or --multi30k DIR")
    cfg = DecodeConfig(beam=4, alpha=0.6, length_penalty="fairseq")
    torch_tr = load_translator(checkpoint, cfg, device="cpu")
    model, tok = torch_tr.model, torch_tr.tokenizer
    longest = max(len(x) for _, s, _, _ in sets for x in tok.encode_batch(s)) + 1
    rows = max(1024, longest + 51)
    publish(tmp / "ct2", False, lambda p: export_ctranslate2(model, tok, p, "float32", rows))
    publish(tmp / "onnx", False, lambda p: export_onnx(model, tok, p, rows))
    engines = {
        "aiayn cached": torch_tr,
        "ctranslate2 float32": load_engine(tmp / "ct2", cfg, threads=args.threads),
        "ctranslate2 int8": load_engine(
            tmp / "ct2", cfg, threads=args.threads, compute_type="int8"
        ),
        "onnxruntime": load_engine(tmp / "onnx", cfg, threads=args.threads),
        "ct2 float32 native": NativeCT2(tmp / "ct2", args.threads, "float32"),
        "ct2 int8 native": NativeCT2(tmp / "ct2", args.threads, "int8"),
    }
    chosen = [e for e in args.engines.split(",") if e]
    unknown = sorted(set(chosen) - set(engines))
    if unknown:
        ap.error(f"--engines: unknown {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    report: dict = {
        "checkpoint": shown(str(Path(checkpoint).resolve())),
        "threads": args.threads,
        "decode": "beam 4, alpha 0.6, |Y|^alpha (fairseq), max |X| + 50",
        "sets": {},
        "load_average_1min": [os.getloadavg()[0]],
        **run,
    }
    for name, src, ref, lang in sets:
        ids = tok.encode_batch(src)
        times: dict[str, list[float]] = {e: [] for e in chosen}
        bleu: dict[str, float] = {}
        for _ in range(args.rounds):
            for e in chosen:
                t = time.perf_counter()
                hyps = engines[e].translate_ids(ids)
                times[e].append(time.perf_counter() - t)
                text = [tok.decode(h[0].tokens) if h else "" for h in hyps]
                bleu[e] = sacre_bleu(text, ref, lang)[0]  # lang's tokenizer: 13a for de
                report["load_average_1min"].append(os.getloadavg()[0])
        report["sets"][name] = {
            "sentences": len(src),
            "seconds": times,
            "sentences_per_second": {e: len(src) / min(ts) for e, ts in times.items()},
            "sacrebleu": bleu,
        }
    for name, r in report["sets"].items():
        print(f"{name} ({r['sentences']} sentences, {args.threads} threads)")
        for e in chosen:
            sps, b = r["sentences_per_second"][e], r["sacrebleu"][e]
            print(f"  {e:<20} {sps:8.1f} sentences/s  sacreBLEU {b:6.2f}")
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
