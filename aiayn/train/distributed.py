"""Data-parallel training through ``torchrun``: process group, device, reductions.

Each process (rank) reads its own shard of the token-budget batches (``batches[rank::world]``),
computes gradients on it, and PyTorch's DistributedDataParallel averages the gradients over
the ranks during the backward pass. The loop scales each rank's loss so that the average is
the gradient of the global per-token loss of the step (``loop.train_step``). Gloo on the CPU,
NCCL on CUDA.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from aiayn.errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class World:
    """Where this process stands: rank among world_size processes, and its device."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def pick_device(name: str, local_rank: int = 0) -> torch.device:
    """The torch device for ``--device`` (auto, cpu, cuda, cuda:N); a missing GPU is a UserError."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(
            f"--device: unknown device {name!r} (use auto, cpu, cuda or cuda:N)"
        ) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"--device {name}: no CUDA device is available on this machine")
        if device.index is None:
            device = torch.device("cuda", local_rank)
    return device


def setup(device_name: str = "auto") -> World:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK), if any.

    Without torchrun's variables (or with WORLD_SIZE 1) this is one process and no group.
    When a group was already initialised (by a test, say), it is used as it is.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(device_name, local_rank)
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size(), device)
    if world_size <= 1:
        return World(0, 1, device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend=backend)
    log.info("rank %d of %d on %s (%s)", dist.get_rank(), world_size, device, backend)
    return World(dist.get_rank(), dist.get_world_size(), device)


def current(device: torch.device) -> World:
    """The World of an initialised process group (or the single process)."""
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size(), device)
    return World(0, 1, device)


def all_reduce_sum(values: list[float], world: World) -> list[float]:
    """Elementwise sum of a short list of numbers over all ranks (float64)."""
    if world.world_size == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=_comm_device(world))  # (n,)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.tolist()


def gather_objects(obj: object, world: World) -> list[object]:
    """Every rank's ``obj``, in rank order (in memory only; nothing is written)."""
    if world.world_size == 1:
        return [obj]
    out: list[object] = [None] * world.world_size
    dist.all_gather_object(out, obj)
    return out


def barrier(world: World) -> None:
    if world.world_size > 1:
        dist.barrier()


def _comm_device(world: World) -> torch.device:
    # NCCL reduces CUDA tensors only; gloo reduces CPU tensors.
    return world.device if world.device.type == "cuda" else torch.device("cpu")
