"""The walkthrough on a trained model (`aiayn walkthrough --checkpoint`): every step proved.

The model is trained here for a few seconds on a handful of EN-ZH sentence pairs (the note's
"I love you." among them), so that it translates with its own tokenizer and its own weights.
The tests check that every intermediate equals the model's, that the checks can fail (a
corrupted intermediate, shown or in a head left out of the view), and that the CLI shows the
note's names, heads numbered from 1, matrices cut to the view, in English, Chinese and HTML.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.cli import main
from aiayn.data import BOS, EOS, PAD, Tokenizer
from aiayn.errors import UserError
from aiayn.model import trace
from aiayn.walkthrough import (
    NOTE_SENTENCE,
    TRAINED_VIEW,
    ProofError,
    TrainedExample,
    View,
    WalkthroughConfig,
    build,
    build_trained,
    prove_trained,
)
from aiayn.weights import save_model

STEPS = [f"step-{i}" for i in range(1, 15)]
PAIRS = [
    ("I love you.", "我爱你。"),
    ("I love him.", "我爱他。"),
    ("You love me.", "你爱我。"),
    ("He loves you.", "他爱你。"),
    ("I see you.", "我看见你。"),
    ("You see him.", "你看见他。"),
]
CONFIG = ModelConfig(vocab_size=1, d_model=16, n_heads=4, d_ff=32, n_layers=2, dropout=0.0)


def _batch(tok: Tokenizer, texts: list[str], bos: bool) -> torch.Tensor:
    rows = [([BOS] if bos else []) + tok.encode(t) + ([] if bos else [EOS]) for t in texts]
    out = torch.full((len(rows), max(map(len, rows))), PAD)  # (B, L)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out


def train_tiny(path: Path, **overrides: object) -> Path:
    """A 2-layer, 4-head d_model 16 model trained for 30 Adam steps on PAIRS; its model file."""
    src_texts, tgt_texts = zip(*PAIRS, strict=True)
    tok = Tokenizer.train([*src_texts, *tgt_texts] * 4, vocab_size=300)
    cfg = dataclasses.replace(CONFIG, vocab_size=tok.vocab_size, **overrides)
    torch.manual_seed(0)
    model = Transformer(cfg)
    src = _batch(tok, list(src_texts), bos=False)  # (B, S)
    tgt_in = _batch(tok, list(tgt_texts), bos=True)  # (B, T)
    tgt_out = _batch(tok, list(tgt_texts), bos=False)  # (B, T): y_1 .. y_n </s>
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(30):
        total, _, n = model(src, tgt_in, tgt_out, 0.0)
        opt.zero_grad()
        (total / n).backward()
        opt.step()
    save_model(path, model.eval(), metadata={"tokenizer": tok.to_str()})
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny(tmp_path_factory.mktemp("trained") / "model.safetensors")


@pytest.fixture(scope="module")
def doc(model: Path):
    return build_trained(model)


def test_every_step_is_proved_on_the_trained_model(doc) -> None:
    ids = [s.id for s in doc.sections]
    assert [i for i in ids if i in STEPS] == STEPS  # the note's order
    assert {"step-2-layer-2", "step-12-layer-2", "loss", "summary"} <= set(ids)
    assert all(c.diff <= c.tol for c in doc.checks)
    # Every head is proved, shown or not: 4 heads x (Q K V S A O [S + M]) + Concat and M, per
    # attention; 2 layers of one self-attention (encoder), and a masked self- and a cross-
    # attention (decoder).
    heads = [c for c in doc.checks if re.match(r"[QKVSAO]_\d", c.what)]
    assert len(heads) == 2 * 4 * 6 + 2 * 4 * 7 + 2 * 4 * 6
    assert {c.what[:3] for c in heads if c.what.startswith(("Q_", "K_"))} == {
        f"{n}_{i}" for n in "QK" for i in (1, 2, 3, 4)
    }


def test_the_target_is_the_models_own_translation(model: Path) -> None:
    from aiayn.translator import load_translator

    ex = TrainedExample.load(model)
    translator = load_translator(model, device="cpu")
    ((text, best),) = translator.translate([NOTE_SENTENCE])[0]
    assert ex.cfg.source == NOTE_SENTENCE == "I love you."
    assert ex.translation == text
    assert ex.tgt_ids == best.tokens
    assert ex.tgt_ids[-1] == EOS
    assert ex.tgt_in[0].tolist() == [BOS, *best.tokens[:-1]]  # shifted right (3.2.3)
    tok = translator.tokenizer
    pieces = tok.encode(NOTE_SENTENCE)
    assert ex.src[0].tolist() == [*pieces, EOS]
    assert ex.src_words == tok.tokens([*pieces, EOS])  # the BPE pieces, shown as rows
    assert ex.model.embedding.dtype == torch.float64


@pytest.mark.parametrize(
    ("where", "corrupt"),
    [
        ("step 1", lambda tr: tr.X_E),
        ("step 2 (layer 1), head 1", lambda tr: tr.encoder[0]["attn"]["Q"][0, 0]),
        ("step 2 (layer 2), head 3", lambda tr: tr.encoder[1]["attn"]["weights"][0, 2]),
        ("step 5 (layer 2)", lambda tr: tr.encoder[1]["Z_E"]),
        ("step 7 (layer 2), head 4", lambda tr: tr.decoder[1]["self_attn"]["scores"][0, 3]),
        ("step 9 (layer 1), head 2", lambda tr: tr.decoder[0]["cross_attn"]["O"][0, 1]),
        ("step 11 (layer 2)", lambda tr: tr.decoder[1]["ffn"]["hidden"]),
        ("step 13", lambda tr: tr.L),
    ],
)
def test_a_corrupted_intermediate_is_detected(model: Path, where: str, corrupt) -> None:
    """Heads 3 and 4 are left out of the default view: their proofs fail all the same."""
    ex = TrainedExample.load(model)
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    prove_trained(ex, tr, TRAINED_VIEW)  # uncorrupted: every check passes
    part = corrupt(tr)
    part[(0,) * part.dim()] += 1e-6  # one entry, far above the tolerance in float64
    with pytest.raises(ProofError, match=re.escape(where) + "[:,]"):
        prove_trained(ex, tr, TRAINED_VIEW)


def test_the_view_cuts_matrices_and_keeps_their_shapes(model: Path) -> None:
    d = build_trained(model, view=View(rows=3, cols=4, heads=(2,), top=3))
    mats = {}
    for s in d.sections:
        for b in s.blocks:
            for m in getattr(b, "mats", [b]):
                if type(m).__name__ == "Mat":
                    mats.setdefault(m.name, m)
    w_q = mats["W_{Q_2}"]
    assert w_q.values.shape == (3, 4)
    assert w_q.shape == (16, 4)
    assert "W_{Q_1}" not in mats
    assert "Q_2" in mats
    assert "Q_1" not in mats
    p = mats["P"]
    assert p.shape[1] > 200
    assert p.values.shape[1] <= 4


def test_cli_names_the_intermediates_with_heads_from_one(model: Path, capsys) -> None:
    source = "You love me."
    assert main(["walkthrough", "--checkpoint", str(model), "--source", source]) == 0
    out = capsys.readouterr().out
    for text in ("Step 1. Encoder", "Step 14. Softmax", "The loss", f"“{source}”"):
        assert text in out
    for name in ("X_E  (", "M_E  (", "Z_E  (", "X_D  (", "Z_D  (", "L  (", "P  (", "M  ("):
        assert name in out, name
    assert "✓ Q_1 = X W_Q1" in out
    assert "✓ Q_2 = X W_Q2" in out
    assert "✓ Q_3" not in out
    assert "Heads 3, 4: not shown" in out
    assert "(layer 1 of 2)" in out
    assert "(layer 2 of 2)" in out
    assert "W_Q1  (16×4)" in out  # the whole shape, while 8 rows are shown
    assert "✓ Q_0" not in out
    assert "head 0" not in out.lower()
    assert "▁love" in out  # the model's BPE pieces are the rows


def test_cli_chooses_heads_and_writes_chinese_and_html(model: Path, tmp_path, capsys) -> None:
    argv = ["walkthrough", "--checkpoint", str(model), "--heads", "2,4", "--cols", "3"]
    assert main([*argv, "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "第 1 步" in out
    assert "第 14 步" in out
    assert "小结" in out
    assert "第 2 个头" in out
    assert "第 4 个头" in out
    assert "第 1、3 个头：没有显示" in out
    assert "✓ Q_2 = X W_Q2" in out
    assert "✓ Q_1" not in out
    assert "Step 1." not in out
    page = tmp_path / "w.html"
    assert main([*argv, "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert all(f'id="{s}"' in html for s in STEPS)
    assert '<td class="more">…</td>' in html  # columns left out
    assert "Heads 1, 3: not shown" in html
    assert "checks passed" in capsys.readouterr().out


def test_a_checkpoint_directory_works_and_the_toy_takes_heads_too(model: Path, tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(model.read_bytes())
    cfg = WalkthroughConfig(source="I see you.", lang="zh")
    assert build_trained(ckpt, cfg).checks
    whole, part = build(WalkthroughConfig()), build(WalkthroughConfig(), View(heads=(2,)))
    assert len(part.checks) == len(whole.checks)  # head 1 is proved though not shown


def test_a_model_outside_the_paper_is_refused(tmp_path) -> None:
    path = train_tiny(tmp_path / "pre.safetensors", norm_first=True)
    with pytest.raises(UserError, match="norm_first=True"):
        TrainedExample.load(path)
