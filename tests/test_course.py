"""The course's checker (aiayn.course): right answers pass, known mistakes are named, and a bad
learner function gets one or two sentences, never a traceback.
"""

from __future__ import annotations

import math
import time

import pytest
import torch

from aiayn import course
from aiayn.course import check, exercises, solutions
from aiayn.course.messages import MISTAKES, TEXTS

EXERCISES = exercises()
MISTAKE_CASES = [(name, m) for name, ex in EXERCISES.items() for m in ex.mistakes]


def test_the_course_has_its_counts() -> None:
    assert len(EXERCISES) >= 20
    keys = {m.key for ex in EXERCISES.values() for m in ex.mistakes}
    assert len(keys) >= 8
    assert {ex.notebook for ex in EXERCISES.values()} == set(range(1, 9))


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_solution_passes(name: str) -> None:
    verdict = check(name, getattr(solutions, name), lang="en")
    assert verdict.ok, verdict.message
    assert verdict.message.startswith(f"✓ {name} is right")


@pytest.mark.parametrize(
    ("name", "mistake"), MISTAKE_CASES, ids=[f"{n}-{m.key}" for n, m in MISTAKE_CASES]
)
def test_each_listed_mistake_is_named(name: str, mistake) -> None:
    for lang in ("en", "zh"):
        verdict = check(name, mistake.fn, lang=lang)
        assert not verdict.ok
        assert verdict.mistake == mistake.key, verdict.message
        assert MISTAKES[mistake.key][lang] in verdict.message


def test_every_message_and_mistake_has_both_languages() -> None:
    assert set(TEXTS["en"]) == set(TEXTS["zh"])
    used = {m.key for ex in EXERCISES.values() for m in ex.mistakes}
    assert used <= set(MISTAKES)
    assert all(set(v) == {"en", "zh"} for v in MISTAKES.values())
    assert all(set(ex.hint) == {"en", "zh"} for ex in EXERCISES.values())


# --- The eight known mistakes of issue 48, each written as a learner would write it -------------


def _mha_sqrt_d_model(X, W_Q, W_K, W_V, W_O, h):
    B, L, d_model = X.shape
    split = lambda t: t.view(B, L, h, -1).transpose(1, 2)  # noqa: E731
    Q, K, V = split(X @ W_Q), split(X @ W_K), split(X @ W_V)
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_model), dim=-1)  # the note's step 2
    return (A @ V).transpose(1, 2).reshape(B, L, -1) @ W_O


def _mask_after_softmax(Q, K, V, keep):
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    A = A.masked_fill(~keep, 0.0)  # too late: the row no longer sums to 1
    return A @ V, A


def _layer_norm_over_tokens(x, gamma, beta, eps):
    mu = x.mean(dim=-2, keepdim=True)
    var = x.var(dim=-2, keepdim=True, unbiased=False)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def _pe_sin_cos_side_by_side(n_positions, d_model):
    pos = torch.arange(n_positions)[:, None].float()
    angle = pos / 10000 ** (torch.arange(0, d_model, 2).float() / d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)


def _pe_cos_first(n_positions, d_model):
    pe = solutions.positional_encoding(n_positions, d_model)
    return pe.view(n_positions, -1, 2).flip(-1).reshape(n_positions, d_model)


def _embedding_unscaled(ids, E):
    return E[ids] + solutions.positional_encoding(ids.shape[1], E.shape[1])


def _loss_counting_padding(logits, target, eps, pad_id):
    V = logits.shape[-1]
    logp = torch.log_softmax(logits, dim=-1)
    q = torch.full_like(logp, eps / (V - 1)).scatter(-1, target[..., None], 1 - eps)
    return -(q * logp).sum(dim=-1).mean()  # padding rows counted too


def _causal_without_diagonal(T):
    return torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)


def _beam_step_penalising_all(logprob, logp, t, alpha):
    K, V = logp.shape
    new, idx = (logprob[:, None] + logp).view(-1).topk(K)
    return new, idx // V, idx % V, new / ((5 + t) / 6) ** alpha  # live ones penalised too


@pytest.mark.parametrize(
    ("name", "fn", "key"),
    [
        ("multi_head_attention", _mha_sqrt_d_model, "sqrt_d_model"),
        ("masked_attention", _mask_after_softmax, "mask_after_softmax"),
        ("layer_norm", _layer_norm_over_tokens, "layernorm_axis"),
        ("positional_encoding", _pe_sin_cos_side_by_side, "pe_not_interleaved"),
        ("positional_encoding", _pe_cos_first, "pe_swapped"),
        ("input_embedding", _embedding_unscaled, "not_scaled"),
        ("label_smoothed_loss", _loss_counting_padding, "smoothing_on_padding"),
        ("causal_mask", _causal_without_diagonal, "causal_hides_diagonal"),
        ("beam_step", _beam_step_penalising_all, "lp_on_unfinished"),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_the_issues_known_mistakes_are_named(name: str, fn, key: str) -> None:
    verdict = check(name, fn, lang="en")
    assert verdict.mistake == key, verdict.message
    assert "Known mistake: " + MISTAKES[key]["en"] in verdict.message
    assert verdict.message.count(". ") <= 3  # two sentences (the names hold a semicolon)


def test_the_note_erratum_reads_in_chinese() -> None:
    verdict = check("multi_head_attention", _mha_sqrt_d_model, lang="zh")
    assert "这是常见错误：除以了 sqrt(d_model) 而不是 sqrt(d_k)" in verdict.message
    assert "在笔记的例句上" in verdict.message


# --- Bad learner functions: one or two sentences, no traceback -----------------------------------


def _no_traceback(verdict) -> None:
    assert not verdict.ok
    assert "Traceback" not in verdict.message
    assert 'File "' not in verdict.message
    assert verdict.message.count("\n") == 0


def test_a_stub_is_told_what_to_write() -> None:
    def layer_norm(x, gamma, beta, eps):
        raise NotImplementedError

    verdict = check("layer_norm", layer_norm, lang="en")
    _no_traceback(verdict)
    assert verdict.kind == "todo"
    assert "replace `raise NotImplementedError` with LN(x) = gamma" in verdict.message


def test_a_function_that_raises_gets_its_error_and_line() -> None:
    def layer_norm(x, gamma, beta, eps):
        return x @ beta[:2]  # a shape error inside torch

    verdict = check("layer_norm", layer_norm, lang="en")
    _no_traceback(verdict)
    assert verdict.kind == "raised"
    assert "raised RuntimeError" in verdict.message
    assert "at line" in verdict.message


def test_wrong_type_nan_and_shape_are_named() -> None:
    assert check("layer_norm", lambda x, g, b, e: x.tolist(), lang="en").kind == "type"
    nan = check("layer_norm", lambda x, g, b, e: x * float("nan"), lang="en")
    _no_traceback(nan)
    assert nan.kind == "nan"
    assert "NaN at index [0, 0, 0]" in nan.message
    shape = check("layer_norm", lambda x, g, b, e: x[0], lang="en")
    _no_traceback(shape)
    assert "has shape (4, 6), expected (1, 4, 6)" in shape.message
    pair = check("masked_attention", lambda q, k, v, keep: q, lang="en")
    assert pair.kind == "type"
    assert "tuple of 2 tensors" in pair.message
    assert check("lrate", lambda s, d, w: "0.001", lang="en").kind == "type"


def test_a_function_that_never_ends_is_stopped() -> None:
    def layer_norm(x, gamma, beta, eps):
        while True:
            time.sleep(0.01)

    verdict = check("layer_norm", layer_norm, lang="en", limit=0.3)
    _no_traceback(verdict)
    assert verdict.kind == "timeout"
    assert "still running after 0.3 s" in verdict.message


def test_not_a_function_and_an_unknown_name() -> None:
    assert check("layer_norm", 3, lang="en").kind == "type"
    verdict = check("layer_nrom", solutions.layer_norm, lang="en")
    assert verdict.kind == "unknown"
    assert "layer_norm" in verdict.message


def test_a_learner_editing_its_input_in_place_does_not_change_the_next_check() -> None:
    def layer_norm(x, gamma, beta, eps):
        out = solutions.layer_norm(x, gamma, beta, eps)
        x.zero_()
        gamma.zero_()
        return out

    assert check("layer_norm", layer_norm, lang="en").ok
    assert check("layer_norm", solutions.layer_norm, lang="en").ok


def test_the_language_follows_the_notebooks_folder(tmp_path, monkeypatch) -> None:
    (tmp_path / "zh").mkdir()
    monkeypatch.delenv("AIAYN_COURSE_LANG", raising=False)
    monkeypatch.chdir(tmp_path / "zh")
    assert course.current_lang() == "zh"
    assert "写对了" in check("causal_mask", solutions.causal_mask).message
    monkeypatch.setenv("AIAYN_COURSE_LANG", "en")
    assert course.current_lang() == "en"
    course.set_lang("zh")
    try:
        assert course.current_lang() == "zh"
    finally:
        course.set_lang(None)
    with pytest.raises(ValueError, match="lang"):
        course.set_lang("fr")
