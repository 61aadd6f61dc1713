"""The walkthrough: every step proves itself, a corrupted intermediate is caught, both languages.

Smoke tests run the CLI end to end; the proofs themselves are the walkthrough's own checks
(hand computation against ``aiayn.trace``), so these tests mostly make sure they can fail.
"""

from __future__ import annotations

import math
import string

import numpy as np
import pytest
import torch

from aiayn.cli import main
from aiayn.model import trace
from aiayn.walkthrough import Example, ProofError, WalkthroughConfig, build, prove
from aiayn.walkthrough import render_text as rt
from aiayn.walkthrough.doc import number
from aiayn.walkthrough.text_en import TEXT as EN
from aiayn.walkthrough.text_zh import TEXT as ZH

STEPS = [f"step-{i}" for i in range(1, 15)]
EXTRAS = ["example", "loss", "backward", "update", "positions", "differences", "summary"]


@pytest.fixture(scope="module")
def doc():
    return build(WalkthroughConfig())


def test_every_step_and_section_is_there_and_proved(doc) -> None:
    ids = [s.id for s in doc.sections]
    assert [i for i in ids if i in STEPS] == STEPS  # the note's order
    assert set(EXTRAS) <= set(ids)
    assert len(doc.checks) > 100
    assert all(c.diff <= c.tol for c in doc.checks)
    for s in doc.sections:
        if s.id.startswith("step-") and s.id not in ("step-1", "step-6"):
            assert any(type(b).__name__ == "Check" for b in s.blocks), s.id


def test_the_note_example_has_eight_words_and_shifted_targets() -> None:
    ex = Example.build(WalkthroughConfig())
    assert len(ex.vocab) == 8  # "6 dimensions to 8 word scores"
    assert ex.model.config.pad_id == ex.vocab.index("<s>")
    assert ex.tgt_in_words[1:] == ex.tgt_out_words[:-1]
    assert "<s>" not in ex.src_words + ex.tgt_out_words  # the pad id never needs masking
    assert ex.model.embedding.dtype == torch.float64


def _corrupt_and_prove(where: str) -> None:
    ex = Example.build(WalkthroughConfig())
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    target = {
        "step 1": lambda: tr.X_E,
        "step 2": lambda: tr.encoder[0]["attn"]["weights"],
        "step 3": lambda: tr.encoder[0]["H_E"],
        "step 4": lambda: tr.encoder[0]["F_E"],
        "step 5": lambda: tr.encoder[0]["Z_E"],
        "step 7": lambda: tr.decoder[0]["self_attn"]["scores"],
        "step 8": lambda: tr.decoder[0]["H_D"],
        "step 10": lambda: tr.decoder[0]["R_D_cross"],
        "step 12": lambda: tr.decoder[0]["Z_D"],
        "step 9": lambda: tr.decoder[0]["cross_attn"]["O"],
        "step 11": lambda: tr.decoder[0]["ffn"]["hidden"],
        "step 13": lambda: tr.L,
    }[where]()
    target.view(-1)[1] += 1e-6  # a tiny corruption, far above the tolerance in float64
    with pytest.raises(ProofError, match=where.replace(" ", " ") + r"\b"):
        prove(ex, tr)


@pytest.mark.parametrize("where", [f"step {i}" for i in (1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13)])
def test_a_corrupted_intermediate_is_detected(where: str) -> None:
    _corrupt_and_prove(where)


def test_the_layer_tables_are_the_notes_steps() -> None:
    from aiayn.walkthrough.layers import DECODER, ENCODER, FORMULAS

    ex = Example.build(WalkthroughConfig())
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    for table, layer, rec, steps in (
        (ENCODER, ex.model.encoder[0], tr.encoder[0], [2, 3, 4, 5]),
        (DECODER, ex.model.decoder[0], tr.decoder[0], [7, 8, 9, 10, 11, 12]),
    ):
        assert [s.step for s in table] == steps
        for s in table:
            assert hasattr(layer, s.module), s
            assert FORMULAS[s.step], s
            for key in s.keys.split():  # every value a step starts from or proves is traced
                assert key == "-" or key in rec or hasattr(tr, key), (s.step, key)


def test_the_uncorrupted_trace_proves() -> None:
    ex = Example.build(WalkthroughConfig())
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    assert prove(ex, tr).checks


def test_loss_rows_use_the_correct_tokens_probability(doc) -> None:
    loss = next(s for s in doc.sections if s.id == "loss")
    table = next(b for b in loss.blocks if type(b).__name__ == "Table")
    for row in table.rows[:-1]:  # the last row is the mean
        p_y, nll = float(row[3]), float(row[4])
        assert abs(math.exp(-nll) - p_y) <= 6e-4  # -log p(y_t), both shown with 3 decimals
        assert float(row[7]) >= p_y  # the row's max is at least p(y_t)
    means = table.rows[-1]
    assert float(means[8]) <= float(means[4])  # the note's reading understates the loss


def test_one_adam_step_lowers_the_loss_of_the_example() -> None:
    ex = Example.build(WalkthroughConfig())
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    from aiayn.walkthrough import texts, training
    from aiayn.walkthrough.doc import Prover
    from aiayn.walkthrough.steps import Steps

    st = Steps(ex, tr, Prover(), texts("en"))
    st.output()
    training.loss_section(st)
    training.backward_section(st)
    training.update_section(st)
    assert st.facts["loss_after"] < st.facts["loss"]


def test_english_and_chinese_texts_have_the_same_keys_and_placeholders() -> None:
    assert EN.keys() == ZH.keys()

    def fields(s: str) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(s) if f}

    for key in EN:
        assert fields(EN[key]) == fields(ZH[key]), key
        if key.endswith(".cols"):  # a table's header: the same number of cells
            assert len(EN[key].split(" | ")) == len(ZH[key].split(" | ")) > 1, key


def test_chinese_walkthrough_reads_in_chinese() -> None:
    text = rt.render(build(WalkthroughConfig(lang="zh")))
    assert "第 1 步" in text
    assert "第 14 步" in text
    assert "反向传播" in text
    assert "Step 1." not in text


@pytest.mark.parametrize(
    "kw",
    [
        {"d_model": 8, "n_heads": 4, "d_ff": 16, "n_layers": 2, "optimizer": "sgd", "lr": 0.5},
        {"source": "the cat sat on the mat", "target": "le chat", "seed": 3, "label_smoothing": 0},
    ],
)
def test_other_settings_also_prove(kw: dict) -> None:
    d = build(WalkthroughConfig(**kw))
    ids = [s.id for s in d.sections]
    assert set(STEPS) <= set(ids)
    if kw.get("n_layers") == 2:
        assert "step-2-layer-2" in ids
        assert "step-12-layer-2" in ids


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(ValueError, match="n_heads"):
        WalkthroughConfig(d_model=6, n_heads=4)


def test_tex_to_text_and_wrapping() -> None:
    assert rt.tex_to_text(r"\frac{1}{d}\sum_j x_j") == "1/d Σ_j x_j"
    assert rt.tex_to_text(r"\begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}") == (
        "{ 0 if j ≤ i; −∞ if j > i }"
    )
    lines = rt.wrap("这是一句很长的中文，" * 20, limit=40)
    assert all(rt.width(x) <= 40 for x in lines)
    assert not any(x.startswith("，") for x in lines)
    assert number(-0.0001, 3) == "0.000"
    assert number(-np.inf, 3) == "-∞"
    assert number(-np.inf, 3, minus="−") == "−∞"


def test_cli_prints_the_walkthrough(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["walkthrough", "--decimals", "2"]) == 0
    out = capsys.readouterr().out
    for title in ("Step 1. Encoder", "Step 14. Softmax", "Backpropagation", "One optimizer step"):
        assert title in out
    assert "✓ Q_1 = X W_Q1" in out
    assert "Positional encoding, as promised" in out


def test_cli_writes_html_and_rejects_bad_flags(tmp_path, capsys: pytest.CaptureFixture[str]):
    page = tmp_path / "walkthrough.html"  # into an existing directory (a missing one is refused)
    assert main(["walkthrough", "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert all(f'id="{s}"' in text for s in STEPS)
    assert main(["walkthrough", "--d-model", "5"]) == 2
    assert "d_model" in capsys.readouterr().err
    assert main(["walkthrough", "--source", "<s> hello"]) == 2


def test_the_report_style_sheet_is_package_data() -> None:
    import tomllib
    from pathlib import Path

    from aiayn.walkthrough import render_html

    root = Path(__file__).resolve().parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "report.css" in pyproject["tool"]["setuptools"]["package-data"]["aiayn.walkthrough"]
    assert "table.heat" in render_html.CSS  # the page's style is read from the file


def test_cli_reports_a_failed_proof(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    import aiayn.walkthrough as wt

    def broken(cfg: WalkthroughConfig, view: object = None):
        raise ProofError("step 2 (layer 1), head 1: Q_1 = X W_Q1: differs by 1e-3")

    monkeypatch.setattr(wt, "build", broken)
    assert main(["walkthrough"]) == 1
    assert "step 2" in capsys.readouterr().err
