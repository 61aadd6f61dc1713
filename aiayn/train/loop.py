"""The training loop.  Sections 5.1-5.4.

One step = ``update_freq`` token-budget batches on each of W processes. The label-smoothed loss
of every batch is summed and divided by the target tokens of the whole step on all processes,
so the step follows the gradient of the per-token loss over all W * update_freq batches (5.1:
"approximately 25000 source tokens and 25000 target tokens" a step), whatever W and
update_freq are. Then Adam at the rate of Eq. (3) (5.3). ``train`` reads top to bottom; around
it, ``runtime`` is how it runs (device, kernels, bf16, compile, DDP), ``batches`` what it reads,
``session`` the run directory it writes (checkpoints, metrics, when to stop), ``signals`` Ctrl-C,
and ``configure`` what is checked before it starts (the run, its config.json, the tokenizer,
the trainer state).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn.config import ModelConfig, TrainConfig
from aiayn.data import Batch, Split, batch_from_indices, token_batches
from aiayn.kernels import kernel_ops
from aiayn.loss import label_smoothed_loss, perplexity, token_accuracy
from aiayn.model import Transformer
from aiayn.train.batches import BatchStream, TrainData
from aiayn.train.bleu import BleuScorer, valid_bleu
from aiayn.train.checkpoints import Progress
from aiayn.train.configure import check_run
from aiayn.train.distributed import World, all_reduce_sum, setup
from aiayn.train.runtime import Runtime, seed_everything, wrap
from aiayn.train.schedule import learning_rate, make_optimizer, set_lr
from aiayn.train.session import Session
from aiayn.train.signals import stop_on_signals

Autocast = Callable[[], contextlib.AbstractContextManager]
VALID_CHUNK = 4096  # target tokens whose (C, V) logits validation holds at once


@dataclass
class TrainResult:
    progress: Progress
    stop_reason: str
    checkpoint: Path
    valid: dict[str, float] | None


def train(
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    data: TrainData,
    run_dir: str | Path,
    *,
    resume: bool = False,
    runtime: Runtime | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    bleu: BleuScorer | None = None,
) -> TrainResult:
    """Train a Transformer (or resume RUN's latest checkpoint) until a stopping criterion.

    Stops at max_steps, max_epochs, max_minutes or SIGINT/SIGTERM, then validates and writes a
    checkpoint; raises TrainingDiverged after max_bad_steps non-finite steps in a row. With
    ``cfg.valid_bleu``, ``bleu`` scores the validation translations at each validation
    (``aiayn.evaluate.greedy_bleu``; see ``aiayn.train.bleu``). Before anything is built,
    ``configure.check_run`` refuses what ``aiayn train`` refuses: resuming, the run's config.json
    must have model_cfg's architecture, and the data's tokenizer must be the checkpoints'; cfg
    replaces the stored TrainConfig (``configure.resolve_configs`` merges settings as the CLI does).
    """
    if cfg.valid_bleu and bleu is None:
        raise ValueError(
            "TrainConfig.valid_bleu is set but train() got no BLEU scorer: pass "
            "bleu=aiayn.evaluate.greedy_bleu (or your own)"
        )
    runtime = runtime or Runtime()
    world = setup(runtime.device)
    check_run(run_dir, model_cfg, data.tokenizer, resume)  # the run, its config, the tokenizer
    seed_everything(cfg.seed)  # the same initial weights on every rank
    model = Transformer(model_cfg, kernel_ops(runtime.kernels)).to(world.device)
    optimizer = make_optimizer(model.parameters(), cfg)  # 5.3: Adam(0.9, 0.98, 1e-9)
    session = Session(run_dir, world, model, optimizer, cfg, data, on_event)
    try:
        return _train(session, model, optimizer, model_cfg, cfg, data, world, runtime, resume, bleu)
    finally:
        session.close()  # the run's lock


def _train(
    session: Session,
    model: Transformer,
    optimizer: torch.optim.Optimizer,
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    data: TrainData,
    world: World,
    runtime: Runtime,
    resume: bool,
    bleu: BleuScorer | None,
) -> TrainResult:
    progress = session.start(model_cfg, resume)  # lock, config.json or the checkpoint's state
    if session.on_event is not None:  # every check passed: what will train, before step 1
        session.on_event(
            {"event": "start", "step": progress.step, "parameters": model.num_parameters()}
        )
    stream = BatchStream(
        data.train, cfg.max_tokens, cfg.seed, world, progress.epoch, progress.batch_index
    )
    net, autocast = wrap(model, world, runtime)  # DDP, torch.compile, bf16 where they apply
    valid, valid_step = None, -1
    with stop_on_signals() as signalled:
        while not (reason := session.stop_reason(stream, signalled)):
            t0 = time.monotonic()
            batches = [stream.next().to(world.device) for _ in range(cfg.update_freq)]
            # The main rank's clock in the same reduction: a budget in minutes (lr_decay
            # linear) then gives every process the same rate.
            n_tokens, clock_s = all_reduce_sum(
                [sum(b.n_tgt_tokens for b in batches), progress.elapsed_s * world.is_main], world
            )
            lr = learning_rate(progress.step + 1, model_cfg.d_model, cfg, clock_s / 60)
            set_lr(optimizer, lr)
            smoothed, nll = train_step(net, batches, cfg.label_smoothing, n_tokens, world, autocast)
            smoothed, nll = all_reduce_sum([smoothed, nll], world)
            grad_norm = gradient_norm(model, cfg.clip_norm)
            finite = math.isfinite(smoothed) and math.isfinite(grad_norm)
            if finite:
                optimizer.step()
                progress.step, progress.bad_steps = progress.step + 1, 0
            optimizer.zero_grad(set_to_none=True)
            progress.elapsed_s += time.monotonic() - t0
            if not finite:  # the update is skipped; several in a row stop the run
                session.skipped(smoothed / n_tokens, grad_norm, stream)
                continue
            session.log_step(smoothed, nll, n_tokens, lr, grad_norm, stream)
            if data.valid is not None and cfg.valid_every and progress.step % cfg.valid_every == 0:
                valid, valid_step = (
                    validate(model, data, model_cfg, cfg, world, autocast, bleu),
                    progress.step,
                )
                session.emit("valid", step=progress.step, **valid)
            if cfg.save_every_steps and progress.step % cfg.save_every_steps == 0:
                session.save(stream, signalled)
        if data.valid is not None and cfg.valid_every and valid_step != progress.step:
            try:
                valid = validate(model, data, model_cfg, cfg, world, autocast, bleu)
                session.emit("valid", step=progress.step, **valid)
            except KeyboardInterrupt:  # a second Ctrl-C skips the validation, not the save
                model.train()
        path = session.save(stream, signalled)  # a Ctrl-C now waits for it
    session.emit("stop", step=progress.step, reason=reason)
    return TrainResult(progress, reason, path, valid)


def batch_loss(net: torch.nn.Module, batch: Batch, eps: float) -> tuple[Tensor, Tensor]:
    """(sum of L_smoothed, sum of NLL) over a batch's non-pad target tokens.  Section 5.4.

    The model computes the tied output layer and ``label_smoothed_loss``'s convention together
    (``ops.output_loss``): with the fast kernels chunk by chunk (``aiayn.kernels.output_loss``),
    so the (B, T, V) logits never exist at once; a test proves it equal to
    ``label_smoothed_loss`` on the logits.
    """
    smoothed, nll, _ = net(batch.src, batch.tgt_in, target=batch.tgt_out, label_smoothing=eps)
    return smoothed, nll


def gradient_norm(model: Transformer, clip_norm: float) -> float:
    """The global L2 norm of the gradient (clipped to clip_norm when that is > 0)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return 0.0
    if clip_norm > 0:  # EXTENSION: gradient clipping (off by default; the paper has none)
        return float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm))
    return float(torch.nn.utils.get_total_norm(grads))


def train_step(
    net: torch.nn.Module,
    batches: list[Batch],
    eps: float,
    n_tokens: float,
    world: World,
    autocast: Autocast = contextlib.nullcontext,
) -> tuple[float, float]:
    """grad of sum_batches L_smoothed / n_tokens, accumulated in .grad.  Sections 5.1, 5.4.

    n_tokens is the target token count of the whole step on all processes. Each process's loss
    is multiplied by world_size because DDP averages gradients over processes; DDP's gradient
    exchange runs only on the last batch. Returns this process's (smoothed sum, NLL sum).
    """
    total_smoothed = total_nll = 0.0
    for i, batch in enumerate(batches):
        no_sync = getattr(net, "no_sync", None)
        last = i == len(batches) - 1
        with contextlib.nullcontext() if last or no_sync is None else no_sync():
            with autocast():
                smoothed, nll = batch_loss(net, batch, eps)
            (smoothed * (world.world_size / n_tokens)).backward()
        total_smoothed += smoothed.item()
        total_nll += nll.item()
    return total_smoothed, total_nll


@torch.no_grad()
def validate(
    model: Transformer,
    data: TrainData,
    model_cfg: ModelConfig,
    cfg: TrainConfig,
    world: World,
    autocast: Autocast = contextlib.nullcontext,
    bleu: BleuScorer | None = None,
) -> dict[str, float]:
    """Per target token on the valid split: smoothed loss, NLL, perplexity, token accuracy.

    Teacher forcing, dropout off; batches split over the processes, sums reduced. With
    ``cfg.valid_bleu`` and a ``bleu`` scorer, also the BLEU of greedy translations.
    """
    assert data.valid is not None
    model.eval()
    sums = [0.0, 0.0, 0.0, 0.0]  # smoothed, nll, tokens, correct
    eps, pad = cfg.label_smoothing, model_cfg.pad_id
    split: Split = data.valid
    mine = token_batches(split, cfg.max_tokens, shuffle=False)[world.rank :: world.world_size]
    for indices in mine:
        batch = batch_from_indices(split, indices).to(world.device)
        keep = batch.tgt_out != model_cfg.pad_id  # (B, T)
        target = batch.tgt_out[keep]  # (N,)
        with autocast():
            memory, src_keep = model.encode(batch.src)  # (B, S, D)
            z = model.decode(batch.tgt_in, memory, src_keep)[keep]  # (N, D): non-pad only
            for c in range(0, target.numel(), VALID_CHUNK):  # (C, V) logits at a time
                logits = model.logits(z[c : c + VALID_CHUNK])  # (C, V)
                y = target[c : c + VALID_CHUNK]  # (C,)
                smoothed, nll, n = label_smoothed_loss(logits, y, eps, pad)
                correct, _ = token_accuracy(logits, y, pad)
                for i, value in enumerate((smoothed.item(), nll.item(), n, correct)):
                    sums[i] += value
    smoothed_sum, nll_sum, tokens, correct_sum = all_reduce_sum(sums, world)
    n = max(tokens, 1.0)
    out: dict[str, float] = {
        "loss": smoothed_sum / n,
        "nll": nll_sum / n,
        "ppl": perplexity(nll_sum / n),
        "accuracy": correct_sum / n,
    }
    if cfg.valid_bleu and bleu is not None:
        score = valid_bleu(model, data, world, bleu)
        if score is not None:
            out["bleu"] = score
    model.train()
    return out
