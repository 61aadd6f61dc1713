"""Run the whole flow of the paper on this machine: data, BPE, training, averaging, beam, BLEU.

What `make demo` runs. On a 2-core CPU with nothing prepared:
  1. prepares an EN-DE corpus with a shared BPE (section 5.1), and says which: Multi30k
     (everyday image captions) when it can be had, from a local copy (--multi30k-dir or
     $AIAYN_MULTI30K) or downloaded from its official repository with checksums (or from
     --multi30k-url / $AIAYN_MULTI30K_URL); otherwise the packaged corpus (real human
     translations from Debian packages: the demo subset, LibreOffice help sentences of 6 to
     25 words: --origins, --min-words, --max-words); where Debian's packages cannot be had
     either, the numbers task. --source picks one and falls back to nothing;
  2. trains the `tiny` preset with the paper's recipe (Adam 0.9/0.98/1e-9, Eq. (3), label
     smoothing 0.1; no dropout, a departure for a run of minutes) for --steps steps, or
     --minutes of wall-clock time if that comes first, checkpointing as it goes;
  3. averages the last checkpoints (section 6.1), translates the held-out test set with beam 4
     and alpha 0.6, and prints sacreBLEU and chrF2 with their signatures (BLEU with the
     target language's tokenizer: 13a for German) and example translations;
  4. writes the training curves, cross-attention heatmaps and the walkthrough report, and
     prints the command that opens the model in the explorer (`aiayn explore`).
Everything goes under --run (default runs/demo). A second run starts fresh (the prepared
data is reused) unless --resume continues the training where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import shutil
import sys
import time
import tomllib
from importlib import resources
from pathlib import Path

# The demo's data and recipe, each setting chosen on the validation split (docs/demo.md): one
# home, recipes/demo.toml, which `aiayn train --config recipes/demo.toml` trains as well. Steps,
# not minutes, decide (a slower machine trains the same model in more time); the minutes are a
# safety net far above a normal run, and where they stop the training first the demo says so.
# recipes/ is installed as the package aiayn.recipes (pyproject.toml), so a wheel carries it.
RECIPE = resources.files("aiayn.recipes").joinpath("demo.toml")


def _read_recipe() -> tuple[dict, dict]:
    """The [recipe] and [train] tables of recipes/demo.toml."""
    tables = tomllib.loads(RECIPE.read_text(encoding="utf-8"))
    return tables["recipe"], tables["train"]


_RECIPE, _TRAIN = _read_recipe()
DEMO_ORIGINS = _RECIPE["origins"]  # the packaged corpus's demo subset: LibreOffice help,
DEMO_MIN_WORDS, DEMO_MAX_WORDS = _RECIPE["min_words"], _RECIPE["max_words"]  # sentences
DEMO_VOCAB = _RECIPE["vocab_size"]
DEMO_AVERAGE = _RECIPE["average"][0]  # DEVIATION(6.1): the last 2, not 5
DEMO_STEPS, DEMO_MINUTES = _TRAIN["max_steps"], _TRAIN["max_minutes"]
DEMO_SAVE_EVERY, DEMO_WARMUP = _TRAIN["save_every_steps"], _TRAIN["warmup"]
# What each corpus holds, and a sentence of that kind for the `aiayn translate` printed last.
EXAMPLES = {
    "multi30k": ("an image caption", "A dog runs through the grass."),
    "packaged": ("a software help text", "Click OK to close the dialog."),
    "numbers": ("a number in words", "three hundred and twelve"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.cli.common import integer, real, threads
    from aiayn.cli.prepare import MIN_VOCAB
    from aiayn.data.corpora.multi30k import ENV, URL_ENV

    parser.add_argument("--run", default="runs/demo", help="run directory (default runs/demo)")
    parser.add_argument(
        "--steps",
        type=integer(0),
        default=DEMO_STEPS,
        help=f"training steps (default {DEMO_STEPS}; 0: the minutes decide)",
    )
    parser.add_argument(
        "--minutes",
        type=real(0.0, lo_open=True),
        default=DEMO_MINUTES,
        help=f"at most this many minutes of training (default {DEMO_MINUTES:g}, a safety net: "
        "the steps decide; the demo says so if the minutes stopped the training first); with "
        "--resume, the minutes to train on",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the training in --run instead of anew"
    )
    parser.add_argument(
        "--source",
        choices=["auto", "multi30k", "packaged", "numbers"],
        default="auto",
        help="corpus (default auto: Multi30k when it can be had, else packaged, else numbers; "
        "numbers needs nothing)",
    )
    parser.add_argument(
        "--multi30k-dir",
        type=Path,
        default=None,  # else $AIAYN_MULTI30K, read where Multi30k is opened
        help=f"a local copy of Multi30k's raw files (default ${ENV}; else it is downloaded)",
    )
    parser.add_argument(
        "--multi30k-url",
        default=None,  # else $AIAYN_MULTI30K_URL, read by run() so that its errors name it
        help=f"base URL to download Multi30k from (default ${URL_ENV}, else the "
        "official repository); the checksums are checked either way",
    )
    parser.add_argument(
        "--max-words",
        type=integer(0),
        default=DEMO_MAX_WORDS,
        help=f"demo subset: at most N words a side (default {DEMO_MAX_WORDS})",
    )
    parser.add_argument(
        "--min-words",
        type=integer(0),
        default=DEMO_MIN_WORDS,
        help=f"demo subset: at least N words on the longer side (default {DEMO_MIN_WORDS})",
    )
    parser.add_argument(
        "--origins",
        default=DEMO_ORIGINS,
        help=f"packaged parts to keep, of help, ui, ding (default {DEMO_ORIGINS})",
    )
    parser.add_argument(
        "--vocab-size",
        type=integer(MIN_VOCAB, why="the 256 bytes and 4 special tokens of the byte-level BPE"),
        default=DEMO_VOCAB,
        help=f"shared BPE (default {DEMO_VOCAB})",
    )
    parser.add_argument(
        "--average",
        type=integer(1),
        default=DEMO_AVERAGE,
        help=f"checkpoints to average, one every {DEMO_SAVE_EVERY} steps (default {DEMO_AVERAGE})",
    )
    parser.add_argument(
        "--threads", type=threads, default=0, help="intra-op threads (default: all cores)"
    )
    parser.add_argument(
        "--test-limit", type=integer(0), default=0, help="score only the first N test sentences"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _say(text: str) -> None:
    print(text, flush=True)


def _step(n: int, title: str) -> None:
    _say((f"\n== {n}. {title} " + "=" * max(0, 70 - len(title))).rstrip())


def _cli(argv: list[str], quiet: bool = False) -> int:
    from aiayn.cli import main

    if not quiet:
        return main(argv)
    with contextlib.redirect_stdout(io.StringIO()):
        return main(argv)


def _prepare(args: argparse.Namespace, data: Path) -> str:
    """Prepare the corpus into data (reused when complete); returns the source used.

    --source auto tries Multi30k, then the packaged corpus, then the numbers task
    (``aiayn.data.corpora.multi30k.fallbacks``), and says which it took and why; a named
    --source is that corpus or an error.
    """
    from aiayn.data.corpora.multi30k import fallbacks, first_had, local_copy, origin
    from aiayn.errors import UserError

    where = origin(local_copy(args.multi30k_dir), args.multi30k_url)
    taken = {
        "multi30k": f"corpus: multi30k, from {where}",
        "packaged": "corpus: packaged (software help texts from Debian packages, EN-DE)",
        "numbers": "corpus: numbers (numbers written out in words, EN-DE)",
    }
    instead = {
        "multi30k": "Multi30k could not be had (see above): using the packaged corpus instead",
        "packaged": "the packaged corpus could not be had here (see above): using the numbers task",
    }

    def attempt(source: str) -> None:
        if source == "multi30k":
            _say(f"trying Multi30k (everyday image captions, EN-DE) from {where}")
        _prepare_one(args, data, source)
        _say(taken[source])

    def missed(source: str, e: UserError) -> None:
        _error(e)
        _say(instead[source])

    try:
        source, _ = first_had(fallbacks(args.source, then=("numbers",)), attempt, missed)
    except UserError as e:
        _error(e)
        if args.source == "multi30k":
            raise UserError("--source multi30k: Multi30k could not be had (see above)") from None
        if args.source == "packaged":
            raise UserError(
                "--source packaged: the packaged corpus could not be had (see above)"
            ) from None
        raise UserError("could not prepare any corpus (see above)") from None
    return source


def _error(e: Exception) -> None:
    """The line that says why a corpus could not be had, as `aiayn prepare` says it."""
    print(f"aiayn prepare: error: {e}", file=sys.stderr, flush=True)


def _prepare_one(args: argparse.Namespace, data: Path, source: str) -> None:
    """Prepare one corpus into data, or find it prepared with these settings; a UserError if it
    cannot be had."""
    from aiayn.data import load_prepared
    from aiayn.errors import UserError

    with contextlib.suppress(UserError):
        manifest = load_prepared(data).manifest
        options, info = manifest.get("options", {}), manifest.get("source_info", {})
        same = manifest.get("source") == source
        if source == "packaged":
            same = same and (
                options.get("max_words") == args.max_words
                and options.get("min_words", 0) == args.min_words
                and options.get("vocab_size") == args.vocab_size
                and sorted(info.get("origins", [])) == sorted(args.origins.split(","))
            )
        if source == "multi30k":
            same = same and options.get("vocab_size") == args.vocab_size
        if same:  # prepared by an earlier demo with these settings
            _say(f"reusing the prepared data in {data} ({source})")
            return
    _build(args, data, source)


def _build(args: argparse.Namespace, data: Path, source: str) -> None:
    """Prepare source into data with the demo's settings (``aiayn prepare``'s, and its summary)."""
    from aiayn.cli.prepare import DEFAULT_VOCAB, summary
    from aiayn.data.corpora.download import default_cache_dir
    from aiayn.data.prepare import PrepareOptions, prepare

    cache, progress = default_cache_dir(), not args.no_progress and sys.stderr.isatty()
    options = PrepareOptions(src_lang="en", tgt_lang="de", vocab_size=args.vocab_size)
    if source == "multi30k":
        from aiayn.data.corpora.multi30k import BASE_URL, multi30k_corpus

        url = args.multi30k_url or BASE_URL
        corpus = multi30k_corpus(args.multi30k_dir, cache, base_url=url, progress=progress)
    elif source == "packaged":
        from aiayn.data.corpora.packaged import packaged_corpus

        origins = tuple(o.strip() for o in args.origins.split(","))
        corpus = packaged_corpus("de", cache, progress=progress, origins=origins)
        options = dataclasses.replace(options, max_words=args.max_words, min_words=args.min_words)
    else:
        from aiayn.data.corpora.simple import numbers_corpus

        corpus = numbers_corpus("de", 20000)
        options = dataclasses.replace(options, vocab_size=DEFAULT_VOCAB["numbers"])
    options = dataclasses.replace(options, overwrite=True, progress=progress)
    _say(summary(prepare(corpus, data, options), data))


def run(args: argparse.Namespace) -> int:
    import torch

    from aiayn.errors import UserError

    if args.minutes <= 0:
        raise UserError(f"--minutes must be > 0, got {args.minutes}")
    if args.steps < 0:
        raise UserError(f"--steps must be >= 0, got {args.steps}")
    from aiayn.data.corpora.multi30k import mirror

    args.multi30k_url = mirror(args.multi30k_url)  # a bad one: one line naming its origin
    if args.threads:
        torch.set_num_threads(args.threads)
    run_dir = Path(args.run)
    data = run_dir.parent / f"{run_dir.name}-data"
    start = time.monotonic()

    _step(1, "data: an EN-DE corpus and a shared BPE (section 5.1)")
    source = _prepare(args, data)

    resume = args.resume and run_dir.exists()
    steps = 0 if resume else args.steps  # resumed, the run trains on for --minutes
    budget = f"{steps} steps or {args.minutes:g} minutes" if steps else f"{args.minutes:g} minutes"
    _step(2, f"training: the paper's recipe for {budget} (sections 5.2-5.4)")
    if not args.resume and run_dir.exists():
        shutil.rmtree(run_dir)
    train = ["train", "--data", str(data), "--run", str(run_dir), "--config", str(RECIPE)]
    if resume:
        train = ["train", "--run", str(run_dir), "--resume"]
    train += ["--max-minutes", str(args.minutes), "--max-steps", str(steps)]
    if args.no_progress:
        train.append("--no-progress")
    if _cli(train) != 0:
        raise UserError("training failed (see above)")
    cut = _cut_short(run_dir, steps, args.minutes)

    _step(3, "averaging, beam search and BLEU (section 6.1)")
    from aiayn.train import list_checkpoints

    n = min(args.average, len(list_checkpoints(run_dir)))
    model = run_dir / "average.safetensors"
    if _cli(["average", str(run_dir), "--last", str(n), "--out", str(model), "--force"]) != 0:
        raise UserError("averaging failed (see above)")
    report, hyps = run_dir / "evaluation.json", run_dir / "test.hyp"
    evaluate = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--split", "test"]
    evaluate += ["--config", str(RECIPE)]  # its [decode]: section 6.1's beam 4, alpha 0.6
    if args.test_limit:
        evaluate += ["--limit", str(args.test_limit)]
    if _cli([*evaluate, "--json", str(report), "--hyps", str(hyps)]) != 0:
        raise UserError("evaluation failed (see above)")
    _examples(data, hyps)

    _step(4, "what to look at")
    sources = run_dir / "examples.src"
    from aiayn.data import load_prepared

    src_lines, _ = load_prepared(data).texts("test")
    sources.write_text("".join(line + "\n" for line in list(src_lines)[:2]), encoding="utf-8")
    attention = run_dir / "attention"
    # (what it is, its path, the verb that writes it, the verb's arguments): a path is printed
    # only when its verb succeeded; a failure is one line at the end and a non-zero exit.
    outputs = [
        ("training curves:", f"{run_dir / 'plots'}{os.sep}", "plot", [str(run_dir)]),
        ("attention heatmaps:", f"{attention}{os.sep}", "translate",
         ["--checkpoint", str(model), "--input", str(sources), "--attention", str(attention),
          "--output", str(run_dir / "examples.hyp")]),
        ("walkthrough report:", str(run_dir / "walkthrough.html"), "walkthrough",
         ["--html", str(run_dir / "walkthrough.html")]),
    ]  # fmt: skip
    written, failed = [], []
    for what, path, verb, argv in outputs:
        rc = _cli([verb, *argv], quiet=True)
        if rc == 0:
            written.append(f"{what:23s} {path}")
        else:
            failed.append(f"aiayn {verb} (exit {rc})")
    result = json.loads(report.read_text(encoding="utf-8"))
    bleu = result.get("sacrebleu", {})
    _say(f"corpus: {source}; model averaged from the last {n} checkpoints: {model}")
    _say(f"sacreBLEU {bleu.get('score', float('nan')):.1f}  ({bleu.get('signature', '')})")
    chr_f = result.get("chrf", {})  # characters: the same for every target language
    _say(f"chrF2     {chr_f.get('score', float('nan')):.1f}  ({chr_f.get('signature', '')})")
    if cut:
        _say(f"  {cut}")
    for line in written:
        _say(line)
    _say(f"evaluation (JSON):      {report}")
    _say(f"total time: {(time.monotonic() - start) / 60:.1f} minutes")
    _say(f"\ntranslate your own sentence ({EXAMPLES[source][0]}, like the {source} corpus):")
    _say(f"  {translate_command(model, source)}")
    _say("open the model in the explorer (your own sentences, every layer and head):")
    _say(f"  {explore_command(model)}")
    if failed:
        raise UserError(
            f"{', '.join(failed)} failed (its message is above); what is listed above is in place"
        )
    return 0


def _cut_short(run_dir: Path, steps: int, minutes: float) -> str:
    """What to say beside the BLEU when the minutes stopped a training of --steps steps first."""
    from aiayn.train import read_metrics

    if not steps:  # --steps 0 or --resume: the minutes were the budget
        return ""
    stops = [e for e in read_metrics(run_dir) if e.get("event") == "stop"]
    if not stops or not str(stops[-1].get("reason", "")).startswith("reached max_minutes"):
        return ""
    return (
        f"cut short: the {minutes:g}-minute cap stopped the training at step "
        f"{stops[-1]['step']} of {steps}, so this BLEU is below that of {steps} steps; "
        "give more --minutes"
    )


def translate_command(model: Path, source: str) -> str:
    """`aiayn translate` of a sentence like those of the corpus the demo trained on."""
    return f'echo "{EXAMPLES[source][1]}" | .venv/bin/aiayn translate --checkpoint {model}'


def explore_command(model: Path) -> str:
    """The one command that opens the demo's model in the explorer."""
    if model == Path("runs/demo/average.safetensors"):  # explore's default
        return ".venv/bin/aiayn explore"
    return f".venv/bin/aiayn explore --checkpoint {model}"


def _examples(data: Path, hyps: Path, k: int = 6) -> None:
    """Print k test sentences with their translation and reference."""
    from aiayn.data import load_prepared

    sources, references = load_prepared(data).texts("test")
    outputs = hyps.read_text(encoding="utf-8").splitlines()
    step = max(1, len(outputs) // k)
    _say("\nexamples from the held-out test set:")
    for i in range(0, min(len(outputs), step * k), step):
        _say(f"  source:     {sources[i]}")
        _say(f"  aiayn:      {outputs[i]}")
        _say(f"  reference:  {references[i]}\n")
