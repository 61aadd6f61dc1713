"""How a run runs, around the loop: devices and kernels, the run directory, clocks, signals.

``Session`` starts or resumes a run, writes its checkpoints and metrics and decides when to
stop; ``BatchStream`` reads this process's token-budget batches epoch after epoch from a saved
position; ``wrap`` adds DDP, torch.compile and bf16 autocast where they apply.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aiayn import storage
from aiayn.config import ModelConfig, TrainConfig, to_dict
from aiayn.data import Batch, Split, batch_from_indices, token_batches
from aiayn.errors import UserError
from aiayn.kernels import Kernels
from aiayn.loss import perplexity
from aiayn.model import Transformer
from aiayn.run_dir import CONFIG_FILE, LOCK_FILE, latest_checkpoint
from aiayn.train import checkpoints as ckpt
from aiayn.train.distributed import World, all_reduce_sum, barrier, gather_objects
from aiayn.train.metrics import MetricsLog

log = logging.getLogger(__name__)


class TrainingDiverged(UserError):
    """max_bad_steps consecutive updates had a non-finite loss or gradient."""


@dataclass(frozen=True)
class Runtime:
    """How to run, not what to compute: device, kernels, bf16 autocast, torch.compile (CUDA only).

    None of it is stored in a checkpoint: a run may resume with other values.
    """

    device: str = "auto"
    kernels: Kernels = "fast"  # aiayn.kernels.FAST (proven equal to PLAIN); "plain": none
    bf16: bool = False  # EXTENSION: bf16 autocast, CUDA or CPU (off by default)
    compile: bool = False  # torch.compile the model (CUDA only; ignored on the CPU)


@dataclass
class TrainData:
    """The splits (token ids without specials), the tokenizer if any, and where they came from."""

    train: Split
    valid: Split | None = None
    tokenizer: Any = None  # aiayn.data.Tokenizer: stored in every checkpoint when given
    source: str | None = None  # the data directory, recorded in config.json
    valid_texts: tuple[list[str], list[str]] | None = None  # (sources, references) for BLEU
    tgt_lang: str | None = None  # the references' language: their BLEU tokenizer (zh: tok:zh)


class BatchStream:
    """This rank's batches, epoch after epoch, from a data position (epoch, batch index)."""

    def __init__(
        self, split: Split, max_tokens: int, seed: int, world: World, epoch: int, index: int
    ) -> None:
        self.split, self.max_tokens, self.seed, self.world = split, max_tokens, seed, world
        self.epoch, self.index = epoch, index
        self._load()

    def _load(self) -> None:
        w = self.world
        self.batches = token_batches(
            self.split,
            self.max_tokens,
            seed=self.seed,
            epoch=self.epoch,
            rank=w.rank,
            world_size=w.world_size,
        )
        if not self.batches:
            raise UserError(
                f"the training split gives no batch for each of {w.world_size} process(es) "
                f"with max_tokens={self.max_tokens}"
            )

    @property
    def epochs_done(self) -> float:
        return self.epoch + self.index / len(self.batches)

    def next(self) -> Batch:
        if self.index >= len(self.batches):
            self.epoch, self.index = self.epoch + 1, 0
            self._load()
        indices = self.batches[self.index]
        self.index += 1
        return batch_from_indices(self.split, indices)


class Session:
    """A run directory being trained into: config, metrics, checkpoints, clocks, counters."""

    def __init__(
        self,
        run_dir: str | Path,
        world: World,
        model: Transformer,
        optimizer: torch.optim.Optimizer,
        cfg: TrainConfig,
        data: TrainData,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.run, self.world, self.model, self.optimizer = Path(run_dir), world, model, optimizer
        self.cfg, self.on_event = cfg, on_event
        self.metrics = MetricsLog(self.run, enabled=world.is_main)
        self.meta = {"tokenizer": data.tokenizer.to_str()} if data.tokenizer is not None else {}
        if len(data.train):  # the translator warns about inputs longer than any trained on
            longest = max(int(data.train.src_lengths.max()), int(data.train.tgt_lengths.max()))
            self.meta["max_train_length"] = str(longest + 1)
        self.source = data.source
        self.progress = ckpt.Progress()
        self.started = self.last_save = self.last_log = time.monotonic()
        self.window = [0.0, 0.0, 0.0]  # smoothed-loss sum, NLL sum, tokens since the last log
        self.saved: tuple[tuple[int, int, int], Path] | None = None  # (position, directory)
        self.lock: storage.DirectoryLock | None = None

    def emit(self, event: str, **fields: Any) -> None:
        record = self.metrics.write(event, **fields)
        if self.on_event is not None:
            self.on_event(record)

    def start(self, model_cfg: ModelConfig, resume: bool) -> ckpt.Progress:
        """Lock the run, remove what dead writers left, then write config.json, or load the
        latest complete checkpoint when resuming; never overwrite.

        A run that another training holds is a UserError naming its pid; ``close`` (or the
        end of the process, kill -9 included) releases the lock.
        """
        run, world, cfg = self.run, self.world, self.cfg
        if world.is_main:
            self.lock = storage.DirectoryLock(run, LOCK_FILE, what="training").acquire()
            ckpt.clean_run(run)
        barrier(world)
        latest = latest_checkpoint(run)
        if resume and latest is None:
            raise UserError(f"{run}: --resume given but the run has no complete checkpoint")
        if not resume and latest is not None:
            raise UserError(f"{run}: already holds checkpoints; pass --resume or a new --run")
        if resume:
            assert latest is not None
            self.progress = ckpt.load_checkpoint(
                latest, self.model, self.optimizer, world.rank, world.world_size
            )
            self.metrics.truncate_after(self.progress.step)
            log.info("resumed from %s at step %d", latest, self.progress.step)
        else:  # each rank its own dropout masks (the weights were drawn alike before this)
            torch.manual_seed(cfg.seed * 1000 + world.rank + 1)
        if world.is_main:
            config = {
                "model": to_dict(model_cfg),
                "train": to_dict(cfg),
                "data": self.source,
                "world_size": world.world_size,
            }
            storage.write_text(run / CONFIG_FILE, json.dumps(config, indent=1) + "\n")
        barrier(world)
        return self.progress

    def close(self) -> None:
        """Release the run's lock."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def save(self, stream: BatchStream, signals: Signals | None = None) -> Path:
        """A checkpoint of the model, optimizer, data position and every rank's RNG state.

        With ``signals``, a Ctrl-C while it is written waits for the write to finish.
        """
        with signals.deferred() if signals is not None else contextlib.nullcontext():
            return self._save(stream)

    def _save(self, stream: BatchStream) -> Path:
        self.last_save = time.monotonic()
        p = self.progress
        p.epoch, p.batch_index = stream.epoch, stream.index
        here = (p.step, p.epoch, p.batch_index)
        if self.saved is not None and self.saved[0] == here:  # nothing new since the last one
            return self.saved[1]
        rng = gather_objects(ckpt.rng_state(), self.world)
        path = None
        if self.world.is_main:
            path = ckpt.save_checkpoint(
                self.run, self.model, self.optimizer, p, rng, self.meta, self.cfg.keep_last
            )
            self.emit("checkpoint", step=p.step, path=str(path.relative_to(self.run)))
        barrier(self.world)
        path = path or latest_checkpoint(self.run)
        assert path is not None
        self.saved = (here, path)
        return path

    def stop_reason(self, stream: BatchStream, signalled: Signals) -> str:
        """Why to stop before the next step ("" to go on); saves first when one is due by time."""
        cfg, now, main = self.cfg, time.monotonic(), self.world.is_main
        # Time-based decisions are the main rank's, shared with all in one reduction.
        signal_, time_up, save_due = all_reduce_sum(
            [
                float(signalled.is_set()),
                float(main and 0 < cfg.max_minutes <= (now - self.started) / 60),
                float(main and 0 < cfg.save_every_minutes <= (now - self.last_save) / 60),
            ],
            self.world,
        )
        if cfg.max_steps and self.progress.step >= cfg.max_steps:
            return f"reached max_steps={cfg.max_steps}"
        if cfg.max_epochs and stream.epochs_done >= cfg.max_epochs:
            return f"reached max_epochs={cfg.max_epochs}"
        if time_up:
            return f"reached max_minutes={cfg.max_minutes}"
        if signal_:
            return "interrupted by a signal"
        if save_due:
            self.save(stream, signalled)
        return ""

    def skipped(self, loss: float, grad_norm: float, stream: BatchStream) -> None:
        """Log an update skipped for a non-finite value; stop after max_bad_steps in a row."""
        p, cfg = self.progress, self.cfg
        p.bad_steps += 1
        self.emit(
            "skip",
            step=p.step,
            loss=loss,
            grad_norm=grad_norm,
            epoch=stream.epoch,
            batch_index=stream.index,
        )
        log.warning("update %d skipped: non-finite loss or gradient", p.step + 1)
        if p.bad_steps >= cfg.max_bad_steps:
            latest = latest_checkpoint(self.run)
            where = f"the last good checkpoint is {latest}" if latest else "no checkpoint yet"
            reason = (
                f"{p.bad_steps} consecutive steps had a non-finite loss or gradient after step "
                f"{p.step} (max_bad_steps={cfg.max_bad_steps}); {where}"
            )
            self.emit("stop", step=p.step, reason=reason)
            raise TrainingDiverged(f"training stopped: {reason}; try a smaller --lr-scale")

    def log_step(
        self,
        smoothed: float,
        nll: float,
        n_tokens: float,
        lr: float,
        grad_norm: float,
        stream: BatchStream,
    ) -> None:
        """Accumulate the step's sums; every log_every steps write a "train" event."""
        p, w = self.progress, self.window
        p.tokens += int(n_tokens)
        self.window = w = [w[0] + smoothed, w[1] + nll, w[2] + n_tokens]
        if self.on_event is not None:
            self.on_event(
                {
                    "event": "tick",
                    "step": p.step,
                    "loss": smoothed / n_tokens,
                    "nll": nll / n_tokens,
                    "lr": lr,
                    "tokens": n_tokens,
                }
            )
        if p.step % self.cfg.log_every == 0:
            now = time.monotonic()
            self.emit(
                "train",
                step=p.step,
                epoch=round(stream.epochs_done, 4),
                loss=w[0] / w[2],
                nll=w[1] / w[2],
                ppl=perplexity(w[1] / w[2]),
                lr=lr,
                grad_norm=grad_norm,
                tokens_per_s=round(w[2] / max(now - self.last_log, 1e-9), 1),
                elapsed_s=round(p.elapsed_s, 3),
            )
            self.window, self.last_log = [0.0, 0.0, 0.0], now


def cpu_bf16_native() -> bool:
    """True when oneDNN runs bf16 matmuls natively on this CPU (AVX512-BF16 or AMX), where
    bf16 autocast is faster than float32 (benchmarks/bf16_cpu.py); elsewhere it is emulated."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def wrap(model: Transformer, world: World, runtime: Runtime) -> tuple[torch.nn.Module, Callable]:
    """DDP when there are several processes; torch.compile on CUDA; bf16 autocast."""
    net: torch.nn.Module = model
    cuda = world.device.type == "cuda"
    if runtime.bf16 and not cuda and not cpu_bf16_native():
        log.warning("--bf16: this CPU has no native bf16 (AVX512-BF16 or AMX): slower than fp32")
    if runtime.compile:
        if cuda:
            net = torch.compile(net)  # type: ignore[assignment]
        else:
            log.info("--compile is ignored on the CPU")
    if world.world_size > 1:
        ids = [world.device.index] if cuda else None
        net = torch.nn.parallel.DistributedDataParallel(net, device_ids=ids)

    def autocast() -> contextlib.AbstractContextManager:
        if runtime.bf16:  # EXTENSION: bf16 autocast (off by default); the loss runs in float32
            return torch.autocast(world.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    return net, autocast


def gradient_norm(model: Transformer, clip_norm: float) -> float:
    """The global L2 norm of the gradient (clipped to clip_norm when that is > 0)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return 0.0
    if clip_norm > 0:  # EXTENSION: gradient clipping (off by default; the paper has none)
        return float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm))
    return float(torch.nn.utils.get_total_norm(grads))


def seed_everything(seed: int) -> None:
    """Seed torch (CPU and CUDA), NumPy's global generator and Python's random."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 (its state is saved in checkpoints)
    random.seed(seed)


class Signals:
    """SIGINT/SIGTERM seen so far; while ``deferred``, a second Ctrl-C does not interrupt."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.saving = False

    def is_set(self) -> bool:
        return self.event.is_set()

    def set(self) -> None:
        self.event.set()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        saving, self.saving = self.saving, True
        try:
            yield
        finally:
            self.saving = saving


@contextlib.contextmanager
def stop_on_signals() -> Iterator[Signals]:
    """SIGINT/SIGTERM set a flag that the loop checks between steps (then it saves).

    A second Ctrl-C stops at once (KeyboardInterrupt), except while a checkpoint is being
    written: that write always completes first, so the last save is never lost.
    """
    signals = Signals()
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return

    def handler(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if signals.saving:
            log.warning("%s received: the checkpoint being written is finished first", name)
            signals.set()
            return
        if signals.is_set() and signum == signal.SIGINT:  # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        log.warning("%s received: finishing the step, then writing a checkpoint", name)
        signals.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield signals
    finally:
        for s, h in old.items():
            signal.signal(s, h)
