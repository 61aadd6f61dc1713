"""How a run runs, not what it computes: device, kernels, bf16 autocast, torch.compile, DDP.

``Runtime`` holds the choices (none of them is stored in a checkpoint: a run may resume with
other values); ``wrap`` applies DDP, torch.compile and bf16 autocast where they apply;
``seed_everything`` seeds every generator a run draws from.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from aiayn.kernels import Kernels
from aiayn.model import Transformer
from aiayn.train.distributed import World

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Runtime:
    """How to run, not what to compute: device, kernels, bf16 autocast, torch.compile (CUDA only).

    None of it is stored in a checkpoint: a run may resume with other values.
    """

    device: str = "auto"
    kernels: Kernels = "fast"  # aiayn.kernels.FAST (proven equal to PLAIN); "plain": none
    bf16: bool = False  # EXTENSION: bf16 autocast, CUDA or CPU (off by default)
    compile: bool = False  # torch.compile the model (CUDA only; ignored on the CPU)


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


def seed_everything(seed: int) -> None:
    """Seed torch (CPU and CUDA), NumPy's global generator and Python's random."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 (its state is saved in checkpoints)
    random.seed(seed)
