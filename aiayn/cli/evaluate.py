"""Score a model on a test set: sacreBLEU, chrF, Moses and paper BLEU, perplexity (section 6.1).

Translates the sources (beam 4, alpha 0.6, input length + 50 by default) and reports:
  sacreBLEU   corpus BLEU of the detokenized output, with its signature (the headline), cut
              into words by the references' language's tokenizer (tok:zh for Chinese,
              ja-mecab/ko-mecab or char for Japanese/Korean, 13a otherwise)
  chrF2       sacreBLEU's chrF, with its signature
  lowercased  sacreBLEU of the lowercased text (same tokenizer), near the Multi30k flavour
  Moses BLEU  lowercased, Moses-tokenized BLEU (sacremoses, tokenizer.perl's defaults for the
              references' language, --tgt-lang), as multi-bleu.perl computes it: the flavour
              of the Multi30k papers; labelled, never comparable with sacreBLEU
  paper BLEU  tokenized BLEU (13a) with compound splitting, the flavour of the paper's Table 2;
              labelled as such, never comparable with sacreBLEU (these two European flavours
              are skipped, saying why, for a Chinese, Japanese or Korean target)
  perplexity  of the references under the model, per target token (EOS included)
  speed       sentences translated per second
as a table, and as JSON with --json FILE. The test set is --data DIR (a prepared corpus, split
--split) or --src FILE --ref FILE (one sentence a line, raw text).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from aiayn.cli.common import config_from_args, integer, load_toml, output_file
from aiayn.cli.translate import (
    add_translator_args,
    read_lines,
    require_engine,
    translator_from_args,
)
from aiayn.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_translator_args(parser, skip=("nbest",))  # evaluate scores the best translation only
    # Not in --help; given, it is refused with a pointer to translate (as a [decode] nbest is).
    parser.add_argument("--nbest", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", metavar="DIR", default=None, help="prepared data directory")
    parser.add_argument("--split", default="test", help="split of --data (default test)")
    parser.add_argument("--src", metavar="FILE", default=None, help="source sentences")
    parser.add_argument("--ref", metavar="FILE", default=None, help="reference translations")
    parser.add_argument(
        "--limit", type=integer(1), default=None, metavar="N", help="only the first N sentences"
    )
    parser.add_argument(
        "--tgt-lang",
        type=_lang_code,
        default=None,
        metavar="LANG",
        help="the references' language, for the BLEU tokenizer (zh: tok:zh) and the "
        "Moses-tokenized BLEU (default: the prepared data's target language with --data, else "
        "unknown: 13a, and Moses' en)",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="write the report as JSON")
    parser.add_argument("--hyps", metavar="FILE", default=None, help="write the translations")


def _lang_code(text: str) -> str:
    if re.fullmatch(r"[a-z]{2,3}", text) is None:
        raise argparse.ArgumentTypeError(f"must be a language code such as de, got {text!r}")
    return text


def _read(path: str) -> list[str]:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    parts = data.split(b"\n")
    return list(read_lines(parts[:-1] if parts[-1] == b"" else parts, path))


def load_test_set(args: argparse.Namespace) -> tuple[list[str], list[str], Any, str | None]:
    """(sources, references, the prepared data's tokenizer, the references' language).

    From --data or --src/--ref; the tokenizer is None without --data, the language is
    --tgt-lang, else the prepared data's target language, else None (unknown).
    """
    tokenizer, lang = None, None
    if args.data is not None:
        if args.src is not None or args.ref is not None:
            raise UserError("give either --data or --src and --ref, not both")
        import aiayn.data

        load_prepared = getattr(aiayn.data, "load_prepared", None)
        if load_prepared is None:
            raise UserError("--data needs aiayn.data.load_prepared, missing here; use --src/--ref")
        prepared = load_prepared(args.data)
        tokenizer = getattr(prepared, "tokenizer", None)
        lang = getattr(prepared, "tgt_lang", None)
        sources, references = prepared.texts(args.split)
        sources, references = list(sources), list(references)
    elif args.src is not None and args.ref is not None:
        sources, references = _read(args.src), _read(args.ref)
        if len(sources) != len(references):
            raise UserError(
                f"{args.src} has {len(sources)} lines but {args.ref} has {len(references)}"
            )
    else:
        raise UserError("give a test set: --data DIR [--split test], or --src FILE --ref FILE")
    if args.limit is not None:
        sources, references = sources[: args.limit], references[: args.limit]
    if not sources:
        raise UserError("the test set is empty")
    if args.tgt_lang is not None:
        lang = args.tgt_lang
    return sources, references, tokenizer, lang


# Han, kana and Hangul: text that 13a, splitting at spaces, would score a sentence as one word.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def looks_cjk(lines: list[str]) -> bool:
    """Whether most of the non-space characters of the first 1000 lines are Han, kana, Hangul."""
    text = re.sub(r"\s", "", "".join(lines[:1000]))
    return len(_CJK.findall(text)) > len(text) / 2


def format_report(report: dict[str, Any]) -> str:
    """The report as a table for the terminal."""
    d, s, skipped = report["decode"], report["speed"], report.get("skipped", {})
    if "moses_bleu" in report:
        mb = report["moses_bleu"]
        lang = f"-l {mb['lang']}" + ("" if mb["lang_given"] else " (no --tgt-lang: default)")
        moses = (f"{mb['score']:.2f}", f"sacremoses {mb['sacremoses']}, {lang}; {mb['label']}")
    else:  # a Chinese, Japanese or Korean target: skipped, and why
        moses = ("-", skipped.get("moses_bleu", ""))
    paper = report.get("paper_bleu")
    if paper is not None:
        paper_row = (f"{paper['score']:.2f}", paper["label"])
    else:
        paper_row = ("-", skipped.get("paper_bleu", ""))
    rows = [
        ("sacreBLEU", f"{report['sacrebleu']['score']:.2f}", report["sacrebleu"]["signature"]),
        ("chrF2", f"{report['chrf']['score']:.2f}", report["chrf"]["signature"]),
        (
            "lowercased BLEU",
            f"{report['lowercase_bleu']['score']:.2f}",
            f"{report['lowercase_bleu']['signature']}; {report['lowercase_bleu']['label']}",
        ),
        ("Moses-tokenized BLEU", *moses),
        ("paper-compatible BLEU", *paper_row),
        (
            "reference perplexity",
            f"{report['perplexity']['value']:.3f}",
            f"per target token, EOS included ({report['perplexity']['tokens']} tokens)",
        ),
        (
            "speed",
            f"{s['sentences_per_second']:.1f}",
            f"sentences/s ({s['sentences']} in {s['seconds']:.1f} s, "
            f"{'cached' if s['cached'] else 'uncached'}, {s['device']}, "
            f"engine {report.get('engine', 'torch')})",
        ),
    ]
    head = (
        f"{report['checkpoint']}: {s['sentences']} sentences; beam {d['beam']}, "
        f"alpha {d['alpha']} ({d['length_penalty']}), max length {d['max_len_a']} |X| + "
        f"{d['max_len_b']}"
    )
    width = max(len(r[0]) for r in rows)
    return "\n".join([head, *(f"  {a:<{width}}  {b:>7}  {c}" for a, b, c in rows)])


def run(args: argparse.Namespace) -> int:
    from aiayn.config import DecodeConfig, to_dict
    from aiayn.evaluate import evaluate
    from aiayn.run_dir import resolve_checkpoint
    from aiayn.storage import atomic_write

    require_engine(args)
    toml_nbest = config_from_args(DecodeConfig, args, toml=load_toml(args.config)).nbest
    if args.nbest is not None or toml_nbest != 1:
        raise UserError(
            "--nbest: evaluate scores the best translation of each line only; "
            "`aiayn translate --nbest N` writes n-best lists"
        )
    output_file(args.json, "--json")
    output_file(args.hyps, "--hyps")
    sources, references, data_tokenizer, lang = load_test_set(args)
    if lang is None and looks_cjk(references):
        print(
            "aiayn evaluate: warning: the references look Chinese, Japanese or Korean but their "
            "language is unknown, so BLEU cuts words with 13a (at spaces); give --tgt-lang "
            "(zh, ja, ko) for that language's tokenizer",
            file=sys.stderr,
        )
    translator = translator_from_args(args, fallback_tokenizer=data_tokenizer)
    report = evaluate(translator, sources, references, lang)
    hyps = report.pop("hypotheses")
    engine = getattr(args, "engine", "torch")
    report["engine"] = engine
    checkpoint = resolve_checkpoint(args.checkpoint) if engine == "torch" else args.checkpoint
    report["checkpoint"] = str(checkpoint)
    report["split"] = args.split if args.data is not None else None
    report["decode"] = to_dict(translator.config)
    print(format_report(report))
    if args.json is not None:
        text = json.dumps(report, indent=2) + "\n"
        atomic_write(args.json, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if args.hyps is not None:
        text = "".join(h + "\n" for h in hyps)
        atomic_write(args.hyps, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return 0
