"""The EXTENSIONs that Marian / OPUS-MT needs, each off by default.  Sections 3.3, 3.4, 3.2.3.

activation="silu" (swish in the FFN), logits_bias (Z_D E^T + b) and decoder_start="pad" (the
decoder reads PAD's row at position 0): each named in ModelConfig, validated, and equal to
its formula; the plain and fast paths agree; cached decoding equals full decoding.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from aiayn import ModelConfig, Transformer
from aiayn.data import BOS, PAD
from aiayn.decode import greedy_search, model_step_fn
from aiayn.errors import UserError
from aiayn.export import check_exportable
from aiayn.kernels import FAST
from aiayn.loss import label_smoothed_loss
from aiayn.model import PLAIN, Ops

BASE = {"vocab_size": 24, "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "dropout": 0.0}
SRC = torch.tensor([[5, 6, 7, 2], [8, 2, 0, 0]])  # (2, 4)
TGT = torch.tensor([[BOS, 9, 10], [BOS, 11, 0]])  # (2, 3)


def model(ops: Ops = FAST, **kw) -> Transformer:
    torch.manual_seed(0)
    return Transformer(ModelConfig(**BASE, **kw), ops).eval()


def test_defaults_are_the_paper() -> None:
    cfg = ModelConfig()
    assert (cfg.activation, cfg.logits_bias, cfg.decoder_start) == ("relu", False, "bos")
    assert not hasattr(Transformer(ModelConfig(**BASE)), "logits_bias")


@pytest.mark.parametrize(("name", "value"), [("activation", "gelu"), ("decoder_start", "eos")])
def test_bad_values_name_the_field(name, value) -> None:
    with pytest.raises(ValueError, match=name):
        ModelConfig(**{name: value})


def test_silu_ffn_is_swish_and_plain_equals_fast() -> None:
    m = model(activation="silu")
    ffn = m.encoder[0].ffn
    x = torch.randn(2, 3, 8)  # (B, L, D)
    want = F.silu(x @ ffn.w_1 + ffn.b_1) @ ffn.w_2 + ffn.b_2  # x sigmoid(x), then W_2
    assert torch.allclose(ffn(x), want, atol=1e-6)
    assert not torch.allclose(model()(SRC, TGT), m(SRC, TGT))  # not the ReLU FFN
    plain = model(PLAIN, activation="silu")
    assert torch.allclose(plain(SRC, TGT), m(SRC, TGT), atol=1e-6)


def test_logits_bias_is_added_and_trains_through_the_plain_loss() -> None:
    m = model(logits_bias=True)
    with torch.no_grad():
        m.logits_bias.copy_(torch.randn(24))
    z = m.decode(TGT, *m.encode(SRC))  # (B, T, D)
    assert torch.allclose(m(SRC, TGT), z @ m.embedding.t() + m.logits_bias, atol=1e-6)
    target = torch.tensor([[9, 10, 2], [11, 2, 0]])
    loss, nll, n = m(SRC, TGT, target=target, label_smoothing=0.1)
    want = label_smoothed_loss(m(SRC, TGT), target, 0.1, PAD)
    assert torch.allclose(loss, want[0])
    assert torch.allclose(nll, want[1])
    assert n == want[2]
    loss.backward()
    assert m.logits_bias.grad is not None


def test_pad_start_reads_pads_row_at_position_zero() -> None:
    m = model(decoder_start="pad")
    bos = model()  # the same weights, the paper's start
    pad_first = TGT.clone()
    pad_first[:, 0] = PAD
    assert torch.allclose(m(SRC, TGT), bos(SRC, pad_first), atol=1e-6)
    assert not torch.allclose(m(SRC, TGT), bos(SRC, TGT))
    full = greedy_search(model_step_fn(m, SRC, cached=False), [6, 6])
    cached = greedy_search(model_step_fn(m, SRC), [6, 6])
    assert [h[0].tokens for h in full] == [h[0].tokens for h in cached]


@pytest.mark.parametrize(
    ("kw", "fmt"),
    [({"activation": "silu"}, "ctranslate2"), ({"logits_bias": True}, "ctranslate2"),
     ({"decoder_start": "pad"}, "onnx")],
)  # fmt: skip
def test_other_engines_refuse_the_marian_extensions(kw, fmt) -> None:
    cfg = dataclasses.replace(ModelConfig(**BASE), **kw)
    with pytest.raises(UserError, match=next(iter(kw))):
        check_exportable(cfg, fmt)
