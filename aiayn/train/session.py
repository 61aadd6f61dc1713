"""A run directory being trained into: its config, metrics, checkpoints, clocks and counters.

``Session`` starts or resumes a run (it holds the run's lock), writes its checkpoints and
metrics, and decides before each step whether to stop (max_steps, max_epochs, max_minutes, a
signal) or to save; ``TrainingDiverged`` is its refusal to go on after max_bad_steps
non-finite updates in a row. The run directory's layout is ``aiayn.run_dir``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from aiayn import storage
from aiayn.config import ModelConfig, TrainConfig, to_dict
from aiayn.errors import UserError
from aiayn.loss import perplexity
from aiayn.model import Transformer
from aiayn.run_dir import CONFIG_FILE, LOCK_FILE, latest_checkpoint
from aiayn.train import checkpoints as ckpt
from aiayn.train.batches import BatchStream, TrainData
from aiayn.train.distributed import World, all_reduce_sum, barrier, gather_objects
from aiayn.train.metrics import MetricsLog
from aiayn.train.signals import Signals

log = logging.getLogger(__name__)


class TrainingDiverged(UserError):
    """max_bad_steps consecutive updates had a non-finite loss or gradient."""


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
