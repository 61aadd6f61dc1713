"""Run a recipe: prepare its data, train for its budget, choose the average on valid, test once.

    python recipes/run.py recipes/multi30k-small.toml --multi30k-dir DIR
    python recipes/run.py recipes/multi30k-small.toml --seed 2 --run runs/multi30k-small-seed2
    python recipes/run.py recipes/multi30k-converged.toml --resume     # goes on after a stop

A recipe (recipes/*.toml) holds `aiayn train --config`'s tables, [model], [train] and [decode],
and a [recipe] table with the rest: the corpus (`source`, `vocab_size`, and `lang_pair`,
`valid_share`, `test_share`, `origins`, `min_words`, `max_words`, `num_pairs` where they apply),
the candidates of `average` and, for a run to convergence, `patience`, `check_every` and
`max_updates`. The budget is [train]'s: `max_minutes` of training (saves and logs left out),
else `max_steps` updates, and with `patience` on after them while the validation sacreBLEU of
the latest checkpoint rose within the last `patience` updates (checked every `check_every`).

Then, as section 6.1 does, each candidate number of last checkpoints is averaged and scored on
the VALID split with [decode]'s beam and alpha; the best (ties: fewer) is scored on test, once.
RUN/results.json receives the figures of `aiayn evaluate`, the budget, the machine and the
command. An existing RUN is refused unless --resume (go on where it stopped: its checkpoints and
validation curve are kept; a run already tested is not tested again) or --overwrite.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shlex
import shutil
import sys
import tomllib
from pathlib import Path

import torch

from aiayn.errors import UserError

KEYS = {"source", "vocab_size", "lang_pair", "valid_share", "test_share", "origins", "min_words"}
KEYS |= {"max_words", "num_pairs", "average", "patience", "check_every", "max_updates"}
SCORES = ("sacrebleu", "lowercase_bleu", "moses_bleu", "chrf", "paper_bleu", "perplexity")


def read_recipe(path: Path) -> tuple[dict, dict]:
    """(the [recipe] table, aiayn train's checked tables) of the recipe file PATH."""
    from aiayn.config import load_toml

    tables = load_toml(path)  # a bad [model], [train] or [decode] is one line naming the file
    recipe = tomllib.loads(path.read_text(encoding="utf-8")).get("recipe", {})
    unknown = sorted(set(recipe) - KEYS)
    if unknown or "source" not in recipe or not recipe.get("average"):
        why = f"unknown key(s) {', '.join(unknown)}" if unknown else "no source or no average"
        raise UserError(f"{path}: [recipe]: {why}")
    if recipe.get("patience") and not tables.get("train", {}).get("max_steps"):
        raise UserError(f"{path}: [recipe] patience counts updates: give [train] max_steps")
    return recipe, tables


def prepare_data(recipe: dict, data: Path, multi30k_dir: Path | None) -> None:
    """Prepare the recipe's corpus into DATA, or keep DATA if it was prepared so before."""
    from aiayn.data import layout
    from aiayn.data.corpora import simple
    from aiayn.data.corpora.download import default_cache_dir
    from aiayn.data.prepare import PrepareOptions, prepare

    source, vocab = recipe["source"], recipe["vocab_size"]
    try:
        manifest = json.loads(layout.manifest_path(data).read_text(encoding="utf-8"))
        options = manifest["options"]
        if manifest.get("complete") and (manifest["source"], options["vocab_size"]) == (
            source,
            vocab,
        ):
            return
    except (OSError, ValueError, KeyError):
        pass
    src, tgt = recipe.get("lang_pair", "en-de").split("-")
    cache, other = default_cache_dir(), tgt if src == "en" else src
    if source == "multi30k":
        from aiayn.data.corpora.multi30k import multi30k_corpus

        corpus = multi30k_corpus(multi30k_dir, cache)
    elif source == "tatoeba":
        from aiayn.data.corpora.tatoeba import tatoeba_corpus

        corpus = tatoeba_corpus(other, cache)
    elif source == "packaged":
        from aiayn.data.corpora.packaged import packaged_corpus

        corpus = packaged_corpus(other, cache, origins=tuple(recipe["origins"].split(",")))
    elif source in ("copy", "reverse"):
        corpus = simple.synthetic_corpus(source, recipe.get("num_pairs", 10000))
    else:
        raise UserError(f"[recipe] source {source!r}: multi30k, tatoeba, packaged or copy")
    shares = {k: recipe[k] for k in ("valid_share", "test_share") if k in recipe}
    words = {k: recipe[k] for k in ("min_words", "max_words") if k in recipe}
    opts = PrepareOptions(src_lang=src, tgt_lang=tgt, vocab_size=vocab, overwrite=True)
    prepare(corpus, data, dataclasses.replace(opts, **shares, **words))


def trained(run: Path) -> tuple[int, float]:
    """(updates, training minutes) of RUN's latest checkpoint; (0, 0.0) before the first."""
    from aiayn.run_dir import META_FILE, latest_checkpoint

    latest = latest_checkpoint(run) if run.is_dir() else None
    if latest is None:
        return 0, 0.0
    meta = json.loads((latest / META_FILE).read_text(encoding="utf-8"))
    return int(meta["step"]), float(meta["elapsed_s"]) / 60


def train_to(path: Path, data: Path, run: Path, budget: dict, seed: int | None) -> None:
    """Train RUN (start it, or resume it) with the recipe at PATH up to BUDGET (train fields)."""
    from aiayn.train import Runtime, Settings, load_train_data, resolve_configs, train

    resume = trained(run)[0] > 0
    train_data = load_train_data(str(data), run, resume)
    values = {**budget, **({"seed": seed} if seed is not None else {})}
    settings = Settings(config_file=path, train=values)
    model_cfg, train_cfg = resolve_configs(settings, train_data.tokenizer.vocab_size, run, resume)
    result = train(model_cfg, train_cfg, train_data, run, resume=resume, runtime=Runtime())
    if result.stop_reason.startswith("interrupted"):  # SIGINT or SIGTERM: saved, not done
        raise UserError(f"{run}: the training was stopped; --resume goes on")


def score(model: Path, data: Path, split: str, tables: dict, limit: int) -> dict:
    """`aiayn evaluate`'s figures of MODEL on SPLIT of DATA, decoded with the recipe's [decode]."""
    from aiayn.config import DecodeConfig, merge_config
    from aiayn.data import load_prepared
    from aiayn.evaluate import evaluate
    from aiayn.translator import load_translator

    prepared = load_prepared(data)
    sources, references = prepared.texts(split)
    limit = limit or len(sources)
    translator = load_translator(model, config=merge_config(DecodeConfig, None, tables))
    report = evaluate(translator, sources[:limit], references[:limit], prepared.tgt_lang)
    return {k: report[k] for k in SCORES if k in report}


def converge(path: Path, data: Path, run: Path, recipe: dict, tables: dict, args) -> list[dict]:
    """Train on in check_every chunks until valid sacreBLEU has not risen for patience updates
    (or max_updates); each check scores the latest checkpoint alone, kept in RUN/curve.jsonl."""
    file = run / "curve.jsonl"
    curve = [json.loads(x) for x in file.read_text().splitlines()] if file.is_file() else []
    every, cap = recipe.get("check_every", 1000), recipe.get("max_updates", 30000)
    while True:
        step = trained(run)[0]
        if not curve or curve[-1]["step"] != step:
            bleu = score(run, data, "valid", tables, args.limit)["sacrebleu"]["score"]
            curve.append({"step": step, "valid_sacrebleu": round(bleu, 2)})
            with file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(curve[-1]) + "\n")
            print(f"step {step:,}: valid sacreBLEU {bleu:.2f}", flush=True)
        best = max(curve, key=lambda c: (c["valid_sacrebleu"], -c["step"]))
        if step - best["step"] >= recipe["patience"] or step >= cap:
            return curve
        next_check = min((step // every + 1) * every, cap)
        train_to(path, data, run, {"max_steps": next_check, "max_minutes": 0.0}, args.seed)


def choose_and_test(run: Path, data: Path, recipe: dict, tables: dict, limit: int) -> dict:
    """Average each candidate number of RUN's last checkpoints and score it on valid; test the
    best (ties: fewer checkpoints) once."""
    from aiayn.train import average_to_file, resolve_model_files

    files = resolve_model_files([run])
    valid: dict[str, dict] = {}
    for n in sorted({min(n, len(files)) for n in recipe["average"]}):
        average_to_file(files[-n:], run / f"average-last{n}.safetensors")
        valid[str(n)] = score(run / f"average-last{n}.safetensors", data, "valid", tables, limit)
        print(f"valid sacreBLEU {valid[str(n)]['sacrebleu']['score']:.2f}, last {n} averaged")
    chosen = max(valid, key=lambda n: (valid[n]["sacrebleu"]["score"], -int(n)))
    tested = score(run / f"average-last{chosen}.safetensors", data, "test", tables, limit)
    return {"valid": valid, "averaged_checkpoints": int(chosen), **tested}


def machine() -> dict:
    from aiayn.flops import matmul_peak

    peak = matmul_peak(torch.device("cpu"), quick=True) / 1e9
    return {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()} | {
        "matmul_peak_gflops": round(peak, 1), "threads": torch.get_num_threads()
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipe", type=Path, help="a recipe file, recipes/NAME.toml")
    ap.add_argument("--run", type=Path, help="the run directory (default runs/NAME)")
    ap.add_argument("--data", type=Path, help="the prepared data (default RUN-data)")
    ap.add_argument("--multi30k-dir", type=Path, help="a local copy of Multi30k's raw files")
    ap.add_argument("--seed", type=int, help="the training seed (default: the recipe's)")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N sentences")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all)")
    ap.add_argument("--resume", action="store_true", help="go on with an existing --run")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --run")
    args = ap.parse_args(argv)
    try:
        return _run(args, command(args, argv if argv is not None else sys.argv[1:]))
    except UserError as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2


def command(args: argparse.Namespace, argv: list[str]) -> str:
    """The command as anyone can rerun it: no path of this machine (DIR, RUN, DATA instead)."""
    names = {str(args.multi30k_dir): "DIR", str(args.run): "RUN", str(args.data): "DATA"}
    words = [names.get(w, w) if Path(w).is_absolute() else w for w in argv]
    return shlex.join(["python", "recipes/run.py", *words])


def _run(args: argparse.Namespace, command: str) -> int:
    recipe, tables = read_recipe(args.recipe)
    run = args.run or Path("runs") / args.recipe.stem
    data, results = args.data or run.parent / f"{run.name}-data", run / "results.json"
    if run.exists() and not (args.resume or args.overwrite):
        raise UserError(f"{run} exists; pass --resume to go on with it, --overwrite to replace it")
    if args.overwrite:
        shutil.rmtree(run, ignore_errors=True)
    if results.is_file():  # the test split is scored once
        print(f"{results}: this run is done and tested; its figures stand")
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    prepare_data(recipe, data, args.multi30k_dir)
    train = tables.get("train", {})
    minutes = train.get("max_minutes", 0.0)
    if minutes:  # training minutes, over every resume
        left = minutes - trained(run)[1]
        if left > minutes / 100:  # within 1%: the saves' seconds are not training
            train_to(args.recipe, data, run, {"max_minutes": left}, args.seed)
    elif trained(run)[0] < train["max_steps"]:
        train_to(args.recipe, data, run, {}, args.seed)
    curve = converge(args.recipe, data, run, recipe, tables, args) if "patience" in recipe else []
    steps, done_minutes = trained(run)
    summary = {"recipe": args.recipe.as_posix(), "steps": steps, "training_minutes": done_minutes}
    summary |= {"budget_minutes": minutes} if minutes else {"budget_steps": train["max_steps"]}
    summary |= choose_and_test(run, data, recipe, tables, args.limit)
    summary |= {"curve": curve} if curve else {}
    summary |= {"machine": machine(), "command": command}
    results.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    bleu = summary["sacrebleu"]
    print(f"test sacreBLEU {bleu['score']:.2f} ({bleu['signature']}), last "
          f"{summary['averaged_checkpoints']} averaged (chosen on valid): {results}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
