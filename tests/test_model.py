"""Tests of sections 3.1, 3.3, 3.4 and 3.5: positions, tying, layers, stacks, trace, KV cache.

Golden numbers come from the paper's formulas (spec/paper.md, "test anchors"). Differential
tests compare our layers and stacks with torch.nn's, weights copied; property tests use tiny
models; gradients are checked in float64.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.func import functional_call

import aiayn
import aiayn.attention
from aiayn import ModelConfig, Transformer, model_preset, trace
from aiayn.attention import MultiHeadAttention, causal_mask, padding_mask
from aiayn.data.specials import BOS, PAD
from aiayn.kernels import FAST, kernel_ops
from aiayn.model import PLAIN, DecoderLayer, EncoderLayer, FeedForward, sinusoidal_positions

REPO = Path(__file__).resolve().parents[1]


V = 13  # tiny vocabulary: ids 0-3 are PAD, BOS, EOS, UNK; 4..12 are "words"


def tiny(**overrides) -> ModelConfig:
    """A tiny model for CPU tests: d_model 8, 2 heads (d_k 4), d_ff 16, 2 + 2 layers."""
    base = {"vocab_size": V, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 2}
    return ModelConfig(**{**base, "dropout": 0.0, **overrides})


@functools.cache
def _model(fast: bool = True, norm_first: bool = False) -> Transformer:
    """One model per setting, shared by the property tests (never modified by them)."""
    torch.manual_seed(1234)
    model = Transformer(tiny(norm_first=norm_first), FAST if fast else PLAIN).eval()
    _randomize_norms_and_biases(model)
    return model


def _randomize_norms_and_biases(model: nn.Module) -> None:
    """Move LayerNorm gamma/beta and every bias off their init (1, 0) so tests can see them."""
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 1:  # LayerNorm gamma
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.dim() == 1:  # LayerNorm beta, FFN biases, attention biases
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def _ids(*rows: list[int]) -> torch.Tensor:
    """Right-pad rows of token ids with PAD into a (B, L) tensor."""
    L = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (L - len(r)) for r in rows])  # (B, L)


words = st.lists(st.integers(4, V - 1), min_size=1, max_size=6)


# 3.5 Positional encoding ---------------------------------------------------------------------


def test_positional_encoding_anchor_values() -> None:
    """PE[1, 0] = sin 1 = 0.841471, PE[1, 1] = cos 1 = 0.540302, PE[0] = [0, 1, 0, 1, ...]."""
    pe = sinusoidal_positions(3, 512)  # (3, 512)
    assert pe.shape == (3, 512)
    assert round(pe[1, 0].item(), 6) == 0.841471
    assert round(pe[1, 1].item(), 6) == 0.540302
    assert pe[0].tolist() == [0.0, 1.0] * 256
    # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...): pos 2, i = 3.
    angle = 2 / 10000 ** (6 / 512)
    assert pe[2, 6].item() == pytest.approx(math.sin(angle), abs=1e-7)
    assert pe[2, 7].item() == pytest.approx(math.cos(angle), abs=1e-7)


def test_positional_encoding_wavelengths_are_geometric_from_2pi_to_10000_2pi() -> None:
    d = 64
    pe = sinusoidal_positions(2, d, dtype=torch.float64)  # (2, d)
    omega = torch.atan2(pe[1, 0::2], pe[1, 1::2])  # (d/2,): angle at pos 1 = frequency
    wavelength = 2 * math.pi / omega  # (d/2,)
    assert wavelength[0].item() == pytest.approx(2 * math.pi)
    ratios = wavelength[1:] / wavelength[:-1]  # (d/2 - 1,)
    torch.testing.assert_close(ratios, torch.full_like(ratios, 10000 ** (2 / d)))
    # The progression reaches 10000 * 2 pi at i = d/2 (one step past the last pair).
    assert (wavelength[-1] * ratios[0]).item() == pytest.approx(10000 * 2 * math.pi)


@pytest.mark.parametrize("k", [1, 5, 37])
def test_pe_at_pos_plus_k_is_a_fixed_block_diagonal_rotation_of_pe_at_pos(k: int) -> None:
    """PE(pos + k) = R_k PE(pos), R_k built from k alone: one 2x2 rotation per frequency."""
    d = 16
    pe = sinusoidal_positions(100 + k, d, dtype=torch.float64)  # (100 + k, d)
    omega = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    R = torch.zeros(d, d, dtype=torch.float64)  # (d, d)
    for i, w in enumerate(omega.tolist()):
        c, s = math.cos(k * w), math.sin(k * w)
        # [sin(w(p+k)), cos(w(p+k))] = [[c, s], [-s, c]] [sin(wp), cos(wp)]
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    torch.testing.assert_close(pe[:100] @ R.T, pe[k:])


def test_positions_are_computed_for_any_length_and_offset() -> None:
    model = Transformer(tiny())
    far = model.positions(5, offset=2998)  # (5, D): past the first cached table
    torch.testing.assert_close(far, sinusoidal_positions(3003, 8)[2998:])
    torch.testing.assert_close(model.positions(3000)[:7], sinusoidal_positions(7, 8))


def test_a_3000_token_source_encodes_with_sinusoids() -> None:
    model = Transformer(tiny(n_layers=1, n_heads=1)).eval()
    src = torch.randint(4, V, (1, 3000))  # (1, S)
    with torch.no_grad():
        memory, keep = model.encode(src)
    assert memory.shape == (1, 3000, 8)
    assert keep.shape == (1, 1, 1, 3000)
    assert torch.isfinite(memory).all()


def test_learned_positions_raise_a_clear_error_beyond_max_positions() -> None:
    model = Transformer(tiny(positions="learned", max_positions=6)).eval()
    model(_ids([4, 5, 6, 7, 8, 9]), _ids([BOS, 4, 5]))  # exactly max_positions: fine
    with pytest.raises(ValueError, match="max_positions=6"):
        model(_ids([4, 5, 6, 7, 8, 9, 10]), _ids([BOS]))
    # The same limit on the decoder side during incremental decoding.
    state = model.start(_ids([4, 5]))
    model.step(_ids([BOS, 4, 5, 6, 7, 8]), state)
    with pytest.raises(ValueError, match="max_positions"):
        model.step(_ids([9]), state)


def test_sinusoidal_concat_layout_is_sin_half_then_cos_half() -> None:
    """DEVIATION(3.5) option: [sin | cos] with frequencies 10000^(-i / (d/2 - 1))."""
    pe = sinusoidal_positions(2, 8, concat=True, dtype=torch.float64)  # (2, 8)
    assert pe[0].tolist() == [0.0] * 4 + [1.0] * 4
    omega = 10000.0 ** (-torch.arange(4, dtype=torch.float64) / 3)  # (4,)
    torch.testing.assert_close(pe[1], torch.cat([omega.sin(), omega.cos()]))
    model = Transformer(tiny(positions="sinusoidal-concat"))
    torch.testing.assert_close(model.positions(2), pe.float())


# 3.4 Embeddings and three-way weight tying --------------------------------------------------


def test_one_matrix_is_the_source_embedding_target_embedding_and_output_layer() -> None:
    model = _model()
    E = model.embedding  # (V, D)
    vd = [n for n, p in model.named_parameters() if p.shape == (V, 8)]
    assert vd == ["embedding"]  # no second (V, D) matrix anywhere
    src, tgt_in = _ids([4, 5, 6, 2]), _ids([BOS, 7, 8])
    t = trace(model, src, tgt_in)
    sqrt_d = math.sqrt(8)
    # Lookup equals row * sqrt(d_model), on both sides; positions added on top (3.5).
    torch.testing.assert_close(t.X_E, E[src] * sqrt_d + sinusoidal_positions(4, 8))
    torch.testing.assert_close(t.X_D, E[tgt_in] * sqrt_d + sinusoidal_positions(3, 8))
    # Logits equal Z_D E^T (the unscaled matrix).
    torch.testing.assert_close(t.L, t.Z_D @ E.T)


def test_changing_the_shared_matrix_changes_all_three_uses() -> None:
    model = Transformer(tiny()).eval()
    src, tgt_in = _ids([4, 5, 2]), _ids([BOS, 6])
    with torch.no_grad():
        memory, keep = model.encode(src)
        z = model.decode(tgt_in, memory, keep)
        logits = model.logits(z)
        bump = torch.randn(8)  # not constant: Z_D has mean 0 per position, Z_D . 1 = 0
        model.embedding[5] += bump  # a source token
        assert not torch.allclose(model.encode(src)[0], memory)
        model.embedding[6] += bump  # a target token (absent from the source)
        assert not torch.allclose(model.decode(tgt_in, memory, keep), z)
        model.embedding[12] += bump  # a token in neither: only the output layer sees it
        new = model.logits(z)
        assert not torch.allclose(new[..., 12], logits[..., 12])


def test_the_tied_matrix_gets_gradient_from_all_three_uses() -> None:
    """Give each use its own copy of E: each copy's gradient is non-zero, and they sum to the
    gradient of the tied model. Dropping any one use changes the tied gradient."""
    model = Transformer(tiny()).eval()
    src, tgt_in, tgt_out = _ids([4, 5, 2]), _ids([BOS, 6, 7]), _ids([6, 7, 2])
    loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten())
    (tied,) = torch.autograd.grad(loss, [model.embedding])
    E = model.embedding.detach()
    copies = [nn.Parameter(E.clone()) for _ in range(3)]
    model.embedding = copies[0]
    memory, keep = model.encode(src)  # use 1: source embedding
    model.embedding = copies[1]
    z = model.decode(tgt_in, memory, keep)  # use 2: target embedding
    model.embedding = copies[2]
    logits = model.logits(z)  # use 3: pre-softmax linear layer
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())
    grads = torch.autograd.grad(loss, copies)
    for g in grads:
        assert g.abs().sum() > 0
    torch.testing.assert_close(grads[0] + grads[1] + grads[2], tied)
    # The embedding uses touch only the rows of the tokens they look up.
    assert set(grads[0].abs().sum(1).nonzero().flatten().tolist()) == {2, 4, 5}
    assert set(grads[1].abs().sum(1).nonzero().flatten().tolist()) == {BOS, 6, 7}
    for i in range(3):
        assert not torch.allclose(tied - grads[i], tied)


# Parameter counts (Table 3) ------------------------------------------------------------------


def _formula_count(cfg: ModelConfig) -> int:
    """Distinct parameters of the tied model, from the architecture (3.1-3.5)."""
    D, F_, H = cfg.d_model, cfg.d_ff, cfg.n_heads
    dk, dv = cfg.d_k, cfg.d_v
    attn = D * H * (2 * dk + dv) + H * dv * D  # W^Q, W^K (D x H d_k), W^V (D x H d_v), W^O
    if cfg.attn_bias:
        attn += H * (2 * dk + dv) + D
    ffn = D * F_ + F_ + F_ * D + D  # W_1, b_1, W_2, b_2
    norm = 2 * D  # gamma, beta
    n = cfg.vocab_size * D  # E, shared three ways (3.4)
    n += cfg.n_layers * (attn + ffn + 2 * norm) + cfg.decoder_layers * (2 * attn + ffn + 3 * norm)
    if cfg.positions == "learned":
        n += cfg.max_positions * D
    if cfg.norm_first:
        n += 2 * norm
    return n


@pytest.mark.parametrize("name", list(aiayn.PRESETS))
def test_parameter_count_of_every_preset_follows_the_formula(name: str) -> None:
    cfg = model_preset(name)
    with torch.device("meta"):
        assert Transformer(cfg).num_parameters() == _formula_count(cfg)


def test_parameter_count_of_the_options_follows_the_formula() -> None:
    for opts in ({"attn_bias": True, "norm_first": True}, {"n_dec_layers": 1, "d_v_override": 3}):
        cfg = tiny(**opts)
        assert Transformer(cfg).num_parameters() == _formula_count(cfg)


@pytest.mark.parametrize(
    ("preset", "paper_millions", "exact"),
    [("base", 63.1, 63_045_632), ("big", 214.2, 214_171_648)],
)
def test_parameter_counts_at_vocabulary_37000(
    preset: str, paper_millions: float, exact: int
) -> None:
    cfg = model_preset(preset, vocab_size=37000)
    with torch.device("meta"):  # counts without allocating
        model = Transformer(cfg)
    n = model.num_parameters()
    assert n == pytest.approx(paper_millions * 1e6, rel=0.005)
    assert n == _formula_count(cfg) == exact


# 3.1 Structure: post-LN, no final LayerNorm ---------------------------------------------------


def _layer_norms(model: nn.Module) -> list[str]:
    return [n for n, m in model.named_modules() if isinstance(m, nn.LayerNorm)]


def test_stacks_have_n_identical_layers_and_no_final_layer_norm() -> None:
    model = Transformer(tiny(n_layers=3))
    assert [type(m) for m in model.encoder] == [EncoderLayer] * 3
    assert [type(m) for m in model.decoder] == [DecoderLayer] * 3
    assert len(_layer_norms(model)) == 2 * 3 + 3 * 3  # one per sub-layer, nothing more
    assert not hasattr(model, "encoder_norm")
    assert not hasattr(model, "decoder_norm")
    assert len(Transformer(tiny(n_layers=3, n_dec_layers=1)).decoder) == 1
    # Separate parameters per layer (3.3).
    assert model.encoder[0].ffn.w_1 is not model.encoder[1].ffn.w_1
    assert not torch.equal(model.encoder[0].ffn.w_1, model.encoder[1].ffn.w_1)


def test_pre_ln_option_adds_one_final_layer_norm_per_stack() -> None:
    model = _model(norm_first=True)
    assert len(_layer_norms(model)) == 2 * 2 + 3 * 2 + 2
    src, tgt_in = _ids([4, 5, 6, 2], [7, 2]), _ids([BOS, 8, 9], [BOS])
    with torch.no_grad():
        x = model.embed(src)
        keep = padding_mask(src, PAD)
        for layer in model.encoder:
            x = layer(x, keep)  # (B, S, D): pre-LN layers leave the stream unnormalised
        memory, _ = model.encode(src)
        torch.testing.assert_close(memory, model.encoder_norm(x))
        y = model.embed(tgt_in)
        for layer in model.decoder:
            y = layer(y, memory, keep)  # (B, T, D)
        torch.testing.assert_close(model.decode(tgt_in, memory, keep), model.decoder_norm(y))


def test_each_post_ln_layer_output_is_normalised_before_the_affine() -> None:
    """With dropout off, (out - beta) / gamma has per-position mean 0 and variance 1."""

    def check(out: torch.Tensor, norm: nn.LayerNorm) -> None:
        z = (out - norm.bias) / norm.weight  # (B, L, D)
        torch.testing.assert_close(z.mean(-1), torch.zeros(z.shape[:-1]), atol=1e-5, rtol=0)
        torch.testing.assert_close(
            z.var(-1, unbiased=False), torch.ones(z.shape[:-1]), atol=1e-3, rtol=0
        )

    for randomized in (False, True):  # at init (gamma 1, beta 0) and with any affine
        model = Transformer(tiny()).eval()
        if randomized:
            _randomize_norms_and_biases(model)
        t = trace(model, _ids([4, 5, 6, 2], [7, 2]), _ids([BOS, 8, 9], [BOS]))
        for layer, rec in zip(model.encoder, t.encoder, strict=True):
            check(rec["H_E"], layer.norm1)
            check(rec["Z_E"], layer.norm2)
        for layer, rec in zip(model.decoder, t.decoder, strict=True):
            check(rec["H_D"], layer.norm1)
            check(rec["H_D_cross"], layer.norm2)
            check(rec["Z_D"], layer.norm3)
        # The stacks' outputs are their last layers' outputs: no extra LayerNorm.
        assert torch.equal(t.Z_E, t.encoder[-1]["Z_E"])
        assert torch.equal(t.Z_D, t.decoder[-1]["Z_D"])


# 5.4 Dropout: where the paper puts it, and only in training --------------------------------


def test_residual_and_embedding_dropout_sit_where_section_5_4_puts_them() -> None:
    """ "Dropout to the output of each sub-layer, before it is added to the sub-layer input"
    and "to the sums of the embeddings and the positional encodings" (5.4); none on the
    attention weights or inside the FFN by default."""
    p = 0.5
    model = Transformer(tiny(dropout=p))
    _randomize_norms_and_biases(model)
    ref = trace(model.eval(), SRC, TGT_IN)
    t = trace(model.train(), SRC, TGT_IN)

    def is_dropout_of(dropped: torch.Tensor, full: torch.Tensor) -> None:
        kept = dropped != 0
        assert 0 < kept.float().mean() < 1  # some dropped, some kept
        torch.testing.assert_close(dropped[kept], full[kept] / (1 - p))

    is_dropout_of(t.X_E, ref.X_E)  # the embedding sums, both stacks
    is_dropout_of(t.X_D, ref.X_D)
    for layer, rec in zip(model.encoder, t.encoder, strict=True):
        is_dropout_of(rec["R_E"] - rec["X"], rec["M_E"])  # before the residual add
        a = rec["attn"]
        torch.testing.assert_close(a["O"], a["weights"] @ a["V"])  # no attention dropout
        torch.testing.assert_close(a["weights"].sum(-1), torch.ones(a["weights"].shape[:-1]))
        ffn = layer.ffn  # no dropout inside the FFN
        torch.testing.assert_close(rec["F_E"], rec["ffn"]["hidden"] @ ffn.w_2 + ffn.b_2)
    for rec in t.decoder:
        is_dropout_of(rec["R_D_self"] - rec["X"], rec["M_D_self"])
        is_dropout_of(rec["R_D_cross"] - rec["H_D"], rec["M_D_cross"])
    # In eval mode nothing is dropped: the same as a model built with dropout 0.
    plain = Transformer(tiny()).eval()
    plain.load_state_dict(model.state_dict())
    torch.testing.assert_close(_logits(model.eval(), SRC, TGT_IN), _logits(plain, SRC, TGT_IN))


# Differential: our layers and stacks against torch.nn's ------------------------------------


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """in_proj_weight (3 D, D) is (out, in): it is w_qkv^T; out_proj.weight is w_o^T."""
    theirs.in_proj_weight.copy_(ours.w_qkv.t())
    theirs.out_proj.weight.copy_(ours.w_o.t())
    theirs.in_proj_bias.copy_(ours.b_qkv if ours.b_qkv is not None else 0.0)
    theirs.out_proj.bias.copy_(ours.b_o if ours.b_o is not None else 0.0)


def _copy_layer(ours: EncoderLayer | DecoderLayer, theirs: nn.Module) -> None:
    with torch.no_grad():
        _copy_attention(ours.self_attn, theirs.self_attn)
        if isinstance(ours, DecoderLayer):
            _copy_attention(ours.cross_attn, theirs.multihead_attn)
        theirs.linear1.weight.copy_(ours.ffn.w_1.t())  # (F, D)
        theirs.linear1.bias.copy_(ours.ffn.b_1)
        theirs.linear2.weight.copy_(ours.ffn.w_2.t())  # (D, F)
        theirs.linear2.bias.copy_(ours.ffn.b_2)
        for name in ("norm1", "norm2", "norm3"):
            if hasattr(ours, name):
                getattr(theirs, name).load_state_dict(getattr(ours, name).state_dict())


def _nn_kwargs(cfg: ModelConfig) -> dict:
    """The torch.nn layer matching cfg.

    bias=True is the fair mapping: torch's bias=False removes the biases of the FFN linear
    layers (which Eq. (2) has: b_1, b_2) and of the LayerNorms (beta, which 3.1's LayerNorm
    has) along with the attention biases. So we keep bias=True and set the attention biases to
    ours: zero when attn_bias=False (the paper's 3.2.2), copied when attn_bias=True.
    """
    return {
        "d_model": cfg.d_model,
        "nhead": cfg.n_heads,
        "dim_feedforward": cfg.d_ff,
        "dropout": 0.0,
        "activation": "relu",
        "layer_norm_eps": cfg.layer_norm_eps,
        "batch_first": True,
        "norm_first": cfg.norm_first,
        "bias": True,
    }


SRC = _ids([4, 5, 6, 7, 2], [8, 9, 2])  # (B, S): the second row is padded
TGT_IN = _ids([BOS, 10, 11, 12], [BOS, 4])  # (B, T)

LAYER_CASES = [
    pytest.param({}, id="post-LN"),
    pytest.param({"norm_first": True}, id="pre-LN"),
    pytest.param({"attn_bias": True}, id="post-LN-attn-bias"),
]


@pytest.mark.parametrize("overrides", LAYER_CASES)
def test_encoder_layer_equals_nn_transformer_encoder_layer(overrides: dict) -> None:
    cfg = tiny(**overrides)
    ours = EncoderLayer(cfg)
    _randomize_norms_and_biases(ours)
    theirs = nn.TransformerEncoderLayer(**_nn_kwargs(cfg)).train()  # train: no fast path
    _copy_layer(ours, theirs)
    x = torch.randn(2, 5, 8)  # (B, S, D)
    keep = padding_mask(SRC, PAD)  # (B, 1, 1, S)
    expected = theirs(x, src_key_padding_mask=SRC == PAD)  # True = blocked in torch.nn
    torch.testing.assert_close(ours(x, keep), expected, atol=1e-5, rtol=1e-5)
    ours.self_attn.attend = aiayn.attention.attention  # the plain path
    torch.testing.assert_close(ours(x, keep), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("overrides", LAYER_CASES)
def test_decoder_layer_equals_nn_transformer_decoder_layer(overrides: dict) -> None:
    cfg = tiny(**overrides)
    ours = DecoderLayer(cfg)
    _randomize_norms_and_biases(ours)
    theirs = nn.TransformerDecoderLayer(**_nn_kwargs(cfg)).train()
    _copy_layer(ours, theirs)
    y, memory = torch.randn(2, 4, 8), torch.randn(2, 5, 8)  # (B, T, D), (B, S, D)
    expected = theirs(
        y, memory, tgt_mask=~causal_mask(4), memory_key_padding_mask=SRC == PAD
    )  # torch.nn masks: True = blocked
    torch.testing.assert_close(
        ours(y, memory, padding_mask(SRC, PAD)), expected, atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_stacks_equal_nn_transformer_stacks_with_a_final_norm_only_for_pre_ln(
    norm_first: bool,
) -> None:
    """Post-LN equals nn.TransformerEncoder/Decoder(norm=None): no extra final LayerNorm."""
    model = _model(norm_first=norm_first)
    cfg = model.config
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(**_nn_kwargs(cfg)),
        cfg.n_layers,
        norm=nn.LayerNorm(8, eps=cfg.layer_norm_eps) if norm_first else None,
        enable_nested_tensor=False,
    ).train()
    dec = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(**_nn_kwargs(cfg)),
        cfg.n_layers,
        norm=nn.LayerNorm(8, eps=cfg.layer_norm_eps) if norm_first else None,
    ).train()
    for ours, theirs in zip(model.encoder, enc.layers, strict=True):
        _copy_layer(ours, theirs)
    for ours, theirs in zip(model.decoder, dec.layers, strict=True):
        _copy_layer(ours, theirs)
    if norm_first:
        enc.norm.load_state_dict(model.encoder_norm.state_dict())
        dec.norm.load_state_dict(model.decoder_norm.state_dict())
    with torch.no_grad():
        memory, keep = model.encode(SRC)
        z = model.decode(TGT_IN, memory, keep)
        their_memory = enc(model.embed(SRC), src_key_padding_mask=SRC == PAD)
        their_z = dec(
            model.embed(TGT_IN),
            their_memory,
            tgt_mask=~causal_mask(TGT_IN.size(1)),
            memory_key_padding_mask=SRC == PAD,
        )
    real = SRC != PAD
    torch.testing.assert_close(memory[real], their_memory[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(z, their_z, atol=1e-5, rtol=1e-5)


# Properties: causality, padding, batching, incremental decoding, fast == explicit ---------


def _logits(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(src, tgt_in)  # (B, T, V)


@settings(max_examples=12, deadline=None)
@given(src=words, tgt=words, data=st.data(), fast=st.booleans())
def test_no_future_leak(src: list[int], tgt: list[int], data, fast: bool) -> None:
    """Changing target tokens after t never changes the logits at positions <= t (3.2.3)."""
    model = _model(fast=fast)
    tgt_in = _ids([BOS, *tgt])  # (1, T)
    t = data.draw(st.integers(0, tgt_in.size(1) - 2), label="t") if len(tgt) else 0
    changed = tgt_in.clone()
    changed[0, t + 1 :] = torch.tensor(
        data.draw(st.lists(st.integers(4, V - 1), min_size=len(tgt) - t, max_size=len(tgt) - t))
    )
    before = _logits(model, _ids([*src, 2]), tgt_in)
    after = _logits(model, _ids([*src, 2]), changed)
    torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], atol=1e-6, rtol=1e-5)
    if changed[0, t + 1] != tgt_in[0, t + 1]:  # the test can see a change where one is allowed
        assert not torch.allclose(after[:, t + 1], before[:, t + 1])


@settings(max_examples=12, deadline=None)
@given(
    src=words,
    tgt=words,
    extra_src=st.integers(0, 3),
    extra_tgt=st.integers(0, 3),
    fast=st.booleans(),
)
def test_padding_invariance(
    src: list[int], tgt: list[int], extra_src: int, extra_tgt: int, fast: bool
) -> None:
    """Extra right padding on src or tgt_in changes nothing at the real positions."""
    model = _model(fast=fast)
    src_ids, tgt_in = _ids([*src, 2]), _ids([BOS, *tgt])
    padded_src = F.pad(src_ids, (0, extra_src), value=PAD)  # (1, S + extra)
    padded_tgt = F.pad(tgt_in, (0, extra_tgt), value=PAD)  # (1, T + extra)
    ref = _logits(model, src_ids, tgt_in)
    got = _logits(model, padded_src, padded_tgt)[:, : tgt_in.size(1)]
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=10, deadline=None)
@given(pairs=st.lists(st.tuples(words, words), min_size=2, max_size=4), fast=st.booleans())
def test_batch_invariance(pairs: list[tuple[list[int], list[int]]], fast: bool) -> None:
    """A sentence alone gives the same logits as the same sentence in a padded batch."""
    model = _model(fast=fast)
    src = _ids(*([*s, 2] for s, _ in pairs))  # (B, S)
    tgt_in = _ids(*([BOS, *t] for _, t in pairs))  # (B, T)
    batched = _logits(model, src, tgt_in)
    for b, (s, t) in enumerate(pairs):
        alone = _logits(model, _ids([*s, 2]), _ids([BOS, *t]))  # (1, T_b, V)
        torch.testing.assert_close(batched[b : b + 1, : len(t) + 1], alone, atol=1e-5, rtol=1e-5)


def _incremental(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor, sizes: list[int]):
    with torch.no_grad():
        state = model.start(src)
        out, pos = [], 0
        for n in sizes:
            out.append(model.step(tgt_in[:, pos : pos + n], state))  # (B, n, V)
            pos += n
        assert state.length == tgt_in.size(1)
        return torch.cat(out, dim=1)  # (B, T, V)


@settings(max_examples=12, deadline=None)
@given(pairs=st.lists(st.tuples(words, words), min_size=1, max_size=3), data=st.data())
def test_incremental_decoding_equals_the_full_pass(pairs, data) -> None:
    """model.start/step, one token at a time and in random chunks, equals model(src, tgt_in)."""
    model = _model(fast=data.draw(st.booleans(), label="fast"))
    src = _ids(*([*s, 2] for s, _ in pairs))  # (B, S)
    tgt_in = _ids(*([BOS, *t] for _, t in pairs))  # (B, T)
    T = tgt_in.size(1)
    full = _logits(model, src, tgt_in)
    ones = _incremental(model, src, tgt_in, [1] * T)
    torch.testing.assert_close(ones, full, atol=1e-5, rtol=1e-5)
    sizes, left = [], T
    while left:
        sizes.append(data.draw(st.integers(1, left), label="chunk"))
        left -= sizes[-1]
    torch.testing.assert_close(_incremental(model, src, tgt_in, sizes), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "overrides",
    [
        {"norm_first": True},
        {"positions": "learned"},
        {"positions": "sinusoidal-concat"},
        {"attn_bias": True, "d_k_override": 3, "d_v_override": 5},
        {"n_dec_layers": 3},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_incremental_decoding_equals_the_full_pass_for_options(overrides: dict) -> None:
    model = Transformer(tiny(**overrides)).eval()
    _randomize_norms_and_biases(model)
    full = _logits(model, SRC, TGT_IN)
    torch.testing.assert_close(
        _incremental(model, SRC, TGT_IN, [1, 1, 1, 1]), full, atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(_incremental(model, SRC, TGT_IN, [3, 1]), full, atol=1e-5, rtol=1e-5)


def test_decoder_state_reorder_selects_rows_of_every_cache() -> None:
    """After reorder(index), stepping equals stepping a state built from the reordered batch."""
    model = _model()
    index = torch.tensor([1, 1, 0])
    with torch.no_grad():
        state = model.start(SRC)
        model.step(TGT_IN[:, :2], state)
        state.reorder(index)
        got = model.step(TGT_IN[index, 2:], state)  # (3, 2, V)
        ref = model(SRC[index], TGT_IN[index])[:, 2:]  # (3, 2, V)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=10, deadline=None)
@given(pairs=st.lists(st.tuples(words, words), min_size=1, max_size=3), norm_first=st.booleans())
def test_fast_path_equals_explicit_trace_path(pairs, norm_first: bool) -> None:
    fast, explicit = _model(True, norm_first), _model(False, norm_first)
    assert all(
        torch.equal(a, b) for a, b in zip(fast.parameters(), explicit.parameters(), strict=True)
    )
    src = _ids(*([*s, 2] for s, _ in pairs))  # (B, S)
    tgt_in = _ids(*([BOS, *t] for _, t in pairs))  # (B, T)
    ref = _logits(explicit, src, tgt_in)
    torch.testing.assert_close(_logits(fast, src, tgt_in), ref, atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(trace(fast, src, tgt_in).L, ref, atol=1e-5, rtol=1e-5)


def test_attention_rows_in_the_model_sum_to_one_and_skip_padding() -> None:
    t = trace(_model(), SRC, TGT_IN)
    for rec in t.encoder:
        w = rec["attn"]["weights"]  # (B, H, S, S)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        assert torch.all(w[1, :, :, 3:] == 0)  # padded source keys
    for rec in t.decoder:
        w = rec["self_attn"]["weights"]  # (B, H, T, T)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        assert torch.all(w.triu(1) == 0)  # no attention to the future
        c = rec["cross_attn"]["weights"]  # (B, H, T, S)
        torch.testing.assert_close(c.sum(-1), torch.ones(c.shape[:-1]))
        assert torch.all(c[1, :, :, 3:] == 0)


# Gradients -----------------------------------------------------------------------------------


def test_gradcheck_feed_forward() -> None:
    ffn = FeedForward(4, 6).double()
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)  # (B, L, D)
    params = {n: p.detach().clone().requires_grad_() for n, p in ffn.named_parameters()}
    names = list(params)
    # Eq. (2) by hand, the oracle: max(0, x W_1 + b_1) W_2 + b_2.
    ref = torch.relu(x @ params["w_1"] + params["b_1"]) @ params["w_2"] + params["b_2"]
    torch.testing.assert_close(functional_call(ffn, params, (x,)), ref)
    assert torch.autograd.gradcheck(
        lambda x, *ps: functional_call(ffn, dict(zip(names, ps, strict=True)), (x,)),
        (x, *params.values()),
    )


@pytest.mark.parametrize("kernels", ["fast", "plain"])
def test_gradcheck_whole_tiny_transformer_loss(kernels: str) -> None:
    cfg = ModelConfig(vocab_size=7, d_model=4, n_heads=2, d_ff=6, n_layers=1, dropout=0.0)
    model = Transformer(cfg, kernel_ops(kernels)).double().eval()
    _randomize_norms_and_biases(model)
    src, tgt_in, tgt_out = _ids([4, 5, 2], [6, 2]), _ids([BOS, 4, 6], [BOS]), _ids([4, 6, 2], [2])
    params = {n: p.detach().clone().requires_grad_() for n, p in model.named_parameters()}
    names = list(params)

    def loss(*ps):
        logits = functional_call(model, dict(zip(names, ps, strict=True)), (src, tgt_in))
        return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)

    assert torch.autograd.gradcheck(loss, tuple(params.values()))


@pytest.mark.parametrize(
    "overrides",
    [{}, {"norm_first": True}, {"positions": "learned", "max_positions": 5}, {"attn_bias": True}],
    ids=["post-LN", "pre-LN", "learned", "attn-bias"],
)
def test_every_parameter_receives_a_nonzero_gradient(overrides: dict) -> None:
    """(With attn_bias, the W^K bias alone gets exactly zero gradient, as softmax is invariant
    to a per-query constant; its tensor b_qkv as a whole still gets gradient.)"""
    model = Transformer(tiny(**overrides)).train()
    src, tgt_in, tgt_out = SRC, F.pad(TGT_IN, (0, 1)), F.pad(TGT_IN, (0, 1)).roll(-1, 1)
    loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


# trace() ---------------------------------------------------------------------------------------

ATTN_KEYS = {"Q", "K", "V", "scores", "scores_masked", "weights", "O", "concat", "M"}
ENCODER_KEYS = {"X", "attn", "M_E", "R_E", "H_E", "ffn", "F_E", "Z_E"}
DECODER_KEYS = {"X", "self_attn", "M_D_self", "R_D_self", "H_D", "cross_attn", "M_D_cross"}
DECODER_KEYS |= {"R_D_cross", "H_D_cross", "ffn", "F_D", "Z_D"}
TRACE_FIELDS = {"X_E", "encoder", "Z_E", "X_D", "decoder", "Z_D", "L", "P"}


def test_trace_returns_every_quantity_with_the_documented_shapes() -> None:
    cfg = tiny(
        d_k_override=3, d_v_override=5
    )  # K != d_v != D / H, so that every shape is told apart
    model = Transformer(cfg).eval()
    B, S, T, D, H, Fd = 2, 5, 4, 8, 2, 16
    t = trace(model, SRC, TGT_IN)
    assert isinstance(t, aiayn.Trace)
    assert {f.name for f in dataclasses.fields(t)} == TRACE_FIELDS
    assert t.X_E.shape == t.Z_E.shape == (B, S, D)
    assert t.X_D.shape == t.Z_D.shape == (B, T, D)
    assert t.L.shape == t.P.shape == (B, T, V)
    assert len(t.encoder) == len(t.decoder) == 2
    for rec in t.encoder:
        assert set(rec) == ENCODER_KEYS
        assert set(rec["attn"]) == ATTN_KEYS
        assert set(rec["ffn"]) == {"hidden"}
        for key in ("X", "M_E", "R_E", "H_E", "F_E", "Z_E"):
            assert rec[key].shape == (B, S, D), key
        a = rec["attn"]
        assert a["Q"].shape == a["K"].shape == (B, H, S, 3)
        assert a["V"].shape == (*a["O"].shape[:3], 5) == (B, H, S, 5)
        assert a["scores"].shape == a["scores_masked"].shape == a["weights"].shape == (B, H, S, S)
        assert a["concat"].shape == (B, S, H * 5)
        assert a["M"].shape == (B, S, D)
        assert rec["ffn"]["hidden"].shape == (B, S, Fd)
    for rec in t.decoder:
        assert set(rec) == DECODER_KEYS
        assert set(rec["self_attn"]) == set(rec["cross_attn"]) == ATTN_KEYS
        for key in DECODER_KEYS - {"self_attn", "cross_attn", "ffn"}:
            assert rec[key].shape == (B, T, D), key
        s, c = rec["self_attn"], rec["cross_attn"]
        assert s["Q"].shape == s["K"].shape == (B, H, T, 3)
        assert s["weights"].shape == (B, H, T, T)
        assert c["Q"].shape == (B, H, T, 3)
        assert c["K"].shape == (B, H, S, 3)
        assert c["V"].shape == (B, H, S, 5)
        assert c["weights"].shape == c["scores"].shape == (B, H, T, S)
        assert c["concat"].shape == (B, T, H * 5)
        assert rec["ffn"]["hidden"].shape == (B, T, Fd)


def test_trace_quantities_follow_the_note_and_the_paper() -> None:
    """Each recorded quantity recomputed from its inputs by the formulas of 3.1-3.5."""
    model = _model()
    t = trace(model, SRC, TGT_IN)
    K = 4  # d_k of the tiny model

    def attn_check(rec, layer_attn, x, mem, keep):
        a = rec
        torch.testing.assert_close(
            a["Q"], (x @ layer_attn.w_q).unflatten(-1, (2, K)).transpose(1, 2)
        )
        torch.testing.assert_close(
            a["K"], (mem @ layer_attn.w_k).unflatten(-1, (2, K)).transpose(1, 2)
        )
        torch.testing.assert_close(
            a["V"], (mem @ layer_attn.w_v).unflatten(-1, (2, K)).transpose(1, 2)
        )
        torch.testing.assert_close(a["scores"], a["Q"] @ a["K"].transpose(-2, -1) / math.sqrt(K))
        torch.testing.assert_close(a["scores_masked"], a["scores"].masked_fill(~keep, -math.inf))
        torch.testing.assert_close(a["weights"], a["scores_masked"].softmax(-1))
        torch.testing.assert_close(a["O"], a["weights"] @ a["V"])
        torch.testing.assert_close(a["concat"], a["O"].transpose(1, 2).flatten(2))
        torch.testing.assert_close(a["M"], a["concat"] @ layer_attn.w_o)

    def ffn_check(rec, ffn, h, f):
        torch.testing.assert_close(rec["hidden"], torch.relu(h @ ffn.w_1 + ffn.b_1))
        torch.testing.assert_close(f, rec["hidden"] @ ffn.w_2 + ffn.b_2)

    src_keep = padding_mask(SRC, PAD)  # (B, 1, 1, S)
    x = t.X_E
    for layer, rec in zip(model.encoder, t.encoder, strict=True):
        assert torch.equal(rec["X"], x)  # step 1 for layer 0, else the previous Z_E
        attn_check(rec["attn"], layer.self_attn, x, x, src_keep)  # step 2
        assert torch.equal(rec["M_E"], rec["attn"]["M"])
        torch.testing.assert_close(rec["R_E"], x + rec["M_E"])  # step 3, dropout off
        torch.testing.assert_close(rec["H_E"], layer.norm1(rec["R_E"]))
        ffn_check(rec["ffn"], layer.ffn, rec["H_E"], rec["F_E"])  # step 4
        torch.testing.assert_close(rec["Z_E"], layer.norm2(rec["H_E"] + rec["F_E"]))  # step 5
        x = rec["Z_E"]
    y = t.X_D
    future = causal_mask(TGT_IN.size(1))  # (T, T)
    for layer, rec in zip(model.decoder, t.decoder, strict=True):
        assert torch.equal(rec["X"], y)  # step 6 for layer 0
        attn_check(rec["self_attn"], layer.self_attn, y, y, future)  # step 7
        torch.testing.assert_close(rec["R_D_self"], y + rec["M_D_self"])
        torch.testing.assert_close(rec["H_D"], layer.norm1(rec["R_D_self"]))  # step 8
        attn_check(rec["cross_attn"], layer.cross_attn, rec["H_D"], t.Z_E, src_keep)  # step 9
        torch.testing.assert_close(rec["R_D_cross"], rec["H_D"] + rec["M_D_cross"])
        torch.testing.assert_close(rec["H_D_cross"], layer.norm2(rec["R_D_cross"]))  # step 10
        ffn_check(rec["ffn"], layer.ffn, rec["H_D_cross"], rec["F_D"])  # step 11
        torch.testing.assert_close(rec["Z_D"], layer.norm3(rec["H_D_cross"] + rec["F_D"]))
        y = rec["Z_D"]
    assert torch.equal(t.Z_D, y)  # step 12
    torch.testing.assert_close(t.L, t.Z_D @ model.embedding.T)  # step 13
    torch.testing.assert_close(t.P, t.L.softmax(-1))  # step 14
    torch.testing.assert_close(t.P.sum(-1), torch.ones(2, TGT_IN.size(1)))


def test_trace_logits_equal_forward_logits() -> None:
    model = _model()
    with torch.no_grad():
        torch.testing.assert_close(trace(model, SRC, TGT_IN).L, model(SRC, TGT_IN))


def test_the_normal_forward_records_nothing_and_skips_the_explicit_path(monkeypatch) -> None:
    model = Transformer(tiny(), FAST)  # PLAIN's attention is the explicit formula itself
    before = {n: v for n, v in vars(model).items() if isinstance(v, torch.Tensor)}

    def explicit_called(*args, **kwargs):
        raise AssertionError("the normal forward must not take the explicit (trace) path")

    monkeypatch.setattr(aiayn.attention, "scaled_dot_product_attention", explicit_called)
    out = model(SRC, TGT_IN)
    assert isinstance(out, torch.Tensor)
    assert out.shape == (2, 4, V)
    # No module keeps a tensor from the pass (only the constant position table may be cached).
    for name, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not (module is model and attr in before):
                pytest.fail(f"{name or 'model'}.{attr} holds a tensor after forward")
            holds = isinstance(value, dict) and any(
                isinstance(v, torch.Tensor) for v in value.values()
            )
            if holds and attr not in ("_parameters", "_buffers"):
                pytest.fail(f"{name or 'model'}.{attr} holds tensors after forward")
    assert model._pe.grad_fn is None
    with pytest.raises(AssertionError, match="explicit"):
        trace(model, SRC, TGT_IN)  # trace does take the explicit path


def test_every_trace_key_is_documented_in_docs_trace_md() -> None:
    doc = (REPO / "docs" / "trace.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Za-z_]+)`", doc))
    missing = (TRACE_FIELDS | ENCODER_KEYS | DECODER_KEYS | ATTN_KEYS | {"hidden"}) - documented
    assert not missing, f"docs/trace.md does not document {sorted(missing)}"


def test_the_examples_in_docs_trace_md_run() -> None:
    doc = (REPO / "docs" / "trace.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/trace.md", "exec"), {})
