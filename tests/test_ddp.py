"""Data-parallel training: 2 CPU processes (torchrun, gloo) == 1 process with update_freq 2.

Rank r reads batches[r::2] of each epoch, so step k of the two ranks together sees batches 2k
and 2k + 1: exactly what one process with update_freq 2 sees. The loss is normalised by the
target tokens of the whole step on both ranks, so the gradients agree up to the order of the
float32 additions (DDP sums over ranks, one process over batches). Tolerance: 1e-5 on every
weight after 4 Adam steps (with two gloo ranks the weights came out bit-identical here; the
margin is for other reduction orders, e.g. NCCL's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aiayn.config import ModelConfig, TrainConfig
from aiayn.data import InMemorySplit, synthetic_pairs, token_batches
from aiayn.train import Runtime, TrainData, latest_checkpoint, read_metrics, train

REPO = Path(__file__).resolve().parents[1]
TORCHRUN = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which(
    "torchrun"
)
MODEL = ModelConfig(vocab_size=12, d_model=32, n_heads=4, d_ff=64, n_layers=1, dropout=0.0)
MAX_TOKENS = 100


def data() -> TrainData:
    return TrainData(InMemorySplit(synthetic_pairs("copy", 120, 12, 1, 8, seed=0)))


def run_training(run_dir: str, update_freq: int) -> None:
    """One process's part (called in this process, and by each torchrun worker)."""
    cfg = TrainConfig(
        max_steps=4,
        warmup=2,
        max_tokens=MAX_TOKENS,
        update_freq=update_freq,
        log_every=1,
        valid_every=0,
        save_every_minutes=0.0,
    )
    torch.set_num_threads(1)
    train(MODEL, cfg, data(), run_dir, runtime=Runtime(device="cpu"))


WORKER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("ddp_case", {path!r})
case = importlib.util.module_from_spec(spec)
spec.loader.exec_module(case)
case.run_training(sys.argv[1], update_freq=1)
"""


def weights(run: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(latest_checkpoint(run) / "model.safetensors"))


@pytest.mark.slow  # torchrun starts two processes, then one
@pytest.mark.skipif(TORCHRUN is None, reason="torchrun is not installed")
def test_two_processes_equal_one_with_accumulation(tmp_path: Path) -> None:
    n_batches = len(token_batches(data().train, MAX_TOKENS, seed=1, epoch=0))
    assert n_batches % 2 == 0  # every batch of the epoch goes to one rank or the other
    assert n_batches >= 2 * 4  # 4 steps of 2 batches stay within the first epoch
    threads = torch.get_num_threads()
    try:
        run_training(str(tmp_path / "one"), update_freq=2)
    finally:
        torch.set_num_threads(threads)

    worker = tmp_path / "worker.py"
    worker.write_text(WORKER.format(path=str(Path(__file__).resolve())))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [TORCHRUN, "--standalone", "--nproc_per_node", "2", str(worker), str(tmp_path / "two")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "two" / "config.json").read_text())["world_size"] == 2

    one, two = weights(tmp_path / "one"), weights(tmp_path / "two")
    torch.manual_seed(TrainConfig().seed)  # the initial weights, drawn as train() draws them
    from aiayn.model import Transformer

    start = Transformer(MODEL).state_dict()
    assert max((one[k] - start[k]).abs().max().item() for k in one) > 1e-3  # training moved
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=0, atol=1e-5, msg=k)
    # Adam hardly sees a global scale of the gradient, so compare the logged per-token loss and
    # gradient norm too: a wrong normalisation over ranks would change them.
    logged = []
    for run in ("one", "two"):
        events = [e for e in read_metrics(tmp_path / run) if e["event"] == "train"]
        logged.append([(e["step"], e["loss"], e["nll"], e["grad_norm"]) for e in events])
    assert len(logged[0]) == 4
    for a, b in zip(*logged, strict=True):
        assert a == pytest.approx(b, rel=1e-5)
