"""beam_search's per-step record: the live, finished and pruned hypotheses and the stopping bound.

The record must describe what the search did (checked on a scripted step function whose beam
is worked out by hand) and must not change what it returns (checked on many scripted searches).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiayn.config import DecodeConfig
from aiayn.data import EOS
from aiayn.decode import BeamStep, beam_search, greedy_search, length_penalty, search
from tests.decode_support import PrefixLM, table_lm

A, B_ = 3, 4
TABLE = {  # the worked example of test_decode.test_scripted_probabilities_give_known_hypotheses
    (): {A: 0.5, B_: 0.46, EOS: 0.04},
    (A,): {EOS: 0.9, A: 0.1},
    (B_,): {B_: 0.95, EOS: 0.05},
    (B_, B_): {EOS: 1.0},
    (A, A): {EOS: 1.0},
}


def test_record_of_the_worked_example() -> None:
    # Beam 3, alpha 0: step 1 keeps a, b live and finishes [EOS]; step 2 has 2 open slots:
    # [a EOS] finishes, [b b] lives, [a a] (0.05) has no slot; step 3 (max length) finishes
    # [b b EOS].
    record: list[list[BeamStep]] = []
    got = beam_search(table_lm(TABLE), [3], beam=3, alpha=0.0, nbest=3, record=record)
    assert len(record) == 1
    steps = record[0]
    assert [s.t for s in steps] == [1, 2, 3]
    s1 = steps[0]
    assert s1.live_before == [([], 0.0)]
    assert [(c["tokens"], c["status"]) for c in s1.candidates] == [
        ([A], "live"),
        ([B_], "live"),
        ([EOS], "finished"),
    ]
    assert s1.candidates[0]["logprob"] == pytest.approx(math.log(0.5))
    assert s1.finished_total == 1
    s2 = steps[1]
    assert [tokens for tokens, _ in s2.live_before] == [[A], [B_]]
    assert [(c["tokens"], c["status"]) for c in s2.candidates] == [
        ([A, EOS], "finished"),
        ([B_, B_], "live"),
        ([A, A], "no slot"),
    ]
    assert s2.dropped == []
    assert [c["tokens"] for c in steps[2].candidates] == [[B_, B_, EOS]]
    assert steps[2].candidates[0]["status"] == "finished"
    assert not any(s.stop for s in steps)
    assert steps[-1].finished_total == 3
    finished = [c["tokens"] for s in steps for c in s.candidates if c["status"] == "finished"]
    assert sorted(map(tuple, finished)) == sorted(tuple(h.tokens) for h in got[0])


def test_record_scores_and_bound() -> None:
    record: list[list[BeamStep]] = []
    beam_search(table_lm(TABLE), [3], beam=3, alpha=0.6, nbest=1, record=record)
    for s in record[0]:
        for c in s.candidates:
            assert c["lp"] == pytest.approx(length_penalty(s.t, 0.6))
            assert c["score"] == pytest.approx(c["logprob"] / c["lp"])
        if math.isfinite(s.best_live):
            assert s.bound == pytest.approx(s.best_live / length_penalty(s.max_len, 0.6))


def test_record_names_the_early_stop() -> None:
    # EOS 0.99 first: after one step nothing live can beat [EOS]: the step says stop, its live
    # candidates are "stopped", and the bound is below the threshold.
    import torch

    def step(prefix: torch.Tensor, origin: torch.Tensor | None) -> torch.Tensor:
        out = torch.full((prefix.size(0), 5), 0.005 / 3)  # (N, V)
        out[:, EOS], out[:, A] = 0.99, 0.005
        return out.log()

    record: list[list[BeamStep]] = []
    got = beam_search(step, [40], beam=4, alpha=0.6, record=record)
    assert got[0][0].tokens == [EOS]
    (only,) = record[0]
    assert only.stop
    assert only.bound <= only.threshold
    assert only.threshold == pytest.approx(math.log(0.99), rel=1e-5)
    statuses = [c["status"] for c in only.candidates]
    assert statuses[0] == "finished"
    assert set(statuses[1:]) == {"stopped"}


def test_record_names_pruned_lines() -> None:
    # Beam 2 on the worked example: after step 1 (a, b live), step 2's best two extensions are
    # [a EOS] and [b b]; [a a] is beyond the beam. At step 3 only [b b] is left.
    record: list[list[BeamStep]] = []
    beam_search(table_lm(TABLE), [4], beam=2, alpha=0.0, nbest=1, record=record)
    s2 = record[0][1]
    assert [c["tokens"] for c in s2.candidates] == [[A, EOS], [B_, B_]]
    # A line none of whose extensions survives is listed as dropped: scripted below.
    table = {(): {A: 0.55, B_: 0.45}, (A,): {A: 0.6, EOS: 0.4}, (B_,): {A: 0.4, EOS: 0.3, B_: 0.3}}
    table.update({(A, A): {EOS: 1.0}, (B_, A): {EOS: 1.0}})
    record = []
    beam_search(table_lm(table), [5], beam=2, alpha=0.0, nbest=2, record=record)
    s2 = record[0][1]
    assert [tokens for tokens, _ in s2.live_before] == [[A], [B_]]
    assert all(c["parent"] == 0 for c in s2.candidates)  # both slots extend [a]
    assert s2.dropped == [1]  # [b] is pruned with its whole line


@given(
    key=st.integers(0, 1000),
    eos_bias=st.floats(-2, 3),
    K=st.integers(1, 5),
    alpha=st.sampled_from([0.0, 0.6, 1.5]),
)
def test_recording_changes_nothing(key, eos_bias, K, alpha) -> None:
    keys, lens = [key, key + 1, key + 5], [4, 1, 7]
    plain = beam_search(PrefixLM(keys, 9, eos_bias=eos_bias), lens, K, alpha, nbest=K)
    record: list[list[BeamStep]] = []
    recorded = beam_search(
        PrefixLM(keys, 9, eos_bias=eos_bias), lens, K, alpha, nbest=K, record=record
    )
    assert recorded == plain
    assert len(record) == 3
    for steps, hyps in zip(record, plain, strict=True):
        finished = sorted(
            tuple(c["tokens"]) for s in steps for c in s.candidates if c["status"] == "finished"
        )
        assert set(map(tuple, (h.tokens for h in hyps))) <= set(finished)
        assert [s.t for s in steps] == list(range(1, len(steps) + 1))


def test_search_records_beam_one_as_greedy() -> None:
    lm = PrefixLM([7, 8], 9, eos_bias=0.5)
    record: list[list[BeamStep]] = []
    got = search(lm, [6, 6], DecodeConfig(beam=1), record=record)
    want = greedy_search(PrefixLM([7, 8], 9, eos_bias=0.5), [6, 6])
    assert [h[0].tokens for h in got] == [h[0].tokens for h in want]
    assert [h[0].score for h in got] == pytest.approx([h[0].score for h in want], abs=1e-6)
    assert all(steps for steps in record)
