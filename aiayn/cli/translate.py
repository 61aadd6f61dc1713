"""Translate text with a trained model: beam 4, alpha 0.6, input length + 50 (section 6.1).

Reads one sentence a line from --input (or stdin) and writes one detokenized translation a line,
in order, to --output (or stdout). From an interactive terminal each line is translated as soon
as it is typed; from a file or a pipe the lines are batched by length.

--checkpoint takes a model file (.safetensors, e.g. from `aiayn average`), a checkpoint
directory, or a run directory (its latest checkpoint).

The output has exactly one line per input line (N lines with --nbest N), in order. A line of
only spaces or tabs is an empty line, and an empty line translates to the empty sentence. A
line of more BPE tokens than --max-input-tokens (default: the model's usable length, at most
1024) is not translated: stderr names its line number (from 1), its output line is empty, and
at the end stderr counts such lines and the exit status is 3 (the output is complete
otherwise). A line longer than any sentence trained on is translated with a warning on
stderr. Both count the line's BPE tokens, EOS not counted.

With --nbest N > 1 each input line gives N lines, best first, in the Moses n-best format:
    LINE ||| TRANSLATION ||| logprob=LOG_P length=|Y| ||| SCORE
LINE counts from 0, |Y| counts the output tokens with EOS, SCORE = LOG_P / lp(|Y|). Where fewer
than N translations exist (an empty line has one, the empty sentence; a line over the limit
none), the rest are placeholders with an empty translation: LINE |||  ||| logprob=-inf
length=0 ||| -inf.

--attention DIR writes DIR/sent_LINE.png per sentence (LINE from 0): the encoder-decoder
attention of the best translation for every layer and head, each layer's mean and the mean of
all, with the source and output tokens on the axes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from aiayn.cli.common import (
    add_config_args,
    check_device,
    config_from_args,
    device,
    integer,
    load_toml,
    output_dir,
    output_file,
    stderr,
    threads,
)
from aiayn.config import DecodeConfig
from aiayn.errors import UserError, require

CHUNK = 2000  # lines translated together when reading a file or a pipe
SKIPPED_EXIT = 3  # exit status when a line was over --max-input-tokens (its output is empty)
DEFAULT_INPUT_LIMIT = 1024  # = aiayn.translator.DEFAULT_INPUT_LIMIT (not imported: torch)


def add_translator_args(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """Flags shared by translate and evaluate: the model, the search, batching (``skip``: the
    DecodeConfig fields a verb has no flag for)."""
    parser.add_argument(
        "--checkpoint",
        required=True,
        metavar="PATH",
        help="model file, checkpoint directory or run directory",
    )
    parser.add_argument(
        "--tokenizer",
        metavar="FILE",
        default=None,
        help="tokenizer JSON (default: the checkpoint's)",
    )
    parser.add_argument(
        "--device",
        type=device,
        default=None,
        help="auto (CUDA if present, the default), cpu, cuda or cuda:N",
    )
    parser.add_argument(
        "--engine",
        choices=("torch", "ctranslate2", "onnx"),
        default="torch",
        help="torch: aiayn's decoder (default); ctranslate2 or onnx: a directory written by "
        "aiayn export, given as --checkpoint (docs/serving.md)",
    )
    parser.add_argument(
        "--threads", type=threads, default=0, metavar="N", help="engine threads (0: its default)"
    )
    parser.add_argument(
        "--max-tokens",
        type=integer(1),
        default=6000,
        metavar="N",
        help="source tokens (with padding) per batch (default 6000)",
    )
    parser.add_argument(
        "--max-sentences",
        type=integer(1),
        default=128,
        metavar="N",
        help="sentences per batch (default 128)",
    )
    parser.add_argument(
        "--kernels",
        choices=["fast", "plain"],
        default=None,
        help="fast (aiayn.kernels, proven equal) or plain PyTorch: the same numbers, a choice of "
        "how to run that no checkpoint stores (default fast)",
    )
    parser.add_argument(
        "--max-input-tokens",
        type=integer(1),
        default=None,
        metavar="N",
        help="a line of more BPE tokens is not translated: a message on stderr names it, its "
        "output is empty and the exit status is 3 (default: the model's usable length, at most "
        f"{DEFAULT_INPUT_LIMIT})",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="re-run the decoder on the whole prefix each step (slow)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE.toml",
        default=None,
        help="settings file; its [decode] table is used",
    )
    add_config_args(
        parser, DecodeConfig, skip, title="decoding (section 6.1; [decode] in --config)"
    )


def require_engine(args: argparse.Namespace) -> None:
    """The optional extra that --engine needs, before anything: a one-line install command."""
    from aiayn.export import ENGINE_NEEDS, require

    for module in ENGINE_NEEDS[args.engine]:
        require(module)


def translator_from_args(args: argparse.Namespace, fallback_tokenizer: Any = None) -> Any:
    """Load the checkpoint and its tokenizer with the decode settings of the flags."""
    import torch

    from aiayn.translator import load_translator

    cfg = config_from_args(DecodeConfig, args, toml=load_toml(args.config))
    if getattr(args, "engine", "torch") != "torch":
        from aiayn.export import load_engine

        if args.device not in (None, "auto", "cpu"):
            raise UserError(f"--device {args.device}: --engine {args.engine} runs on the CPU here")
        if args.no_cache:
            raise UserError(f"--no-cache: --engine {args.engine} always decodes with its cache")
        if args.kernels is not None:
            raise UserError(f"--kernels: aiayn's kernels do not run under --engine {args.engine}")
        return load_engine(
            args.checkpoint,
            cfg,
            tokenizer=args.tokenizer,
            max_tokens=args.max_tokens,
            max_sentences=args.max_sentences,
            threads=args.threads,
            engine=args.engine,
        )
    device = check_device(args.device)  # a CUDA this machine lacks: one line, before loading
    if args.threads:
        torch.set_num_threads(args.threads)
    from aiayn.cli.common import say_checkpoint

    say_checkpoint(getattr(args, "verb", "translate"), args.checkpoint)  # a shipped model's name
    return load_translator(
        args.checkpoint,
        cfg,
        tokenizer=args.tokenizer,
        device=device,
        max_tokens=args.max_tokens,
        max_sentences=args.max_sentences,
        cached=not args.no_cache,
        fallback_tokenizer=fallback_tokenizer,
        kernels=args.kernels or "fast",
        max_input_tokens=args.max_input_tokens,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_translator_args(parser)
    parser.add_argument("--input", metavar="FILE", default=None, help="default: stdin")
    parser.add_argument("--output", metavar="FILE", default=None, help="default: stdout")
    parser.add_argument(
        "--attention",
        metavar="DIR",
        default=None,
        help="save a cross-attention heatmap per sentence in DIR",
    )


def read_lines(stream: Iterable[bytes], name: str) -> Iterator[str]:
    """The lines of a byte stream as text without their line ends; bad UTF-8 names the line."""
    for n, raw in enumerate(stream, 1):
        try:
            yield raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as e:
            raise UserError(f"{name}: line {n}: not UTF-8 text ({e.reason})") from None


def format_nbest(index: int, results: list[tuple[str, Any]], nbest: int) -> list[str]:
    """The output lines of one input line: the text, or exactly nbest Moses n-best lines."""
    if nbest == 1:
        return [results[0][0] if results else ""]
    lines = [
        f"{index} ||| {text} ||| logprob={h.logprob:.4f} length={len(h.tokens)} ||| {h.score:.4f}"
        for text, h in results[:nbest]
    ]
    return lines + [f"{index} |||  ||| logprob=-inf length=0 ||| -inf"] * (nbest - len(lines))


def run(args: argparse.Namespace) -> int:
    from aiayn.storage import atomic_write

    require_engine(args)
    if args.attention is not None and args.engine != "torch":
        raise UserError("--attention needs --engine torch (the heatmaps come from aiayn's model)")
    if args.attention is not None:
        require("matplotlib", "plot")
    output_file(args.output, "--output")
    output_dir(args.attention, "--attention")
    translator = translator_from_args(args)
    nbest = translator.config.nbest
    attention = Path(args.attention) if args.attention else None
    if attention is not None:
        attention.mkdir(parents=True, exist_ok=True)

    n_skipped = 0

    def skipped(line: int, n_tokens: int) -> None:
        nonlocal n_skipped
        n_skipped += 1
        stderr(
            "translate",
            f"{name}: line {line}: {n_tokens} tokens, over the limit of "
            f"{translator.input_limit} (--max-input-tokens): not translated, its output is empty",
        )

    def long(line: int, n_tokens: int, trained: int) -> None:
        stderr(
            "translate",
            f"{name}: line {line}: {n_tokens} tokens, longer than any sentence in training "
            f"({trained} tokens): translated anyway (the sinusoidal positions extend, quality "
            "may drop)",
        )

    def translate(lines: list[str], first: int) -> list[str]:
        results = translator.translate(lines, first_line=first + 1, on_skip=skipped, on_long=long)
        out: list[str] = []
        for k, res in enumerate(results):
            out += format_nbest(first + k, res, nbest)
            if attention is not None and res:
                from aiayn.plots import plot_translation

                src = translator.tokenizer.encode(lines[k])
                path = attention / f"sent_{first + k:05d}.png"
                best = res[0][1].tokens
                tok = translator.tokenizer
                plot_translation(path, translator.model, tok, src, best, f"line {first + k}")
        return out

    if args.input is not None:
        try:
            data = Path(args.input).read_bytes()
        except OSError as e:
            raise UserError(f"{args.input}: cannot read ({e.strerror})") from None
        parts = data.split(b"\n")
        source: Iterable[bytes] = (
            parts[:-1] if parts[-1] == b"" else parts
        )  # no line after the last end
        name = args.input
    else:
        source, name = sys.stdin.buffer, "stdin"
    interactive = args.input is None and sys.stdin.isatty()
    written: list[str] = []
    lines = read_lines(source, name)
    count = 0
    if interactive:
        for line in lines:
            out = translate([line], count)
            count += 1
            if args.output is None:
                print("\n".join(out), flush=True)
            else:
                written += out
    else:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == CHUNK:
                written += _flush(translate(chunk, count), args.output)
                count, chunk = count + len(chunk), []
        if chunk:
            written += _flush(translate(chunk, count), args.output)
            count += len(chunk)
    if args.output is not None:
        text = "".join(x + "\n" for x in written)
        atomic_write(args.output, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if n_skipped:
        stderr(
            "translate",
            f"{n_skipped} of {count} line(s) not translated (over the limit of "
            f"{translator.input_limit} tokens, --max-input-tokens): their output is empty; "
            f"exit status {SKIPPED_EXIT}",
        )
        return SKIPPED_EXIT
    return 0


def _flush(out: list[str], output: str | None) -> list[str]:
    """Print to stdout now, or keep for the output file (written atomically at the end)."""
    if output is None:
        if out:
            print("\n".join(out), flush=True)
        return []
    return out
