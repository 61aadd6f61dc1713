"""Decoding speed of `aiayn translate`: sentences per second, cached against uncached.

Translates the Multi30k test set (1000 sentences, English side) with beam 4 on a `tiny`-preset
model with random weights and a BPE vocabulary learned on Multi30k train, through the same
Translator the CLI uses. Cached (incremental decoding) and uncached (the decoder re-run on the
whole prefix) runs alternate in one process, so that a load change on a shared machine hits
both. Random weights rarely emit EOS, so outputs run to the maximum length of aiayn's rule
(``aiayn.decode.max_lengths``, |X| + b tokens, EOS included): with ``--max-len-b 0`` that is the
source length (close to real translation lengths); with 50 it is the paper's worst case. The
modes ``cached-plain`` and ``uncached-plain`` run the same weights with the speed kernels off
(what the kernels buy in decoding).

    .venv/bin/python benchmarks/decode_speed.py [--n 1000] [--max-len-b 0] [--rounds 2]
    .venv/bin/python benchmarks/decode_speed.py --modes cached,cached-plain
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
from harness import parser, provenance, write_report
from run import PLAIN_SWITCH

from aiayn import Transformer, model_preset
from aiayn.config import DecodeConfig
from aiayn.data import Tokenizer
from aiayn.kernels import FAST
from aiayn.translator import Translator

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "multi30k"


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--max-len-b", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--modes",
        default="cached,uncached",
        help="of cached, uncached, cached-plain, uncached-plain",
    )
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.quick:
        args.n, args.rounds = 10, 1
    run = provenance(args.threads, args.device)
    test = (args.data / "test_2016_flickr.en").read_text(encoding="utf-8").splitlines()[: args.n]
    t0 = time.perf_counter()
    texts = []
    for name in ("train.en", "train.de"):
        texts += (args.data / name).read_text(encoding="utf-8").splitlines()
    tok = Tokenizer.train(texts, vocab_size=args.vocab)
    bpe_s = time.perf_counter() - t0
    torch.manual_seed(0)
    model_cfg = model_preset("tiny", vocab_size=tok.vocab_size)
    model = Transformer(model_cfg, FAST).to(args.device).eval()
    plain_switch = PLAIN_SWITCH
    plain = Transformer(model_cfg).to(args.device).eval()
    plain.load_state_dict(model.state_dict())  # the same weights, the kernels off
    cfg = DecodeConfig(beam=args.beam, max_len_b=args.max_len_b)
    src = tok.encode_batch(test)
    times: dict[str, list[float]] = {m: [] for m in args.modes.split(",")}
    unknown = set(times) - {"cached", "uncached", "cached-plain", "uncached-plain"}
    if unknown:
        ap.error(f"--modes: unknown mode(s) {', '.join(sorted(unknown))}")
    out_len: dict[str, float] = {}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for mode in times:
            net = plain if mode.endswith("-plain") else model
            tr = Translator(net, tok, cfg, cached=mode.startswith("cached"))
            t = time.perf_counter()
            hyps = tr.translate_ids(src)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            times[mode].append(time.perf_counter() - t)
            out_len[mode] = sum(len(h[0].tokens) for h in hyps) / len(hyps)
            load.append(os.getloadavg()[0])
    report = {
        "sentences": len(src),
        "mean_source_tokens": sum(len(s) + 1 for s in src) / len(src),
        "mean_output_tokens": out_len,
        "vocab": tok.vocab_size,
        "beam": args.beam,
        "max_len": f"|X| + {args.max_len_b}",
        "plain_kernels_switch": plain_switch,
        "bpe_seconds": bpe_s,
        "seconds": times,
        "sentences_per_second_best": {m: len(src) / min(ts) for m, ts in times.items()},
        "load_average_1min": load,
        **run,
    }
    print(json.dumps(report, indent=2))
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
