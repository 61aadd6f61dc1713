"""The switch between the paper in plain PyTorch and the speed kernels: ``ModelConfig.kernels``.

With "plain" nothing but standard PyTorch ops runs (no custom autograd Function, no function of
``aiayn.kernels``); with "fast" (the default) the FFN kernel equals the plain FFN, and the whole
model equals the plain model in float64 and float32: outputs, the loss, every gradient, cached
decoding, and 20 steps of training from one seed. The per-kernel tests are in
test_kernel_attention.py, test_kernel_dropout.py and test_kernel_output_loss.py.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from torch.autograd.function import BackwardCFunction

import aiayn.kernels
from aiayn import ModelConfig, Transformer, trace
from aiayn.config import TrainConfig
from aiayn.data.specials import BOS
from aiayn.decode import greedy_search, model_step_fn
from aiayn.kernels.ffn import feed_forward as fast_feed_forward
from aiayn.model import PLAIN, FeedForward, feed_forward, kernel_ops
from aiayn.train.schedule import make_optimizer, noam_lr, set_lr

V = 17
TOL = {torch.float32: {"atol": 2e-5, "rtol": 2e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-9}}


def _cfg(**overrides) -> ModelConfig:
    base = {"vocab_size": V, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
    return ModelConfig(**{**base, "dropout": 0.0, **overrides})


def _pair(cfg: ModelConfig, dtype=torch.float32, seed: int = 0) -> tuple[Transformer, Transformer]:
    """A fast and a plain model with the same weights (LayerNorms and biases moved off init)."""
    torch.manual_seed(seed)
    fast = Transformer(dataclasses.replace(cfg, kernels="fast")).to(dtype)
    with torch.no_grad():
        for p in fast.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    plain = Transformer(dataclasses.replace(cfg, kernels="plain")).to(dtype)
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


def test_kernel_ops_are_the_seam_and_the_default_is_fast() -> None:
    assert ModelConfig().kernels == "fast"
    assert kernel_ops("plain") is PLAIN
    assert kernel_ops("fast") is aiayn.kernels.FAST
    with pytest.raises(ValueError, match="kernels"):
        ModelConfig(kernels="turbo")  # type: ignore[arg-type]


def test_checkpoints_from_before_the_switch_still_load() -> None:
    from aiayn.config import from_dict, to_dict

    old = {k: v for k, v in to_dict(_cfg()).items() if k != "kernels"}
    assert from_dict(ModelConfig, {**old, "fused_attention": False}).kernels == "plain"
    assert from_dict(ModelConfig, {**old, "fused_attention": True}).kernels == "fast"


def test_plain_runs_only_standard_pytorch_ops(monkeypatch) -> None:
    """No kernel function is called and no custom autograd Function is in the graph."""
    called: list[str] = []
    for module in (aiayn.kernels.attention, aiayn.kernels.ffn, aiayn.kernels.dropout):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__:
                monkeypatch.setattr(module, name, lambda *a, _n=name, **k: called.append(_n))
    monkeypatch.setattr(aiayn.kernels.output_loss, "tied_output_loss", lambda *a: called.append(1))
    plain = Transformer(_cfg(kernels="plain", dropout=0.1, ffn_dropout=0.1)).train()
    src, tgt_in, tgt_out = _batch()
    smooth, _, _ = plain(src, tgt_in, target=tgt_out, label_smoothing=0.1)
    custom, seen, stack = [], set(), [smooth.grad_fn]
    while stack:  # walk the whole autograd graph
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if isinstance(node, BackwardCFunction):
            custom.append(type(node).__name__)
        stack.extend(f for f, _ in node.next_functions)
    smooth.backward()
    plain.eval()
    greedy_search(model_step_fn(plain, src), [5, 5, 5])  # cached decoding too
    assert len(seen) > 50
    assert custom == []
    assert called == []
    # The same walk finds the kernels in the fast model's graph.
    called.clear()
    monkeypatch.undo()
    fast = Transformer(_cfg(kernels="fast", dropout=0.1)).train()
    stack, seen = [fast(src, tgt_in, target=tgt_out)[0].grad_fn], set()
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            stack.extend(f for f, _ in node.next_functions)
    names = {type(node).__name__ for node in seen}
    assert {"_TiedOutputLossBackward", "FeedForwardFnBackward", "MaskScaleBackward"} <= names


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_ffn_kernel_equals_the_plain_ffn_forward_and_backward(dtype) -> None:
    torch.manual_seed(3)
    ffn = FeedForward(16, 64).to(dtype)
    with torch.no_grad():
        ffn.b_1.normal_()
        ffn.b_2.normal_()
    weights = (ffn.w_1, ffn.b_1, ffn.w_2, ffn.b_2)
    x = torch.randn(5, 7, 16, dtype=dtype, requires_grad=True)  # (B, L, D)
    g = torch.randn(5, 7, 16, dtype=dtype)
    record: dict = {}
    ours = feed_forward(x, *weights, record)  # (B, L, D)
    fast = fast_feed_forward(x, *weights)  # (B, L, D)
    assert 0.2 < float((record["hidden"] == 0).float().mean()) < 0.8  # the ReLU gate matters
    torch.testing.assert_close(fast, ours, **TOL[dtype])
    wrt = [x, *weights]
    for a, b in zip(
        torch.autograd.grad(fast, wrt, g), torch.autograd.grad(ours, wrt, g), strict=True
    ):
        torch.testing.assert_close(a, b, **TOL[dtype])
    assert type(fast.grad_fn.next_functions[0][0]).__name__ == "FeedForwardFnBackward"


def test_ffn_kernel_gradcheck_and_its_plain_fallbacks() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    w = [
        torch.randn(s, dtype=torch.float64, requires_grad=True)
        for s in ((4, 6), (6,), (6, 4), (4,))
    ]
    assert torch.autograd.gradcheck(fast_feed_forward, (x, *w))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast: the plain FFN, in bf16
        assert fast_feed_forward(x.float(), *(t.float() for t in w)).dtype == torch.bfloat16
    ffn = FeedForward(4, 6, dropout=0.5, ops=aiayn.kernels.FAST).train()  # relu dropout: plain
    y = ffn(torch.randn(2, 3, 4, requires_grad=True))
    assert "FeedForwardFn" not in type(y.grad_fn).__name__


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize(
    "overrides", [{}, {"norm_first": True}, {"attn_bias": True}], ids=["post-LN", "pre-LN", "bias"]
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
        model = Transformer(_cfg(kernels=kernels)).train()
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
