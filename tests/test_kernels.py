"""The speed kernels as a set, applied from above: ``Transformer(cfg, ops=FAST)`` or PLAIN.

A model runs ``aiayn.model.PLAIN`` unless its builder passes ``aiayn.kernels.FAST``; with PLAIN
no line of ``aiayn/kernels/`` runs (no custom autograd Function either), with FAST every one of
the four kernel modules does, and the whole model equals the plain model in float64 and
float32: outputs, the loss, every gradient, cached decoding, and 20 steps of training from one
seed. Checkpoints written when the choice was a ModelConfig field still load. The per-kernel
tests are in test_kernel_attention.py, test_kernel_dropout.py, test_kernel_ffn.py and
test_kernel_output_loss.py.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
import torch
from torch.autograd.function import BackwardCFunction

import aiayn.kernels
from aiayn import ModelConfig, Transformer, trace
from aiayn.config import TrainConfig, to_dict
from aiayn.data.specials import BOS
from aiayn.decode import greedy_search, model_step_fn
from aiayn.kernels import FAST, kernel_ops
from aiayn.model import PLAIN
from aiayn.train.schedule import make_optimizer, noam_lr, set_lr
from aiayn.weights import CONFIG_KEY, DIGEST_KEY, load_model, weights_digest

KERNEL_FILES = {p.name for p in Path(aiayn.kernels.__file__).parent.glob("*.py")} - {"__init__.py"}

V = 17
TOL = {torch.float32: {"atol": 2e-5, "rtol": 2e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-9}}


def _cfg(**overrides) -> ModelConfig:
    base = {"vocab_size": V, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
    return ModelConfig(**{**base, "dropout": 0.0, **overrides})


def _pair(cfg: ModelConfig, dtype=torch.float32, seed: int = 0) -> tuple[Transformer, Transformer]:
    """A fast and a plain model with the same weights (LayerNorms and biases moved off init)."""
    torch.manual_seed(seed)
    fast = Transformer(cfg, FAST).to(dtype)
    with torch.no_grad():
        for p in fast.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    plain = Transformer(cfg).to(dtype)
    plain.load_state_dict(fast.state_dict())
    return fast, plain


def _batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """src (B, S), tgt_in (B, T), tgt_out (B, T), with padding on the right of some rows."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (3, 7), generator=g)  # (B, S)
    tgt = torch.randint(4, V, (3, 6), generator=g)  # (B, T)
    src[1, 4:] = 0
    src[2, 1:] = 0
    tgt[1, 3:] = 0
    tgt_in = torch.cat([torch.full((3, 1), BOS), tgt[:, :-1]], 1)  # (B, T)
    return src, tgt_in, tgt


def test_the_model_runs_plain_unless_its_builder_passes_the_kernels() -> None:
    assert Transformer(_cfg()).ops is PLAIN
    assert Transformer(_cfg(), FAST).ops is FAST
    assert kernel_ops("plain") is PLAIN
    assert kernel_ops("fast") is FAST
    with pytest.raises(ValueError, match="kernels"):
        kernel_ops("turbo")
    assert "kernels" not in to_dict(ModelConfig())  # how to run is not what to compute


@pytest.mark.parametrize("old", [{"kernels": "plain"}, {"fused_attention": True}])
def test_checkpoints_that_stored_the_kernels_in_their_config_still_load(tmp_path, old) -> None:
    """Before the kernels were a run-time choice, ModelConfig held ``kernels`` (and before
    that ``fused_attention``): such a file loads, with the kernels its loader asks for."""
    from safetensors.torch import save_file

    model = Transformer(_cfg())
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    meta = {CONFIG_KEY: json.dumps({**to_dict(model.config), **old})}
    meta[DIGEST_KEY] = weights_digest(tensors, meta)
    path = tmp_path / "old.safetensors"
    save_file(tensors, str(path), metadata=meta)
    loaded, _ = load_model(path, ops=FAST)
    assert loaded.config == model.config
    assert loaded.ops is FAST
    src, tgt_in, _ = _batch()
    torch.testing.assert_close(loaded(src, tgt_in), model.eval()(src, tgt_in), **TOL[torch.float32])


def _kernel_lines_run(fn) -> set[str]:
    """The files of aiayn/kernels/ in which a Python function ran during fn() (any thread)."""
    seen: set[str] = set()
    kernels_dir = str(Path(aiayn.kernels.__file__).parent)

    def profile(frame, event, arg):
        file = frame.f_code.co_filename
        if event == "call" and file.startswith(kernels_dir):
            seen.add(Path(file).name)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen


def _train_step_and_decode(model: Transformer) -> set[str]:
    """Custom autograd Functions in the graph of one training step, then greedy decoding."""
    src, tgt_in, tgt_out = _batch()
    model.train()
    smooth, _, _ = model(src, tgt_in, target=tgt_out, label_smoothing=0.1)
    custom, seen, stack = set(), set(), [smooth.grad_fn]
    while stack:  # walk the whole autograd graph
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if isinstance(node, BackwardCFunction):
            custom.add(type(node).__name__)
        stack.extend(f for f, _ in node.next_functions)
    assert len(seen) > 50
    smooth.backward()
    model.eval()
    greedy_search(model_step_fn(model, src), [5, 5, 5])  # cached decoding too
    return custom


def test_plain_runs_no_line_of_the_kernels_and_fast_runs_all_four() -> None:
    """With PLAIN no function of aiayn/kernels/ is entered and no custom autograd Function is
    in the graph; the same watch sees every kernel module run under FAST (so it can fail)."""
    cfg = _cfg(dropout=0.1, ffn_dropout=0.1)
    custom: set[str] = set()
    ran = _kernel_lines_run(lambda: custom.update(_train_step_and_decode(Transformer(cfg))))
    assert ran == set()
    assert custom == set()
    fast = Transformer(_cfg(dropout=0.1), FAST)
    ran = _kernel_lines_run(lambda: custom.update(_train_step_and_decode(fast)))
    assert ran == KERNEL_FILES == {"attention.py", "dropout.py", "ffn.py", "output_loss.py"}
    assert {"_TiedOutputLossBackward", "FeedForwardFnBackward", "MaskScaleBackward"} <= custom


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize(
    "overrides",
    [{}, {"norm_first": True}, {"attn_bias": True}, {"activation": "silu"}, {"logits_bias": True}],
    ids=["post-LN", "pre-LN", "bias", "silu", "logits-bias"],
)
def test_fast_model_equals_plain_model_outputs_loss_and_gradients(dtype, overrides) -> None:
    fast, plain = _pair(_cfg(**overrides), dtype)
    src, tgt_in, tgt_out = _batch()
    torch.testing.assert_close(fast(src, tgt_in), plain(src, tgt_in), **TOL[dtype])
    losses = [m(src, tgt_in, target=tgt_out, label_smoothing=0.1) for m in (fast, plain)]
    torch.testing.assert_close(losses[0][0], losses[1][0], **TOL[dtype])
    torch.testing.assert_close(losses[0][1], losses[1][1].detach(), **TOL[dtype])
    assert losses[0][2] == losses[1][2] == int((tgt_out != 0).sum())
    for loss in losses:
        loss[0].backward()
    for (name, a), b in zip(fast.named_parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, **TOL[dtype], msg=name)
    # The trace (every intermediate) is the same explicit path for both.
    torch.testing.assert_close(trace(fast, src, tgt_in).L, trace(plain, src, tgt_in).L)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_cached_decoding_is_the_same_on_both_paths(dtype) -> None:
    fast, plain = (m.eval() for m in _pair(_cfg(), dtype))
    src, _, _ = _batch()
    steps = []
    for m in (fast, plain):
        state = m.start(src)
        tokens = torch.full((3, 1), BOS)
        logits = []
        for _ in range(5):
            out = m.step(tokens[:, -1:], state)  # (B, 1, V)
            logits.append(out)
            tokens = torch.cat([tokens, out[:, -1].argmax(-1, keepdim=True)], 1)
        steps.append((torch.cat(logits, 1), tokens))
    torch.testing.assert_close(steps[0][0], steps[1][0], **TOL[dtype])
    assert torch.equal(steps[0][1], steps[1][1])


def test_twenty_training_steps_from_one_seed_give_the_same_losses() -> None:
    """Adam with Eq. (3), float32, no dropout (the two paths draw their masks differently).

    Stated tolerance: 1e-5 relative on every step's loss (measured: at most 7e-7). The float32
    sums of the two paths differ in their last bits from the first step; Adam carries that on.
    """
    losses = {}
    for kernels in ("fast", "plain"):
        torch.manual_seed(0)
        model = Transformer(_cfg(), kernel_ops(kernels)).train()
        train_cfg = TrainConfig(warmup=10)
        opt = make_optimizer(model.parameters(), train_cfg)
        out = []
        for step in range(1, 21):
            src, tgt_in, tgt_out = _batch(seed=step % 4)
            set_lr(opt, noam_lr(step, 16, train_cfg.warmup))
            smooth, _, n = model(src, tgt_in, target=tgt_out, label_smoothing=0.1)
            opt.zero_grad()
            (smooth / n).backward()
            opt.step()
            out.append(float(smooth.detach()) / n)
        losses[kernels] = out
    assert losses["fast"][-1] < losses["fast"][0] - 0.5  # it learns
    torch.testing.assert_close(
        torch.tensor(losses["fast"]), torch.tensor(losses["plain"]), rtol=1e-5, atol=0
    )


def test_the_models_ops_are_held_in_one_place() -> None:
    """Setting ``model.ops`` reaches every layer, FFN and attention: none keeps another set."""
    from aiayn.attention import MultiHeadAttention

    model = Transformer(_cfg())
    for ops in (FAST, PLAIN):
        model.ops = ops
        holders = [m for m in model.modules() if m is not model and hasattr(m, "ops")]
        assert len(holders) == 2 + 2 + 2 + 2  # 2 encoder and 2 decoder layers, each with an FFN
        assert all(m.ops is ops for m in holders)
        attends = [m.attend for m in model.modules() if isinstance(m, MultiHeadAttention)]
        assert len(attends) == 2 + 2 * 2
        assert all(a is ops.attention for a in attends)
        assert model.ops is ops
