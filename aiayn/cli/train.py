"""Train a Transformer with the paper's recipe (sections 5.1-5.4) from a prepared data directory.

  aiayn train --data DIR --run RUN --preset tiny [--max-steps N] [--config file.toml]
  aiayn train --run RUN --resume            (continues exactly where RUN stopped)
  torchrun --nproc_per_node 8 -m aiayn train --data DIR --run RUN --preset base

Settings: preset < --schedule < --config file.toml ([model], [train]) < flags. The vocabulary
size comes from the data's tokenizer. RUN receives config.json, metrics.jsonl and
checkpoints/step_N/ (model.safetensors, trainer.pt, meta.json) with checkpoints/latest.
Ctrl-C or SIGTERM finishes the step and writes a checkpoint; `--resume` continues from it.
Stopping: --max-steps, --max-epochs, --max-minutes (0 = no limit). See docs/training.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiayn.cli.common import add_config_args, config_from_args, load_toml
from aiayn.config import PRESETS, ModelConfig, TrainConfig
from aiayn.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.train.schedule import SCHEDULES

    parser.add_argument("--data", metavar="DIR", help="prepared data (aiayn prepare --out DIR)")
    parser.add_argument("--run", metavar="RUN", required=True, help="the run directory")
    parser.add_argument("--resume", action="store_true", help="continue RUN's latest checkpoint")
    parser.add_argument(
        "--preset", choices=list(PRESETS), default=None, help="model preset (default base)"
    )
    parser.add_argument(
        "--schedule",
        choices=list(SCHEDULES),
        default=None,
        help="optimiser/schedule preset: "
        + "; ".join(f"{k}: {v[0]}" for k, v in SCHEDULES.items())
        + " (default paper)",
    )
    parser.add_argument("--config", metavar="FILE", help="TOML file with [model] and [train]")
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N"
    )
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (CUDA only)")
    parser.add_argument("--compile", action="store_true", help="torch.compile (CUDA only)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--no-hash-check",
        action="store_true",
        help="check data and checkpoint files by size only, not SHA-256 (for huge files)",
    )
    add_config_args(parser, ModelConfig, skip=("vocab_size", "pad_id"))
    add_config_args(parser, TrainConfig)


def _configs(args: argparse.Namespace, vocab_size: int) -> tuple[ModelConfig, TrainConfig]:
    """The run's configs: preset < schedule < TOML < flags, or config.json when resuming."""
    from aiayn.config import from_dict, model_preset, train_preset
    from aiayn.train.schedule import schedule_preset
    from aiayn.weights import check_same_architecture

    toml = load_toml(args.config)
    if args.resume:
        if args.preset is not None or args.schedule is not None:
            raise UserError("--resume keeps the run's config; change single settings with flags")
        saved = _read_config(Path(args.run))
        try:
            base_model = from_dict(ModelConfig, saved["model"])
            base_train = from_dict(TrainConfig, saved["train"])
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"{args.run}/config.json: not the config of a run ({e})") from None
    else:
        preset = args.preset or "base"
        base_model = model_preset(preset, vocab_size=vocab_size)
        base_train = schedule_preset(args.schedule or "paper", train_preset(preset))
    if "vocab_size" in toml.get("model", {}) and toml["model"]["vocab_size"] != vocab_size:
        raise UserError(
            f"{args.config}: vocab_size {toml['model']['vocab_size']} differs from the data's "
            f"tokenizer ({vocab_size})"
        )
    model_cfg = config_from_args(ModelConfig, args, base_model, toml)
    train_cfg = config_from_args(TrainConfig, args, base_train, toml)
    if args.resume:
        check_same_architecture(model_cfg, base_model, f"{args.run}/config.json vs the flags")
    if model_cfg.vocab_size != vocab_size:
        raise UserError(
            f"{args.run}: the run's vocabulary has {model_cfg.vocab_size} tokens, the data's "
            f"tokenizer {vocab_size}: use the data the run was trained on"
        )
    return model_cfg, train_cfg


def _read_config(run: Path) -> dict[str, Any]:
    path = run / "config.json"
    if not path.is_file():
        raise UserError(f"{run}: no config.json; is this a run directory of aiayn train?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise UserError(f"{path}: not valid JSON ({e})") from None


def _load_data(args: argparse.Namespace) -> Any:
    from aiayn.data.store import load_prepared
    from aiayn.train import TrainData

    data_dir = args.data
    if data_dir is None:
        if not args.resume:
            raise UserError("--data DIR is required (a directory written by aiayn prepare)")
        data_dir = _read_config(Path(args.run)).get("data")
        if not data_dir:
            raise UserError(f"{args.run}: config.json names no data directory; pass --data")
    prepared = load_prepared(data_dir)
    splits = prepared.manifest.get("splits", {})
    valid = prepared.split("valid") if splits.get("valid", {}).get("pairs") else None
    if not splits.get("train", {}).get("pairs"):
        raise UserError(f"{data_dir}: the train split is empty")
    texts = prepared.texts("valid") if valid is not None else None
    source = str(Path(data_dir).resolve())  # config.json names it for --resume without --data
    return TrainData(prepared.split("train"), valid, prepared.tokenizer, source, valid_texts=texts)


def _check_tokenizer(run: Path, tokenizer: Any) -> None:
    """On resume, the data's tokenizer must be the one the checkpoints were trained with."""
    from aiayn.train import latest_checkpoint
    from aiayn.weights import read_metadata

    latest = latest_checkpoint(run)
    if latest is None:
        return
    stored = read_metadata(latest / "model.safetensors").get("tokenizer")
    if stored is not None and stored != tokenizer.to_str():
        raise UserError(f"{latest}: trained with another tokenizer than that of the --data given")


def _check_trainer_state(run: Path) -> None:
    """On resume, the latest checkpoint's trainer.pt must be there and readable without pickle.

    A missing, truncated or pickled (not torch.save's zip) file is one UserError naming it; it
    is opened with ``weights_only=True`` and memory-mapped, so nothing runs and little is read.
    """
    import zipfile

    import torch

    from aiayn.train import latest_checkpoint
    from aiayn.train.checkpoints import TRAINER_FILE

    latest = latest_checkpoint(run)
    if latest is None:
        return  # the session says there is nothing to resume
    path = latest / TRAINER_FILE
    if not path.is_file():
        raise UserError(f"{path}: missing, so {latest.name} cannot be resumed")
    if not zipfile.is_zipfile(path):  # torch.save writes a zip archive; its index is at the end
        raise UserError(
            f"{path}: not a trainer state written by aiayn train (not a complete torch.save "
            "archive: truncated, or pickled by something else)"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as e:  # torch raises RuntimeError, UnpicklingError, EOFError, ... here
        first = " ".join(str(e).split())[:160]
        raise UserError(f"{path}: not a readable trainer state ({first})") from None
    keys = ("optimizer", "progress", "rng")
    if not isinstance(state, dict) or any(k not in state for k in keys):
        raise UserError(f"{path}: not a trainer state of aiayn train (needs {', '.join(keys)})")


class _Progress:
    """The terminal view: a tqdm bar (step, loss, ppl, lr, tokens/s, time left) and events."""

    def __init__(self, cfg: TrainConfig, enabled: bool) -> None:
        from tqdm import tqdm

        self.cfg, self.enabled = cfg, enabled
        self.bar = tqdm(
            total=cfg.max_steps or None, unit="step", dynamic_ncols=True, disable=not enabled
        )
        self.started = self.last = time.monotonic()
        self.tokens = 0.0

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        kind, bar = event["event"], self.bar
        if kind == "tick":
            if bar.n == 0 and event["step"] > 1:  # resumed
                bar.n = bar.last_print_n = event["step"] - 1
                self.started = time.monotonic()
            bar.update(event["step"] - bar.n)
            self.tokens += event["tokens"]
            now = time.monotonic()
            if now - self.last >= 0.5:
                rate = self.tokens / max(now - self.last, 1e-9)
                post = {
                    "loss": f"{event['loss']:.3f}",
                    "ppl": f"{math.exp(min(event['nll'], 50)):.2f}",
                    "lr": f"{event['lr']:.2e}",
                    "tok/s": f"{rate:.0f}",
                }
                if self.cfg.max_minutes:
                    left = 60 * self.cfg.max_minutes - (now - self.started)
                    post["left"] = f"{max(left, 0) / 60:.1f}min"
                bar.set_postfix(post, refresh=False)
                self.last, self.tokens = now, 0.0
        elif kind == "valid":
            parts = [f"loss {event['loss']:.4f}", f"nll {event['nll']:.4f}"]
            parts += [f"ppl {event['ppl']:.3f}", f"accuracy {event['accuracy']:.4f}"]
            if "bleu" in event:
                parts.append(f"BLEU {event['bleu']:.2f}")
            bar.write(f"step {event['step']}: valid " + ", ".join(parts))
        elif kind == "skip":
            bar.write(f"step {event['step'] + 1}: non-finite loss or gradient, update skipped")
        elif kind == "checkpoint":
            bar.write(f"step {event['step']}: checkpoint {event['path']}")

    def close(self) -> None:
        self.bar.close()


def run(args: argparse.Namespace) -> int:
    from aiayn.storage import DirectoryLock, set_hash_checks
    from aiayn.train.distributed import pick_device

    run_dir = Path(args.run)
    device = pick_device(args.device)  # a missing GPU is an error before anything is loaded
    if args.bf16 and device.type != "cuda":
        raise UserError("--bf16: bf16 autocast is for CUDA devices; this run is on the CPU")
    if args.resume and not run_dir.is_dir():
        raise UserError(f"{run_dir}: --resume given but there is no such run directory")
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--run {run_dir}: exists and is not a directory")
    main = int(os.environ.get("RANK", "0")) == 0
    # A run that another training holds is refused before anything is loaded (train locks too).
    lock = DirectoryLock(run_dir, what="training") if main and run_dir.is_dir() else None
    set_hash_checks(False if args.no_hash_check else None)
    try:
        with lock or contextlib.nullcontext():
            return _run(args, run_dir, device, main)
    finally:
        set_hash_checks(None)


def _run(args: argparse.Namespace, run_dir: Path, device: Any, main: bool) -> int:
    from aiayn.evaluate import greedy_bleu
    from aiayn.train import Runtime, train

    data = _load_data(args)
    model_cfg, train_cfg = _configs(args, data.tokenizer.vocab_size)
    if args.resume:
        _check_tokenizer(run_dir, data.tokenizer)
        _check_trainer_state(run_dir)
    if main:
        n_params = _count_parameters(model_cfg)
        print(
            f"aiayn train: {n_params:,} parameters, {len(data.train):,} training pairs, "
            f"vocabulary {model_cfg.vocab_size}, run {run_dir}",
            file=sys.stderr,
        )
    view = _Progress(train_cfg, enabled=main and not args.no_progress)
    runtime = Runtime(device=args.device, bf16=args.bf16, compile=args.compile)
    try:
        result = train(
            model_cfg,
            train_cfg,
            data,
            run_dir,
            resume=args.resume,
            runtime=runtime,
            on_event=view,
            bleu=greedy_bleu,
        )
    finally:
        view.close()
    if main:
        valid = ""
        if result.valid:
            valid = f"; valid loss {result.valid['loss']:.4f}, ppl {result.valid['ppl']:.3f}"
        print(f"{result.stop_reason} at step {result.progress.step}{valid}")
        print(f"checkpoint: {result.checkpoint}")
    return 0


def _count_parameters(cfg: ModelConfig) -> int:
    """Parameters of the model a config describes, without building it (tied matrix once)."""
    import torch

    from aiayn.model import Transformer

    with torch.device("meta"):
        return Transformer(dataclasses.replace(cfg)).num_parameters()
