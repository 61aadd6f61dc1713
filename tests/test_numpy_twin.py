"""The NumPy twin against PyTorch: forward to 1e-10, gradients to 1e-8, block by block.

Differential tests with weights copied from a float64 ``aiayn.Transformer`` (dropout off),
a finite-difference check of the twin alone, and a property test of the softmax backward.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aiayn import ModelConfig, Transformer
from aiayn import numpy_twin as ref
from aiayn.attention import scaled_dot_product_attention
from aiayn.walkthrough.example import float64

FWD, GRAD = 1e-10, 1e-8


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= tol, np.abs(a - b).max()


@pytest.fixture
def model() -> Transformer:
    torch.manual_seed(1)
    cfg = ModelConfig(vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_layers=2, dropout=0.0)
    m = float64(Transformer(cfg)).eval()
    with torch.no_grad():  # non-trivial LayerNorm and FFN biases, so their gradients are tested
        for name, p in m.named_parameters():
            if name.endswith(("bias", "b_1", "b_2")):
                p.normal_(0.0, 0.1)
            elif name.endswith("weight"):
                p.normal_(1.0, 0.1)
    return m


# Two pairs of different lengths: the second is padded (pad id 0) in source and target.
SRC = np.array([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
TGT_IN = np.array([[1, 9, 10, 4], [1, 5, 0, 0]])
TGT_OUT = np.array([[9, 10, 4, 2], [5, 2, 0, 0]])


def torch_smoothed_loss(logits: torch.Tensor, target: torch.Tensor, eps: float, pad: int):
    """The twin's convention in torch: 1-eps on y, eps/(V-1) elsewhere, mean over non-pad."""
    V = logits.size(-1)
    logp = logits.log_softmax(dim=-1)  # (B, T, V)
    q = torch.full_like(logp, eps / (V - 1)).scatter(-1, target[..., None], 1.0 - eps)
    keep = target != pad  # (B, T)
    return (-(q * logp).sum(-1) * keep).sum() / keep.sum()


def test_whole_model_forward_and_gradients(model: Transformer) -> None:
    src, tgt_in, tgt_out = (torch.from_numpy(a) for a in (SRC, TGT_IN, TGT_OUT))
    logits = model(src, tgt_in)  # (B, T, V)
    loss = torch_smoothed_loss(logits, tgt_out, 0.1, 0)
    loss.backward()
    p = ref.params_from_torch(model)
    twin_logits, _ = ref.forward(p, model.config, SRC, TGT_IN)
    _close(twin_logits, _np(logits), FWD)
    twin_loss, grads = ref.loss_and_grads(p, model.config, SRC, TGT_IN, TGT_OUT, 0.1)
    assert abs(twin_loss - loss.item()) <= FWD
    assert set(grads) == {n for n, _ in model.named_parameters()}
    for name, param in model.named_parameters():
        assert np.abs(grads[name]).max() > 0, name
        _close(grads[name], _np(param.grad), GRAD)


def test_embedding_block(model: Transformer) -> None:
    ids = torch.from_numpy(SRC)
    x = model.embed(ids)  # (B, S, D)
    g = torch.randn_like(x)
    (x * g).sum().backward()
    twin, cache = ref.embed_forward(SRC, ref.params_from_torch(model)["embedding"])
    _close(twin, _np(x), FWD)
    _close(ref.embed_backward(_np(g), cache), _np(model.embedding.grad), GRAD)


def test_attention_block_with_padding_causal_and_empty_rows() -> None:
    B, H, L, K = 2, 2, 4, 3
    q, k, v = (torch.randn(B, H, L, K, dtype=torch.float64, requires_grad=True) for _ in range(3))
    keep = torch.ones(B, 1, L, L, dtype=torch.bool).tril()  # (B, 1, L, L): causal
    keep[1, :, :, 0] = False  # padding in front: row 0 of pair 1 has no legal key at all
    out, weights = scaled_dot_product_attention(q, k, v, keep)
    g = torch.randn_like(out)
    (out * g).sum().backward()
    twin, cache = ref.attention_forward(_np(q), _np(k), _np(v), keep.numpy())
    _close(twin, _np(out), FWD)
    _close(cache["weights"], _np(weights), FWD)
    assert np.all(cache["weights"][1, :, 0] == 0.0)
    for mine, theirs in zip(ref.attention_backward(_np(g), cache), (q, k, v), strict=True):
        _close(mine, _np(theirs.grad), GRAD)


@pytest.mark.parametrize("kind", ["encoder-self", "decoder-self", "cross"])
def test_multi_head_block(model: Transformer, kind: str) -> None:
    D = model.config.d_model
    x = torch.randn(2, 4, D, dtype=torch.float64, requires_grad=True)  # (B, L, D)
    mem = torch.randn(2, 5, D, dtype=torch.float64, requires_grad=True)  # (B, S, D)
    src_keep = torch.from_numpy(SRC != 0)[:, None, None, :]  # (B, 1, 1, S)
    if kind == "encoder-self":
        mha, keep = model.encoder[0].self_attn, src_keep[..., :4]
        y = mha(x, keep=keep)
    elif kind == "decoder-self":
        mha, keep = model.decoder[1].self_attn, torch.ones(4, 4, dtype=torch.bool).tril()
        y = mha(x, causal=True)
    else:
        mha, keep = model.decoder[0].cross_attn, src_keep
        y = mha(x, mem, keep)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    memory = _np(mem) if kind == "cross" else None
    twin, cache = ref.mha_forward(
        _np(x), memory, _np(mha.w_qkv), _np(mha.w_o), mha.n_heads, mha.d_k, keep.numpy()
    )
    _close(twin, _np(y), FWD)
    dx, dm, dw_qkv, dw_o = ref.mha_backward(_np(g), cache)
    _close(dx, _np(x.grad), GRAD)
    _close(dw_qkv, _np(mha.w_qkv.grad), GRAD)
    _close(dw_o, _np(mha.w_o.grad), GRAD)
    if kind == "cross":
        _close(dm, _np(mem.grad), GRAD)
    else:
        assert dm is None


def test_encoder_and_decoder_layers_with_residuals(model: Transformer) -> None:
    D = model.config.d_model
    p = ref.params_from_torch(model)
    x = torch.randn(2, 5, D, dtype=torch.float64, requires_grad=True)  # (B, S, D)
    y = torch.randn(2, 4, D, dtype=torch.float64, requires_grad=True)  # (B, T, D)
    keep = torch.from_numpy(SRC != 0)[:, None, None, :]  # (B, 1, 1, S)
    z_enc = model.encoder[1](x, keep)
    z_dec = model.decoder[1](y, z_enc, keep)
    g = torch.randn_like(z_dec)
    (z_dec * g).sum().backward()
    enc, c_enc = ref.model.encoder_layer_forward(p, 1, model.config, _np(x), keep.numpy())
    dec, c_dec = ref.model.decoder_layer_forward(p, 1, model.config, _np(y), enc, keep.numpy())
    _close(enc, _np(z_enc), FWD)
    _close(dec, _np(z_dec), FWD)
    grads: dict[str, np.ndarray] = {}
    dy, dmem = ref.model.decoder_layer_backward(_np(g), c_dec, grads)
    dx = ref.model.encoder_layer_backward(dmem, c_enc, grads)
    _close(dy, _np(y.grad), GRAD)
    _close(dx, _np(x.grad), GRAD)
    params = dict(model.named_parameters())
    assert len(grads) == 24  # 10 tensors in the encoder layer, 14 in the decoder layer
    for name, g_twin in grads.items():
        _close(g_twin, _np(params[name].grad), GRAD)


def test_layer_norm_and_ffn_blocks(model: Transformer) -> None:
    layer = model.decoder[0]
    x = torch.randn(2, 3, model.config.d_model, dtype=torch.float64, requires_grad=True)
    y = layer.norm2(x)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    w, b = _np(layer.norm2.weight), _np(layer.norm2.bias)
    twin, cache = ref.layer_norm_forward(_np(x), w, b, layer.norm2.eps)
    _close(twin, _np(y), FWD)
    dx, dg, db = ref.layer_norm_backward(_np(g), cache)
    _close(dx, _np(x.grad), GRAD)
    _close(dg, _np(layer.norm2.weight.grad), GRAD)
    _close(db, _np(layer.norm2.bias.grad), GRAD)

    ffn = layer.ffn
    x2 = torch.randn(2, 3, model.config.d_model, dtype=torch.float64, requires_grad=True)
    y2 = ffn(x2)
    g2 = torch.randn_like(y2)
    (y2 * g2).sum().backward()
    twin2, c2 = ref.ffn_forward(_np(x2), *(_np(t) for t in (ffn.w_1, ffn.b_1, ffn.w_2, ffn.b_2)))
    _close(twin2, _np(y2), FWD)
    dx2, *dps = ref.ffn_backward(_np(g2), c2)
    _close(dx2, _np(x2.grad), GRAD)
    for mine, p in zip(dps, (ffn.w_1, ffn.b_1, ffn.w_2, ffn.b_2), strict=True):
        _close(mine, _np(p.grad), GRAD)


def test_output_layer_and_loss_blocks(model: Transformer) -> None:
    z = torch.randn(2, 4, model.config.d_model, dtype=torch.float64, requires_grad=True)
    logits = model.logits(z)  # (B, T, V)
    logits.retain_grad()
    loss = torch_smoothed_loss(logits, torch.from_numpy(TGT_OUT), 0.1, 0)
    loss.backward()
    emb = _np(model.embedding)
    twin_logits = ref.output_forward(_np(z), emb)
    _close(twin_logits, _np(logits), FWD)
    twin_loss, c = ref.label_smoothed_forward(twin_logits, TGT_OUT, 0.1, 0)
    assert abs(twin_loss - loss.item()) <= FWD
    d_logits = ref.label_smoothed_backward(c)
    _close(d_logits, _np(logits.grad), GRAD)
    assert np.all(d_logits[TGT_OUT == 0] == 0.0)  # padding never counts
    dz, d_emb = ref.output_backward(d_logits, _np(z), emb)
    _close(dz, _np(z.grad), GRAD)
    _close(d_emb, _np(model.embedding.grad), GRAD)


def test_plain_cross_entropy_is_eps_zero(model: Transformer) -> None:
    logits = torch.randn(2, 4, 11, dtype=torch.float64)
    target = torch.from_numpy(TGT_OUT)
    plain = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), target.flatten(), ignore_index=0
    )
    twin, _ = ref.label_smoothed_forward(_np(logits), TGT_OUT, 0.0, 0)
    assert abs(twin - plain.item()) <= FWD


def test_the_caches_keep_what_the_walkthrough_shows() -> None:
    """LayerNorm's mu and sigma^2 (biased) and the loss of each position, padding included."""
    x = torch.randn(2, 3, 6, dtype=torch.float64)
    _, c = ref.layer_norm_forward(_np(x), np.ones(6), np.zeros(6), 1e-6)
    _close(c["mu"], _np(x.mean(-1, keepdim=True)), FWD)
    _close(c["var"], _np(x.var(-1, unbiased=False, keepdim=True)), FWD)
    logits = torch.randn(2, 4, 11, dtype=torch.float64)
    nll = -logits.log_softmax(-1).gather(-1, torch.from_numpy(TGT_OUT)[..., None])[..., 0]
    plain, c0 = ref.label_smoothed_forward(_np(logits), TGT_OUT, 0.0, 0)
    _close(c0["rows"], _np(nll), FWD)  # eps = 0: -log p(y_t), at every position
    loss, c1 = ref.label_smoothed_forward(_np(logits), TGT_OUT, 0.1, 0)
    total = -logits.log_softmax(-1).sum(-1)  # (B, T): -sum_v log p_v
    _close(c1["rows"], _np(0.9 * nll + 0.1 / 10 * (total - nll)), FWD)  # q = eps / (V - 1)
    assert abs(c1["rows"][TGT_OUT != 0].mean() - loss) <= FWD
    assert abs(c0["rows"][TGT_OUT != 0].mean() - plain) <= FWD


def test_training_loss_uses_the_same_convention() -> None:
    loss_mod = pytest.importorskip("aiayn.loss")
    logits = torch.randn(2, 4, 11, dtype=torch.float64)
    total, _, n = loss_mod.label_smoothed_loss(logits, torch.from_numpy(TGT_OUT), 0.1, 0)
    twin, _ = ref.label_smoothed_forward(_np(logits), TGT_OUT, 0.1, 0)
    assert abs(total.item() / n - twin) <= 1e-5  # the training loss runs in float32


def test_finite_differences_on_the_twin_alone() -> None:
    cfg = ModelConfig(vocab_size=11, d_model=6, n_heads=2, d_ff=10, n_layers=2, pad_id=0)
    rng = np.random.default_rng(3)
    p = ref.init_params(cfg, rng)
    _, grads = ref.loss_and_grads(p, cfg, SRC, TGT_IN, TGT_OUT, 0.1)
    h = 1e-6
    names = ["embedding", "encoder.0.self_attn.w_qkv", "encoder.1.norm1.bias"]
    names += ["decoder.0.cross_attn.w_o", "decoder.1.ffn.b_1", "decoder.0.norm3.weight"]
    for name in names:
        for _ in range(3):
            idx = tuple(rng.integers(0, s) for s in p[name].shape)
            old = p[name][idx]
            p[name][idx] = old + h
            up, _ = ref.label_smoothed_forward(ref.forward(p, cfg, SRC, TGT_IN)[0], TGT_OUT, 0.1, 0)
            p[name][idx] = old - h
            dn, _ = ref.label_smoothed_forward(ref.forward(p, cfg, SRC, TGT_IN)[0], TGT_OUT, 0.1, 0)
            p[name][idx] = old
            numeric = (up - dn) / (2 * h)
            assert abs(numeric - grads[name][idx]) <= 1e-7 + 1e-5 * abs(numeric), (name, idx)


@given(
    st.lists(st.floats(-5, 5), min_size=2, max_size=6),
    st.lists(st.floats(-1, 1), min_size=6, max_size=6),
)
def test_softmax_backward_is_its_jacobian(scores: list[float], upstream: list[float]) -> None:
    s = np.array(scores)
    g = np.array(upstream[: len(scores)])
    a = ref.softmax_forward(s[None])[0]
    jac = np.diag(a) - np.outer(a, a)  # dA_i / dS_j
    np.testing.assert_allclose(ref.softmax_backward(g[None], a[None])[0], jac.T @ g, atol=1e-12)
    assert abs(a.sum() - 1.0) <= 1e-12


def test_twin_refuses_options_outside_the_paper() -> None:
    with pytest.raises(ValueError, match="norm_first"):
        ref.check_config(ModelConfig(vocab_size=5, d_model=4, n_heads=2, norm_first=True))


def test_the_old_name_warns_and_names_its_removal_version(monkeypatch) -> None:
    """aiayn.reference (the twin's name in 0.1.0) still imports, with a DeprecationWarning
    naming the version that removes it; once aiayn reaches that version this test fails, and
    the alias goes (CHANGELOG.md says so)."""
    import importlib
    import sys

    import aiayn

    monkeypatch.delitem(sys.modules, "aiayn.reference", raising=False)
    with pytest.warns(DeprecationWarning, match=r"aiayn 0\.3\.0 removes the old name") as seen:
        old = importlib.import_module("aiayn.reference")
    assert old.REMOVED_IN in str(seen[0].message)
    assert old.__all__ == ref.__all__
    assert old.backward is ref.backward  # the same functions

    def version(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".")[:3])

    assert version(aiayn.__version__) < version(old.REMOVED_IN)
