"""Greedy and beam search (section 6.1): oracles, scripted step functions, two paths agree."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aiayn import ModelConfig, Transformer
from aiayn.config import DecodeConfig
from aiayn.data import BOS, EOS, PAD, collate
from aiayn.decode import (
    Hypothesis,
    beam_search,
    best_possible_score,
    greedy_search,
    length_penalty,
    max_lengths,
    model_step_fn,
    search,
)
from tests.decode_support import PrefixLM, table_lm


def check_hypothesis(h: Hypothesis, max_len: int, eos: int = EOS, banned=(PAD, BOS)) -> None:
    assert h.tokens[-1] == eos  # exactly one EOS, at the end
    assert h.tokens.count(eos) == 1
    assert not set(h.tokens) & set(banned)
    assert 1 <= len(h.tokens) <= max_len
    assert h.logprob <= 0
    assert math.isfinite(h.score)


# Length penalty (6.1) ----------------------------------------------------------------------


def test_length_penalty_anchors() -> None:
    # spec/paper.md test anchors: lp(Y) = ((5 + |Y|) / 6)^0.6
    assert length_penalty(1) == pytest.approx(1.0, abs=1e-12)
    assert length_penalty(10) == pytest.approx(1.7329, abs=1e-4)
    assert length_penalty(20) == pytest.approx(2.3544, abs=1e-4)
    assert length_penalty(10, 0.6, "fairseq") == pytest.approx(10**0.6)
    assert length_penalty(10, 0.6, "none") == 1.0
    t = length_penalty(torch.tensor([1, 10, 20]))
    assert t.tolist() == pytest.approx([1.0, 1.7329, 2.3544], abs=1e-4)
    with pytest.raises(ValueError, match="kind"):
        length_penalty(3, 0.6, "linear")  # type: ignore[arg-type]


@given(
    logprob=st.floats(-50, 0),
    drop=st.floats(0, 20),
    t=st.integers(1, 60),
    extra=st.integers(0, 60),
    alpha=st.floats(0, 2),
    kind=st.sampled_from(["gnmt", "fairseq", "none"]),
)
def test_best_possible_score_bounds_every_completion(logprob, drop, t, extra, alpha, kind) -> None:
    # A completion of a live hypothesis (t tokens so far) has logprob - drop and a length in
    # t + 1 .. max_len; its score never exceeds the bound.
    max_len = t + 1 + extra
    bound = best_possible_score(logprob, max_len, alpha, kind)
    for length in range(t + 1, max_len + 1):
        assert (logprob - drop) / length_penalty(length, alpha, kind) <= bound + 1e-12


def test_current_length_is_not_a_bound() -> None:
    # The trap: logprob / lp(current length) underestimates what a longer completion reaches.
    logprob, t, max_len = -1.0, 2, 30
    wrong = logprob / length_penalty(t)
    assert (logprob - 0.01) / length_penalty(max_len) > wrong
    assert best_possible_score(logprob, max_len) >= (logprob - 0.01) / length_penalty(max_len)


def test_max_lengths() -> None:
    src = torch.tensor([[5, 6, 7, 2], [5, 2, 0, 0], [2, 0, 0, 0]])
    assert max_lengths(src).tolist() == [54, 52, 51]  # |X| + 50, EOS counted in |X|
    assert max_lengths(src, 2.0, 0).tolist() == [8, 4, 2]
    assert max_lengths(src, 0.0, 0).tolist() == [1, 1, 1]  # room for EOS at least


# Oracles ----------------------------------------------------------------------------------


def test_scripted_probabilities_give_known_hypotheses() -> None:
    # V = {PAD, BOS, EOS, a=3, b=4}. After BOS: a 0.5, b 0.46, EOS 0.04.
    # After a: EOS 0.9, a 0.1. After b: b 0.95, EOS 0.05. After a a or b b: EOS 1.0.
    a, b = 3, 4
    table = {
        (): {a: 0.5, b: 0.46, EOS: 0.04},
        (a,): {EOS: 0.9, a: 0.1},
        (b,): {b: 0.95, EOS: 0.05},
        (b, b): {EOS: 1.0},
        (a, a): {EOS: 1.0},
    }
    # By hand, alpha = 0 (plain log-probabilities):
    #   [a EOS] 0.45   [b b EOS] 0.437   [a a EOS] 0.05   [EOS] 0.04   [b EOS] 0.023
    # Beam 3: step 1 takes a, b and [EOS] (finished); step 2 has 2 open slots: [a EOS] (ends)
    # and [b b]; step 3 is the maximum length: [b b EOS].
    got = beam_search(table_lm(table), [3], beam=3, alpha=0.0, nbest=3)[0]
    assert [h.tokens for h in got] == [[a, EOS], [b, b, EOS], [EOS]]
    assert [h.logprob for h in got] == pytest.approx([math.log(p) for p in (0.45, 0.437, 0.04)])
    # Beam 2: step 1 keeps a and b; step 2 takes [a EOS] 0.45 and [b b] 0.437.
    got = beam_search(table_lm(table), [3], beam=2, alpha=0.0, nbest=2)[0]
    assert [h.tokens for h in got] == [[a, EOS], [b, b, EOS]]
    # Greedy: a, then EOS.
    g = greedy_search(table_lm(table), [3], alpha=0.0)[0][0]
    assert g.tokens == [a, EOS]
    assert g.logprob == pytest.approx(math.log(0.45))
    # alpha = 0.6 divides by lp(|Y|): [b b EOS] (|Y| = 3) overtakes [a EOS] (|Y| = 2):
    # log 0.437 / lp(3) = -0.6965 > log 0.45 / lp(2) = -0.7280.
    got = beam_search(table_lm(table), [3], beam=3, alpha=0.6, nbest=3)[0]
    scores = {tuple(h.tokens): h.score for h in got}
    assert scores[(b, b, EOS)] == pytest.approx(math.log(0.437) / ((5 + 3) / 6) ** 0.6)
    assert scores[(a, EOS)] == pytest.approx(math.log(0.45) / ((5 + 2) / 6) ** 0.6)
    assert got[0].tokens == [b, b, EOS]


def brute_force(lm: PrefixLM, key: int, max_len: int, words, eos, bos, alpha, kind):
    """Every output sequence (at most max_len tokens, EOS included) with its score."""
    out = []
    for n in range(max_len):
        for ys in itertools.product(words, repeat=n):
            seq = [*ys, eos]
            logprob = 0.0
            for i, y in enumerate(seq):
                logprob += torch.log_softmax(lm.scores(key, [bos, *seq[:i]]), -1)[y].item()
            out.append((logprob / length_penalty(len(seq), alpha, kind), seq, logprob))
    return sorted(out, key=lambda x: -x[0])


@given(
    key=st.integers(0, 10_000),
    max_len=st.integers(1, 4),
    alpha=st.sampled_from([0.0, 0.6, 1.5]),
    kind=st.sampled_from(["gnmt", "fairseq"]),
    eos_bias=st.sampled_from([-2.0, 0.0, 2.0]),
)
def test_wide_beam_is_exhaustive_on_three_tokens(key, max_len, alpha, kind, eos_bias) -> None:
    # Vocabulary {EOS=0, 1, 2}; BOS is id 3, only ever in the prefix. A beam at least as wide
    # as the number of sequences (2^max_len - 1) finds them all, with the brute-force scores.
    eos, bos, V, K = 0, 3, 3, 2**max_len
    lm = PrefixLM([key], V, eos_bias=eos_bias, eos=eos)
    exact = brute_force(lm, key, max_len, (1, 2), eos, bos, alpha, kind)
    kw = {"alpha": alpha, "penalty": kind, "eos": eos, "bos": bos, "banned": ()}
    got = beam_search(PrefixLM([key], V, eos_bias=eos_bias, eos=eos), [max_len], K, nbest=K, **kw)
    got = got[0]
    assert len(got) == len(exact)
    assert sorted(tuple(h.tokens) for h in got) == sorted(tuple(s) for _, s, _ in exact)
    assert [h.score for h in got] == pytest.approx([s for s, _, _ in exact], abs=1e-5)
    # With early termination (nbest 1) the best is still the exact best.
    best = beam_search(PrefixLM([key], V, eos_bias=eos_bias, eos=eos), [max_len], K, **kw)[0][0]
    assert best.score == pytest.approx(exact[0][0], abs=1e-5)


# Termination -----------------------------------------------------------------------------


def long_path_lm(long: int):
    """After BOS: EOS 0.6, a 0.4. After a: a until the prefix has `long` tokens, then EOS."""
    a = 3

    def step(prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        out = torch.full((prefix.size(0), 5), 1e-9)  # (N, V)
        for n, p in enumerate(prefix[:, 1:].tolist()):
            if not p:
                out[n, EOS], out[n, a] = 0.6, 0.4
            elif len(p) < long:
                out[n, a] = 1.0
            else:
                out[n, EOS] = 1.0
        return out.log()  # (N, V)

    return step


def test_early_termination_bound_does_not_stop_too_early() -> None:
    # [EOS] scores log 0.6 = -0.51 at step 1. The live [a] has logprob log 0.4 = -0.92; by the
    # current length's penalty (-0.92 / lp(1) or lp(2) = -0.84) it looks hopeless, but
    # [a]*19 EOS (|Y| = 20) scores -0.92 / lp(20) = -0.39 and wins. Stopping at step 1 misses it.
    got = beam_search(long_path_lm(19), [30], beam=2, alpha=0.6)[0][0]
    assert got.tokens == [3] * 19 + [EOS]
    assert got.score == pytest.approx(math.log(0.4) / length_penalty(20), abs=1e-4)
    assert got.score > math.log(0.6)


def test_early_termination_stops_when_nothing_can_win() -> None:
    # EOS first with 0.99: no live hypothesis (logprob <= log 0.01) can reach -0.01 even with
    # lp(max_len); the search stops after one step instead of running to max_len.
    a = 3
    calls = []

    def step(prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        calls.append(prefix.size(1))
        out = torch.full((prefix.size(0), 5), 0.005 / 3)  # (N, V)
        out[:, EOS], out[:, a] = 0.99, 0.005
        return out.log()

    got = beam_search(step, [40], beam=4, alpha=0.6)[0]
    assert got[0].tokens == [EOS]
    assert calls == [1]
    # With nbest = 4 every slot must finish: the search runs until all have ended.
    calls.clear()
    got = beam_search(step, [40], beam=4, alpha=0.6, nbest=4)[0]
    assert len(got) == 4
    assert len(calls) > 1


def test_nbest_full_at_max_length() -> None:
    # EOS is nearly impossible: every hypothesis reaches the maximum length and is finished
    # there with exactly one EOS; the n-best list is still full.
    lm = PrefixLM([1, 2], 8, eos_bias=-30.0)
    got = beam_search(lm, [6, 3], beam=4, nbest=4)
    for hyps, m in zip(got, (6, 3), strict=True):
        assert len(hyps) == 4
        assert len({tuple(h.tokens) for h in hyps}) == 4
        for h in hyps:
            check_hypothesis(h, m)
            assert len(h.tokens) == m
    g = greedy_search(PrefixLM([1, 2], 8, eos_bias=-30.0), [6, 3])
    assert [len(h[0].tokens) for h in g] == [6, 3]


@given(key=st.integers(0, 1000), eos_bias=st.floats(-3, 3), K=st.integers(1, 5))
def test_every_hypothesis_ends_with_one_eos(key, eos_bias, K) -> None:
    lens = [1, 2, 4, 7]
    keys = [key, key + 1, key + 2, key + 3]
    got = beam_search(PrefixLM(keys, 9, eos_bias=eos_bias), lens, K, nbest=K)
    for hyps, m in zip(got, lens, strict=True):
        assert len(hyps) == (1 if m == 1 else K)  # max length 1 allows only [EOS]
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        for h in hyps:
            check_hypothesis(h, m)


# Two paths agree ---------------------------------------------------------------------------


@given(key=st.integers(0, 1000), eos_bias=st.floats(-2, 4), alpha=st.sampled_from([0.0, 0.6]))
def test_beam_one_equals_greedy_scripted(key, eos_bias, alpha) -> None:
    keys, lens = [key, key + 7, key + 9], [3, 9, 6]
    b = beam_search(PrefixLM(keys, 10, eos_bias=eos_bias), lens, beam=1, alpha=alpha)
    g = greedy_search(PrefixLM(keys, 10, eos_bias=eos_bias), lens, alpha=alpha)
    assert [h[0].tokens for h in b] == [h[0].tokens for h in g]
    assert [h[0].score for h in b] == pytest.approx([h[0].score for h in g], abs=1e-6)


def test_batched_equals_one_by_one_scripted() -> None:
    keys, lens = [11, 12, 13, 14], [5, 2, 8, 1]
    together = beam_search(PrefixLM(keys, 7, eos_bias=1.0), lens, beam=3, nbest=3)
    for k, m, hyps in zip(keys, lens, together, strict=True):
        alone = beam_search(PrefixLM([k], 7, eos_bias=1.0), [m], beam=3, nbest=3)[0]
        assert alone == hyps


def tiny_model(seed: int = 0, vocab: int = 24) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab, d_model=32, n_heads=4, d_ff=64, n_layers=2, dropout=0.0)
    return Transformer(cfg).eval()


def eos_biased(step, bias: float):
    """Make a random model end sentences at varied lengths (a bias on the EOS logit)."""

    def biased(prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        out = step(prefix, origin).clone()  # (N, V)
        out[:, EOS] += bias
        return out

    return biased


SOURCES = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16, 17, 18], [19]]


def model_search(model, sources, cached, beam, nbest=1, bias=3.0, b=6):
    src = collate([(s, []) for s in sources]).src  # (B, S)
    step = eos_biased(model_step_fn(model, src, cached=cached), bias)
    cfg = DecodeConfig(beam=beam, nbest=nbest, max_len_b=b)
    return search(step, max_lengths(src, cfg.max_len_a, cfg.max_len_b), cfg)


def same(x: list[list[Hypothesis]], y: list[list[Hypothesis]], tol: float = 1e-5) -> None:
    assert [[h.tokens for h in hs] for hs in x] == [[h.tokens for h in hs] for hs in y]
    for hx, hy in zip(x, y, strict=True):
        assert [h.score for h in hx] == pytest.approx([h.score for h in hy], abs=tol)
        assert [h.logprob for h in hx] == pytest.approx([h.logprob for h in hy], abs=tol)


def test_cached_equals_uncached_on_a_model() -> None:
    model = tiny_model()
    cached = model_search(model, SOURCES, cached=True, beam=4, nbest=4)
    full = model_search(model, SOURCES, cached=False, beam=4, nbest=4)
    same(cached, full)
    lengths = {len(h.tokens) for hs in cached for h in hs}
    assert len(lengths) > 2  # the test covers hypotheses of several lengths
    for hs, s in zip(cached, SOURCES, strict=True):
        for h in hs:
            check_hypothesis(h, len(s) + 1 + 6)
    same(
        model_search(model, SOURCES, cached=True, beam=1),
        model_search(model, SOURCES, cached=False, beam=1),
    )


def test_beam_one_equals_greedy_on_a_model() -> None:
    model = tiny_model(1)
    src = collate([(s, []) for s in SOURCES]).src  # (B, S)
    limit = max_lengths(src, 1.0, 6)
    g = greedy_search(eos_biased(model_step_fn(model, src), 3.0), limit)
    b = beam_search(eos_biased(model_step_fn(model, src), 3.0), limit, beam=1)
    same(g, b)


def test_batched_equals_one_by_one_on_a_model() -> None:
    model = tiny_model(2)
    together = model_search(model, SOURCES, cached=True, beam=4, nbest=2)
    alone = [model_search(model, [s], cached=True, beam=4, nbest=2)[0] for s in SOURCES]
    same(together, alone)


def test_model_step_fn_refuses_training_mode() -> None:
    model = tiny_model().train()
    with pytest.raises(ValueError, match="eval"):
        model_step_fn(model, torch.tensor([[5, 2]]))
