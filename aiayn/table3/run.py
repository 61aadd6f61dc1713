"""Table 3's runner: prepare the corpus, train and score every run, keep its record.  Section 6.2.

``run_table3`` is what ``aiayn table3`` runs: it checks OUT (``aiayn.table3.results``) before
anything is run or written, prepares the corpus into OUT/data once (Multi30k, else the packaged
corpus, labelled), then for each run of the chosen rows and seeds not yet in OUT/results.jsonl
trains the scaled variation (``aiayn.table3.rows``) for the protocol's steps, resuming its
checkpoint in OUT/runs/RUN if a kill stopped it, scores it on the dev split (perplexity,
sacreBLEU with beam 4 and alpha 0.6, the last checkpoint alone; the translations in OUT/hyps/)
and appends its record. ``write_report`` writes OUT/report.md, the same as one page
OUT/report.html, and OUT/plots/ from the records alone. Each step's own output goes to
OUT/logs/; what the runner does is told line by line to a ``say`` function (the log by default,
the terminal for ``aiayn table3``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from aiayn.errors import UserError

log = logging.getLogger(__name__)

ROWS = ("A", "B", "C", "D", "E")  # Table 3's row groups
QUICK_STEPS = 200  # below this many updates a run is a check, not the table: ...
QUICK_DEV_LIMIT = 100  # ... it scores the first 100 dev pairs unless --dev-limit says otherwise
LOG_EVERY = 50  # the training loss of a curve: one point per 50 updates


def default_dev_limit(steps: int) -> int:
    """The dev pairs a run of ``steps`` updates is scored on by default (0: all of them): the
    whole dev split for the table, the first ``QUICK_DEV_LIMIT`` for a check of a few updates
    (an untrained model never emits EOS, so decoding the whole split would take most of it)."""
    return QUICK_DEV_LIMIT if steps < QUICK_STEPS else 0


def valid_every(steps: int) -> int:
    """Updates between the dev-PPL points of a curve: every 100 for a budget of hundreds
    (4,000 passes through 1,000), else a tenth of the budget; the last update always has one."""
    return 100 if steps >= 1000 and steps % 100 == 0 else max(steps // 10, 1)


@contextlib.contextmanager
def _logged(log_file: Path, what: str) -> Iterator[None]:
    """The log lines and any other output of one step go to log_file, not to the terminal."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    with (
        log_file.open("a", encoding="utf-8") as fh,
        contextlib.redirect_stdout(fh),
        contextlib.redirect_stderr(fh),
    ):
        fh.write(f"$ {what}\n")
        fh.flush()
        streams = [h.setStream(fh) for h in handlers]
        try:
            yield
        finally:
            for h, stream in zip(handlers, streams, strict=True):
                h.setStream(stream)


def _reused(source: str, data: Path, vocab: int) -> str | None:
    """The corpus of OUT/data when an earlier invocation prepared it, or None (none, or
    incomplete). Another corpus than this table's is refused: another source, language pair or
    vocabulary, or a tokenizer that OUT/protocol.json does not record."""
    from aiayn.data import load_prepared
    from aiayn.data.corpora.multi30k import fallbacks
    from aiayn.table3.results import read_protocol

    try:
        manifest = load_prepared(data).manifest
    except UserError:
        return None
    held = manifest.get("source")
    options = manifest.get("options") if isinstance(manifest.get("options"), dict) else {}
    wanted = fallbacks(source)
    pair = f"{manifest.get('src_lang')}-{manifest.get('tgt_lang')}"
    found = read_protocol(data.parent)
    problem = ""
    if held not in wanted:
        problem = f"it holds {held!r}, --source {source} takes {' or '.join(wanted)}"
    elif pair != "en-de":
        problem = f"its language pair is {pair}, not en-de"
    elif options.get("vocab_size") != vocab:
        problem = f"its vocabulary size is {options.get('vocab_size')!r}, not {vocab}"
    elif found is not None and found["corpus"] != held:
        problem = f"it holds {held!r}, protocol.json records {found['corpus']!r}"
    elif found is not None and found["tokenizer_sha256"] != _sha256(data):
        problem = "its tokenizer is not the one protocol.json records: another corpus"
    if problem:
        raise UserError(
            f"{data}: not this table's corpus ({problem}); remove it to prepare it anew, "
            "or choose another --out"
        )
    return held


def _prepare(
    source: str,
    multi30k_dir: str | Path | None,
    multi30k_url: str | None,
    out: Path,
    vocab: int,
    reused: str | None,
    say: Callable[[str], None],
) -> tuple[Path, str]:
    """The prepared corpus in OUT/data: (directory, corpus name); reused names the corpus that
    an earlier invocation prepared there (``_reused``), None prepares it: Multi30k if it can be
    had, else the packaged corpus (``aiayn.data.corpora.multi30k.fallbacks``)."""
    from aiayn.data.corpora.download import default_cache_dir
    from aiayn.data.corpora.multi30k import BASE_URL, fallbacks, first_had, multi30k_corpus
    from aiayn.data.corpora.packaged import packaged_corpus
    from aiayn.data.prepare import PrepareOptions, prepare

    data = out / "data"
    if reused is not None:
        return data, reused
    options = PrepareOptions(src_lang="en", tgt_lang="de", vocab_size=vocab, overwrite=True)

    def attempt(name: str) -> None:
        with _logged(out / "logs" / "prepare.log", f"prepare {name} into {data}"):
            cache = default_cache_dir()
            if name == "multi30k":
                corpus = multi30k_corpus(multi30k_dir, cache, base_url=multi30k_url or BASE_URL)
            else:
                corpus = packaged_corpus("de", cache)
            prepare(corpus, data, options)

    def missed(name: str, e: UserError) -> None:
        say(f"Multi30k could not be had ({e}): the packaged corpus instead")

    try:
        corpus, _ = first_had(fallbacks(source), attempt, missed)
    except UserError as e:
        if source == "multi30k":
            raise UserError(f"--source multi30k: Multi30k could not be had: {e}") from None
        raise UserError(f"the packaged corpus could not be prepared: {e}") from None
    return data, corpus


def _commit() -> str:
    here = Path(__file__).resolve().parents[1]  # the aiayn package
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _settings(cfg: Any, train: dict[str, Any], protocol: Any, seed: int) -> Any:
    """What a run of the table asks ``aiayn.train`` for: the base preset, the settings of cfg that
    differ from it (those of the scaled variation), train's overrides and the protocol's."""
    from aiayn.config import ModelConfig
    from aiayn.train import Settings

    default = dataclasses.asdict(ModelConfig())
    model = {
        key: value
        for key, value in dataclasses.asdict(cfg).items()
        if key not in ("vocab_size", "pad_id") and value != default[key]
    }
    values = {
        "warmup": protocol.warmup,
        "lr_scale": protocol.lr_scale,
        "max_tokens": protocol.max_tokens,
        "max_steps": protocol.steps,
        "seed": seed,
        "valid_every": valid_every(protocol.steps),  # dev PPL for the curve (no RNG drawn)
        "log_every": min(LOG_EVERY, valid_every(protocol.steps)),  # a check's curve too
        "keep_last": 1,
        "save_every_steps": max(protocol.steps // 6, 1),
        "save_every_minutes": 0.0,
    }
    return Settings(preset="base", model=model, train={**train, **values})


def _trained(run: Path) -> dict[str, Any]:
    """The latest checkpoint's meta (step, elapsed_s), or step 0."""
    from aiayn.run_dir import META_FILE, latest_checkpoint

    latest = latest_checkpoint(run) if run.is_dir() else None
    if latest is None:
        return {"step": 0, "elapsed_s": 0.0}
    return json.loads((latest / META_FILE).read_text(encoding="utf-8"))


def _dev_split(split: Any, limit: int) -> Any:
    """The training data with its valid split cut to its first ``limit`` pairs (0: as it is)."""
    from aiayn.data.splits import ArraySplit

    valid = split.valid
    if not limit or valid is None or len(valid) <= limit:
        return split
    cut = ArraySplit(
        valid.src_tokens,
        valid.src_offsets[: limit + 1],
        valid.tgt_tokens,
        valid.tgt_offsets[: limit + 1],
    )
    texts = split.valid_texts
    if texts is not None:
        texts = (texts[0][:limit], texts[1][:limit])
    return dataclasses.replace(split, valid=cut, valid_texts=texts)


def _train(run: Path, data: Path, settings: Any, protocol: Any, log_file: Path) -> None:
    """Train run to protocol.steps, resuming its checkpoint if it has one; every
    ``valid_every`` updates its dev PPL (on the protocol's dev pairs) goes to RUN/metrics.jsonl."""
    from functools import partial

    from aiayn.evaluate import greedy_bleu
    from aiayn.train import Runtime, Settings, load_train_data, resolve_configs, train

    step = _trained(run)["step"]
    if step >= protocol.steps:  # trained before a kill during its scoring
        return
    resume = step > 0
    if not resume and run.exists():  # killed before its first checkpoint: nothing to keep
        shutil.rmtree(run)
    try:
        with _logged(log_file, f"train {run}" + (" (resumed)" if resume else "")):
            split = _dev_split(load_train_data(data, run, resume), protocol.dev_limit)
            asked = Settings() if resume else settings  # resumed: the run's own config.json
            model_cfg, train_cfg = resolve_configs(asked, split.tokenizer.vocab_size, run, resume)
            result = train(
                model_cfg,
                train_cfg,
                split,
                run,
                resume=resume,
                runtime=Runtime(),
                bleu=partial(greedy_bleu, lang=split.tgt_lang),
            )
            log.info("%s at step %d", result.stop_reason, result.progress.step)
    except UserError as e:
        raise UserError(f"{run}: training failed: {e} (log: {log_file})") from None
    if _trained(run)["step"] < protocol.steps:  # the training loop stopped on a signal
        raise KeyboardInterrupt


def _score(run: Path, data: Path, out: Path, rid: str, protocol: Any) -> dict:
    """Dev perplexity and sacreBLEU (beam 4, alpha 0.6, the last checkpoint alone): the figures
    of ``aiayn evaluate``, kept in RUN/dev.json, the translations in OUT/hyps/RID.txt; on the
    first ``protocol.dev_limit`` dev pairs when it is set."""
    from aiayn.config import DecodeConfig, to_dict
    from aiayn.data import load_prepared
    from aiayn.evaluate import evaluate
    from aiayn.run_dir import resolve_checkpoint
    from aiayn.storage import atomic_write
    from aiayn.translator import load_translator

    log_file = out / "logs" / f"{rid}.log"
    hyps = out / "hyps" / f"{rid}.txt"
    hyps.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _logged(log_file, f"score {run} on the valid split of {data}"):
            prepared = load_prepared(data)
            sources, references = _first(prepared.texts("valid"), protocol.dev_limit)
            decode = DecodeConfig(beam=protocol.beam, alpha=protocol.alpha)
            translator = load_translator(run, decode, fallback_tokenizer=prepared.tokenizer)
            report = evaluate(translator, list(sources), list(references), prepared.tgt_lang)
            lines = report.pop("hypotheses")
            report |= {"engine": "torch", "checkpoint": str(resolve_checkpoint(run))}
            report |= {"split": "valid", "decode": to_dict(translator.config)}
            log.info(
                "sacreBLEU %.2f (%s)",
                report["sacrebleu"]["score"],
                report["sacrebleu"]["signature"],
            )
    except UserError as e:
        raise UserError(f"{run}: scoring failed: {e} (log: {log_file})") from None
    for path, text in (
        (run / "dev.json", json.dumps(report, indent=2) + "\n"),
        (hyps, "".join(h + "\n" for h in lines)),
    ):
        atomic_write(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))
    return report


def _first(texts: tuple[Sequence[str], Sequence[str]], limit: int) -> tuple[list, list]:
    """(sources, references), their first ``limit`` pairs (0: all)."""
    sources, references = texts
    end = limit or len(sources)
    return list(sources)[:end], list(references)[:end]


def _refs(data: Path, out: Path, limit: int) -> tuple[str, int]:
    """Write the dev references (the first ``limit``, 0: all) next to the translations once:
    their path relative to OUT and how many there are."""
    from aiayn.data import load_prepared

    _, references = _first(load_prepared(data).texts("valid"), limit)
    refs = out / "hyps" / "refs.txt"
    if not refs.is_file():
        refs.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(r + "\n" for r in references)
        tmp = refs.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, refs)
    return str(refs.relative_to(out)), len(references)


def _curve(run: Path, out: Path, rid: str) -> None:
    """The run's curve (dev PPL at each validation, training loss per log window), from
    RUN/metrics.jsonl into OUT/curves.json."""
    from aiayn.run_dir import read_metrics
    from aiayn.table3.curves import curve_from_metrics, write_curve

    write_curve(out, rid, curve_from_metrics(read_metrics(run)))


def _train_flops(data: Path, cfg: Any, protocol: Any, seed: int) -> float:
    """FLOPs of the run's training (aiayn.flops), from one epoch of its batches, per step."""
    from aiayn.data import load_prepared, token_batches
    from aiayn.flops import training_flops

    split = load_prepared(data).split("train")
    batches = token_batches(split, protocol.max_tokens, seed=seed, epoch=0)
    src, tgt = split.src_lengths, split.tgt_lengths
    total = 0
    for b in batches:
        S, T = int(src[b].max()) + 1, int(tgt[b].max()) + 1  # EOS; BOS in tgt_in
        total += training_flops(len(b), S, T, cfg, n_out=int((tgt[b] + 1).sum()))
    return total / len(batches) * protocol.steps


def _plan_table(todo: list[Any], protocol: Any) -> str:
    from aiayn.table3.report import HEADER, _paper_line, _shape
    from aiayn.table3.rows import scale_variation

    lines = [HEADER]
    small = _small(protocol)
    for v in todo:
        cfg, train = scale_variation(v, small)
        lines.append(_paper_line(v))
        steps = f"{protocol.steps:,}"
        lines.append(
            f"| | ours | {' | '.join(_shape(dataclasses.asdict(cfg), train))} | {steps} | | | |"
        )
    return "\n".join(lines)


def _small(protocol: Any) -> Any:
    from aiayn.table3.rows import SMALL_BASE

    fields = ("d_model", "n_heads", "d_ff", "n_layers")
    return dataclasses.replace(SMALL_BASE, **{k: getattr(protocol, k) for k in fields})


def write_report(out: Path) -> Path:
    """OUT/report.md, the same as one page OUT/report.html, and OUT/plots/, from results.jsonl."""
    from aiayn.table3 import html, report
    from aiayn.table3.results import check_directory

    records = check_directory(out)
    if not records:
        raise UserError(f"{out}: no results yet (results.jsonl is missing or empty)")
    checked = report.check_findings(records)
    pvalues = report.bootstrap(records, out)
    plots = report.group_plots(records, out / "plots")
    first = records[0]
    corpus = first["corpus"]
    label = (
        "Multi30k EN-DE, dev = its valid split (1,014 pairs)"
        if corpus == "multi30k"
        else (
            "the packaged corpus (a FALLBACK: software help texts, not Multi30k), dev = its valid"
            " split"
        )
    )
    limit = first["protocol"].get("dev_limit", 0)
    if limit:
        pairs = first.get("dev_pairs", limit)
        label = label.replace(" (1,014 pairs)", "") + (
            f", its first {pairs:,} pairs only (--dev-limit {limit}: a check, not the protocol)"
        )
    counts = report.summary(checked)
    text = [
        "# Table 3, rerun at CPU scale",
        "",
        f"Corpus: {label}. {report.provenance(records)}.",
        "Each variation: the paper's line (newstest2013, 100K steps), then ours: the mean over "
        "seeds and [min, max]. BLEU is sacreBLEU (13a, cased) with beam 4 and alpha 0.6, the "
        "last checkpoint alone; p is the largest paired-bootstrap p-value against the base run "
        "of the same seed (1000 resamples).",
        "",
        report.table(records, pvalues),
        "",
        "## The paper's findings, checked",
        "",
        "The noise is the larger range (max - min over seeds) of the two sides; a difference "
        "within it is never called a trend.",
        "",
        report.findings_table(checked),
        "",
        "Per row group: "
        + "; ".join(
            f"{row}: " + ", ".join(f"{n} {v}" for v, n in sorted(c.items()))
            for row, c in counts.items()
        )
        + ".",
        "",
        "## Training cost beside Table 2",
        "",
        report.cost_table(records),
        "",
        *[f"![row {p.stem[-1]}](plots/{p.name})" for p in plots],
        "",
        *_curves_section(records, out),
    ]
    path = out / "report.md"
    markdown = "\n".join(text)
    for target, content in ((path, markdown), (out / "report.html", html.render(markdown, out))):
        tmp = target.with_suffix(".tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, target)
    return path


def _curves_section(records: list[dict[str, Any]], out: Path) -> list[str]:
    """The report's learning curves (OUT/curves.json) and row C at the base's compute; nothing
    when no run recorded a curve."""
    from aiayn.table3.curves import curve_plots, equal_compute, read_curves

    curves = read_curves(out)
    if not curves:
        return []
    plots = curve_plots(records, curves, out / "plots")
    lines = [
        "## Learning curves",
        "",
        f"Dev PPL at each validation of {sum(r['run'] in curves for r in records)} runs "
        "(OUT/curves.json, with the training loss per 50 updates).",
        "",
        *[f"![curves of row {p.stem[-1]}](plots/{p.name})" for p in plots],
        "",
    ]
    rows = equal_compute(records, curves)
    if rows:
        lines += [
            "## Row C at the base's compute",
            "",
            "Each run's dev PPL where it has spent the training FLOPs of the base run of the "
            "same seed (interpolated in log PPL between validations).",
            "",
            "| run | update | dev PPL | how |",
            "|---|---|---|---|",
            *[
                f"| {r['run']} | {r['step']:,.0f} | "
                + ("" if r["ppl"] != r["ppl"] else f"{r['ppl']:.2f}")
                + f" | {r['how']} |"
                for r in rows
            ],
            "",
        ]
    return lines


def run_table3(
    out: Path,
    *,
    rows: Sequence[str] = ROWS,
    steps: int = 1000,
    seeds: int = 2,
    base_seeds: int | None = None,
    dev_limit: int | None = None,
    source: str = "auto",
    multi30k_dir: str | Path | None = None,
    multi30k_url: str | None = None,
    say: Callable[[str], None] = log.info,
) -> Path:
    """Train and score every run of ``rows`` not yet in OUT/results.jsonl; OUT/report.md.

    The base row gets ``base_seeds`` seeds (default ``seeds`` + 1), every variation of ``rows``
    ``seeds`` seeds, each ``steps`` updates (``Protocol``), scored on the first ``dev_limit``
    dev pairs (0: all; default ``default_dev_limit(steps)``). Each run's curve goes to
    OUT/curves.json as soon as it is trained. ``source`` is "auto" (Multi30k, from
    ``multi30k_dir`` or downloaded, from ``multi30k_url`` if given; else the packaged corpus,
    labelled), "multi30k" or "packaged". What it does is told line by line to ``say``.
    """
    import torch

    from aiayn.flops import matmul_peak
    from aiayn.table3.report import bleu_tokenizer_of
    from aiayn.table3.results import (
        Protocol,
        append_result,
        check_directory,
        check_protocol,
        run_id,
    )
    from aiayn.table3.rows import VARIATIONS, quantities, scale_variation, variations

    base_seeds = base_seeds or seeds + 1
    todo = [(VARIATIONS[0], s) for s in range(1, base_seeds + 1)]
    chosen = variations(tuple(rows))
    todo += [(v, s) for s in range(1, seeds + 1) for v in chosen]
    if dev_limit is None:
        dev_limit = default_dev_limit(steps)
    protocol = Protocol(steps=steps, dev_limit=dev_limit)
    records = check_directory(out, protocol)  # before anything is run or written
    reused = _reused(source, out / "data", protocol.vocab_size)
    say(
        f"Table 3 at CPU scale: rows {','.join(rows)}, {len(todo)} runs of {steps:,} "
        f"updates of {protocol.max_tokens:,} tokens, in {out}"
    )
    if dev_limit:
        say(
            f"dev: the first {dev_limit:,} pairs only (--dev-limit {dev_limit}"
            + (f", the default below {QUICK_STEPS} steps" if steps < QUICK_STEPS else "")
            + "): a check, not the table's protocol, which scores the whole dev split"
        )
    say(_plan_table([VARIATIONS[0], *chosen], protocol))
    out.mkdir(parents=True, exist_ok=True)
    data, corpus = _prepare(
        source, multi30k_dir, multi30k_url, out, protocol.vocab_size, reused, say
    )
    protocol = dataclasses.replace(protocol, corpus=corpus, tokenizer_sha256=_sha256(data))
    check_protocol(out, protocol)
    if corpus != "multi30k":
        say("corpus: the packaged corpus (a FALLBACK: Multi30k could not be had)")
    done = {r["run"] for r in records}
    refs, dev_pairs = _refs(data, out, protocol.dev_limit)
    peak = matmul_peak() / 1e9
    commit = _commit()
    for i, (v, seed) in enumerate(todo, 1):
        rid = run_id(v.name, seed)
        if rid in done:
            say(f"[{i}/{len(todo)}] {rid}: done before, kept")
            continue
        cfg, train = scale_variation(v, _small(protocol))
        run_dir = out / "runs" / rid
        at = _trained(run_dir)["step"]
        resumed = f" (resumed at step {at:,})" if at else ""
        say(f"[{i}/{len(todo)}] {rid}: training {protocol.steps:,} steps{resumed}")
        started = time.monotonic()
        settings = _settings(cfg, train, protocol, seed)
        _train(run_dir, data, settings, protocol, out / "logs" / f"{rid}.log")
        _curve(run_dir, out, rid)
        trained = _trained(run_dir)
        scored_at = time.monotonic()
        dev = _score(run_dir, data, out, rid, protocol)
        cfg = dataclasses.replace(cfg, vocab_size=_vocab(data))
        record = {
            "run": rid,
            "name": v.name,
            "row": v.row,
            "seed": seed,
            "steps": trained["step"],
            "corpus": corpus,
            "model": dataclasses.asdict(cfg),
            "train_overrides": train,
            "protocol": dataclasses.asdict(protocol),
            "values": quantities(cfg, train),
            "params": _parameters(cfg),
            "train_flops": _train_flops(data, cfg, protocol, seed),
            "dev_ppl": dev["perplexity"]["value"],
            "dev_bleu": dev["sacrebleu"]["score"],
            "bleu_signature": dev["sacrebleu"]["signature"],
            "dev_chrf": dev["chrf"]["score"],  # characters: comparable for any target language
            "dev_pairs": dev_pairs,  # the dev pairs scored: all, or the first protocol.dev_limit
            "hyps": f"hyps/{rid}.txt",
            "refs": refs,
            "train_minutes": trained["elapsed_s"] / 60,
            "score_minutes": (time.monotonic() - scored_at) / 60,
            "this_invocation_minutes": (time.monotonic() - started) / 60,
            "commit": commit,
            "matmul_peak_gflops": round(peak, 1),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "cpu_count": os.cpu_count(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        append_result(out, record)
        say(
            f"    dev PPL {record['dev_ppl']:.2f}, sacreBLEU {record['dev_bleu']:.2f} "
            f"({bleu_tokenizer_of(record)}), chrF2 {record['dev_chrf']:.2f}, "
            f"{record['params']:,} parameters, {record['train_minutes']:.1f} min training"
        )
    return write_report(out)


def _sha256(data: Path) -> str:
    import hashlib

    from aiayn.data import layout

    return hashlib.sha256(layout.tokenizer_path(data).read_bytes()).hexdigest()


def _vocab(data: Path) -> int:
    from aiayn.data import load_prepared

    return load_prepared(data).tokenizer.vocab_size


def _parameters(cfg: Any) -> int:
    import torch

    from aiayn.model import Transformer

    with torch.device("meta"):
        return Transformer(cfg).num_parameters()
