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
import functools
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiayn.cli.common import add_config_args, check_device, device, flag_values, threads
from aiayn.config import PRESETS, ModelConfig, TrainConfig, model_preset

if TYPE_CHECKING:
    from aiayn.train.configure import Settings


# TrainConfig fields shown with the data and the output flags rather than with the recipe.
DATA_FIELDS = ("max_tokens",)
OUTPUT_FIELDS = (
    "save_every_steps",
    "save_every_minutes",
    "keep_last",
    "log_every",
    "valid_every",
    "valid_bleu",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aiayn.train.schedule import SCHEDULES

    tiny = model_preset("tiny")
    parser.usage = "%(prog)s --data DIR --run RUN [--preset NAME] [--config FILE] [FLAG ...]"
    settings = parser.add_argument_group(
        "presets and config file",
        "  Precedence: --preset < --schedule < --config < the flags below. A preset or a\n"
        "  schedule changes the defaults that the flags below show, which are those of\n"
        f"  --preset base and --schedule paper (--preset tiny: --d-model {tiny.d_model}, "
        f"--n-layers {tiny.n_layers}, ...).",
    )
    settings.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=None,
        metavar="NAME",
        help=f"model preset: {', '.join(PRESETS)} (default base)",
    )
    settings.add_argument(
        "--schedule",
        choices=list(SCHEDULES),
        default=None,
        help="optimiser/schedule preset: "
        + "; ".join(f"{k}: {v[0]}" for k, v in SCHEDULES.items())
        + " (default paper)",
    )
    settings.add_argument("--config", metavar="FILE", help="TOML file with [model] and [train]")
    data = parser.add_argument_group("data")
    data.add_argument("--data", metavar="DIR", help="prepared data (aiayn prepare --out DIR)")
    output = parser.add_argument_group("output: the run directory, checkpoints and logs")
    output.add_argument("--run", metavar="RUN", required=True, help="the run directory")
    output.add_argument("--resume", action="store_true", help="continue RUN's latest checkpoint")
    output.add_argument(
        "--no-progress", action="store_true", help="no progress bar or progress lines"
    )
    runtime = parser.add_argument_group("runtime: how to run, not what")
    runtime.add_argument(
        "--device",
        type=device,
        default="auto",
        help="auto (CUDA if present), cpu, cuda or cuda:N",
    )
    runtime.add_argument(
        "--threads",
        type=threads,
        default=0,
        metavar="N",
        help="intra-op threads on the CPU (default 0: all cores)",
    )
    runtime.add_argument(
        "--bf16",
        action="store_true",
        help="bf16 autocast (CUDA; a CPU with AVX512-BF16 or AMX: docs/performance.md)",
    )
    runtime.add_argument("--compile", action="store_true", help="torch.compile (CUDA only)")
    runtime.add_argument(
        "--kernels",
        choices=["fast", "plain"],
        default="fast",
        help="fast (aiayn.kernels, proven equal) or plain PyTorch: how to run, not stored in the "
        "run (default fast)",
    )
    runtime.add_argument(
        "--no-hash-check",
        action="store_true",
        help="check data and checkpoint files by size only, not SHA-256 (for huge files)",
    )
    add_config_args(
        parser,
        ModelConfig,
        skip=("vocab_size", "pad_id"),
        title="model (sections 3.1-3.5; [model] in --config; defaults: --preset base)",
    )
    moved = dict.fromkeys(DATA_FIELDS, data) | dict.fromkeys(OUTPUT_FIELDS, output)
    add_config_args(
        parser,
        TrainConfig,
        title="training (sections 5.2-5.4; [train] in --config; defaults: --preset base)",
        groups=moved,
    )


def _settings(args: argparse.Namespace) -> Settings:
    """What the command line asks for; ``aiayn.train.resolve_configs`` merges it."""
    from aiayn.train.configure import Settings

    return Settings(
        preset=args.preset,
        schedule=args.schedule,
        config_file=args.config,
        model=flag_values(ModelConfig, args),
        train=flag_values(TrainConfig, args),
    )


class _Progress:
    """The terminal view of a training: progress and events (valid, skip, checkpoint).

    On a terminal a tqdm bar (step, loss, ppl, lr, tokens/s, time left); when stderr is not a
    terminal (a log file, a pipe) no bar, whose carriage-return updates would flood the file,
    but one plain line every ``log_every`` steps with the same figures. ``on_start`` receives
    the "start" event (the run checked, before the first step) even when the view is off.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        enabled: bool,
        on_start: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.cfg, self.enabled, self.on_start = cfg, enabled, on_start
        self.bar: Any = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=cfg.max_steps or None, unit="step", dynamic_ncols=True)
        self.started = self.last = time.monotonic()
        self.tokens = 0.0
        self.first: int | None = None  # the first step of this process (resumed: not 1)

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "start":
            if self.on_start is not None:
                self.on_start(event)
            return
        if not self.enabled:
            return
        if kind == "tick":
            self._tick(event)
        elif kind == "valid":
            parts = [f"loss {event['loss']:.4f}", f"nll {event['nll']:.4f}"]
            parts += [f"ppl {event['ppl']:.3f}", f"accuracy {event['accuracy']:.4f}"]
            if "bleu" in event:
                parts.append(f"BLEU {event['bleu']:.2f}")
            self._write(f"step {event['step']}: valid " + ", ".join(parts))
        elif kind == "skip":
            self._write(f"step {event['step'] + 1}: non-finite loss or gradient, update skipped")
        elif kind == "checkpoint":
            self._write(f"step {event['step']}: checkpoint {event['path']}")

    def _tick(self, event: dict[str, Any]) -> None:
        step, bar = event["step"], self.bar
        if self.first is None:
            self.first = step
            if step > 1:  # resumed: the minutes left count from here
                self.started = time.monotonic()
                if bar is not None:
                    bar.n = bar.last_print_n = step - 1
        self.tokens += event["tokens"]
        now = time.monotonic()
        if bar is not None:
            bar.update(step - bar.n)
            if now - self.last >= 0.5:
                bar.set_postfix(self._figures(event, now), refresh=False)
                self.last, self.tokens = now, 0.0
        elif step % self.cfg.log_every == 0:
            total = f"/{self.cfg.max_steps}" if self.cfg.max_steps else ""
            figures = ", ".join(f"{k} {v}" for k, v in self._figures(event, now).items())
            self._write(f"step {step}{total}: {figures}")
            self.last, self.tokens = now, 0.0

    def _figures(self, event: dict[str, Any], now: float) -> dict[str, str]:
        """The figures of a tick: loss, ppl, lr, tokens/s since the last report, time left."""
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
        return post

    def _write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(args: argparse.Namespace) -> int:
    from aiayn.config import load_toml
    from aiayn.run_dir import LOCK_FILE
    from aiayn.storage import DirectoryLock, set_hash_checks
    from aiayn.train.configure import check_run_dir
    from aiayn.train.distributed import pick_device

    run_dir = Path(args.run)
    check_device(args.device)  # a missing GPU is an error before anything is loaded
    load_toml(args.config)  # so is a bad --config (an unknown table or key, a value's type)
    device = pick_device(args.device)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    check_run_dir(run_dir, args.resume)
    main = int(os.environ.get("RANK", "0")) == 0
    # A run that another training holds is refused before anything is loaded (train locks too).
    lock = DirectoryLock(run_dir, LOCK_FILE, what="training") if main and run_dir.is_dir() else None
    set_hash_checks(False if args.no_hash_check else None)
    try:
        with lock or contextlib.nullcontext():
            return _run(args, run_dir, device, main)
    finally:
        set_hash_checks(None)


def _run(args: argparse.Namespace, run_dir: Path, device: Any, main: bool) -> int:
    from aiayn.evaluate import greedy_bleu
    from aiayn.train import Runtime, load_train_data, resolve_configs, train

    data = load_train_data(args.data, run_dir, args.resume)
    vocab_size = data.tokenizer.vocab_size
    model_cfg, train_cfg = resolve_configs(_settings(args), vocab_size, run_dir, args.resume)

    def started(event: dict[str, Any]) -> None:  # train() checked the run (once): the line
        print(
            f"aiayn train: {event['parameters']:,} parameters, {len(data.train):,} training "
            f"pairs, vocabulary {model_cfg.vocab_size}, run {run_dir}",
            file=sys.stderr,
            flush=True,
        )

    view = _Progress(
        train_cfg, enabled=main and not args.no_progress, on_start=started if main else None
    )
    runtime = Runtime(
        device=args.device, kernels=args.kernels, bf16=args.bf16, compile=args.compile
    )
    try:
        result = train(
            model_cfg,
            train_cfg,
            data,
            run_dir,
            resume=args.resume,
            runtime=runtime,
            on_event=view,
            bleu=functools.partial(greedy_bleu, lang=data.tgt_lang),  # its BLEU tokenizer
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
