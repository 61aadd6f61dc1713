"""aiayn.table3.stats and findings: the paired t-interval, its verdicts, and the findings table."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiayn.table3 import findings, report, stats
from aiayn.table3.stats import Interval, decide, interval, t_cdf, t_quantile
from tests.bad_inputs_table3 import record

# Closed forms of Student's t quantile: df 1 is Cauchy, tan(pi (p - 1/2)); df 2 is
# (2p - 1) / sqrt(2 p (1 - p)). The bisection on the A&S series must give both.


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_is_the_closed_form_for_one_and_two_degrees_of_freedom(p) -> None:
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(-30, 30), st.integers(1, 40))
def test_t_cdf_is_symmetric_and_rises_towards_the_normal(t, df) -> None:
    assert t_cdf(t, df) + t_cdf(-t, df) == pytest.approx(1.0, abs=1e-12)
    assert t_cdf(t + 0.5, df) >= t_cdf(t, df) - 1e-12
    normal = 0.5 * (1 + math.erf(abs(t) / math.sqrt(2)))
    assert t_cdf(abs(t), df) <= normal + 1e-12  # heavier tails than the normal


def test_the_95_percent_factor_falls_with_the_pairs() -> None:
    factors = [t_quantile(0.975, n - 1) for n in (2, 3, 4, 30)]
    assert [round(f, 2) for f in factors[:3]] == [12.71, 4.3, 3.18]
    assert factors[3] == pytest.approx(2.045, abs=1e-3)  # tables' t(0.975, 29)


def test_interval_is_the_mean_plus_minus_t_times_the_standard_error() -> None:
    iv = interval([0.1, 0.2, 0.3])
    half = t_quantile(0.975, 2) * 0.1 / math.sqrt(3)  # sd of 0.1, 0.2, 0.3 is 0.1
    assert (iv.mean, iv.lo, iv.hi, iv.n) == pytest.approx((0.2, 0.2 - half, 0.2 + half, 3))
    one = interval([0.4])
    assert one.n == 1
    assert math.isnan(one.lo)
    assert decide(one, "higher") == (stats.FEW, False)


@pytest.mark.parametrize(
    ("lo", "hi", "expect", "want"),
    [
        (0.1, 0.3, "higher", (stats.HOLDS, False)),
        (-0.3, -0.1, "higher", (stats.FAILS, False)),  # wholly on the other side: reversed
        (-0.1, 0.3, "higher", (stats.INCONCLUSIVE, False)),
        (-0.3, -0.1, "lower", (stats.HOLDS, False)),
        (0.01, 0.41, "higher", (stats.HOLDS, True)),  # 0.01 from 0 < 0.1 * half-width 0.2
        (-0.01, 0.39, "higher", (stats.INCONCLUSIVE, True)),  # just across 0: marginal too
        (-0.02, 0.02, "same", (stats.HOLDS, False)),  # inside the +-3% margin
        (-0.05, 0.02, "same", (stats.INCONCLUSIVE, False)),  # crosses the margin
        (0.1, 0.2, "same", (stats.FAILS, False)),  # wholly outside it
        (-0.028, 0.028, "same", (stats.HOLDS, True)),  # an end near the margin
    ],
)
def test_verdicts_are_read_from_the_interval(lo, hi, expect, want) -> None:
    margin = stats.MARGINS["ppl"] if expect == "same" else None
    assert decide(Interval((lo + hi) / 2, lo, hi, 3), expect, margin) == want


def test_the_equivalence_margin_is_three_percent_of_ppl() -> None:
    low, high = stats.MARGINS["ppl"]
    assert (math.exp(low), math.exp(high)) == pytest.approx((0.97, 1.03))


def test_stability_drops_each_seed_and_names_the_ones_that_move_the_verdict() -> None:
    assert stats.stability({1: 0.2, 2: 0.21}, "higher") == (False, [])  # 2 pairs: not checkable
    steady = {1: 0.20, 2: 0.21, 3: 0.19, 4: 0.20}
    assert stats.stability(steady, "higher") == (True, [])
    shaky = {1: 0.20, 2: 0.21, 3: 0.19, 4: -0.5}  # seed 4 alone makes it inconclusive
    checkable, moved = stats.stability(shaky, "higher")
    assert decide(interval(list(shaky.values())), "higher")[0] == stats.INCONCLUSIVE
    assert checkable
    assert moved == [(4, stats.HOLDS)]


def test_pairs_are_formed_by_seed_and_ppl_compared_in_logs() -> None:
    runs = stats.by_variation(
        [
            *[_record("base", 1, 10.0), _record("base", 2, 20.0), _record("base", 3, 5.0)],
            *[_record("C-n2", 1, 11.0, bleu=21.0), _record("C-n2", 2, 22.0, bleu=19.5)],
        ]
    )
    assert stats.paired(runs, "C-n2", "base", "ppl") == pytest.approx(
        {1: math.log(1.1), 2: math.log(1.1)}
    )  # base seed 3 has no partner: left out
    assert stats.paired(runs, "C-n2", "base", "bleu") == pytest.approx({1: 1.0, 2: -0.5})


def test_the_old_rule_moves_when_one_base_seed_is_dropped() -> None:
    """The issue's example: base seeds 15.13, 14.56, 15.52 (noise 0.96) and A-h1 -0.65: within
    noise; without base seed 2 the base spans only 0.39 and the difference exceeds it."""
    base = {1: 15.131, 2: 14.563, 3: 15.522}
    assert stats.range_stability([14.394, 14.459], base, "higher") == [2]
    assert stats.range_stability([14.394, 14.459], {1: 15.1, 2: 14.6}, "higher") == []


def _record(name, seed, ppl, bleu=20.0):
    return {"run": f"{name}-s{seed}", "name": name, "seed": seed, "dev_ppl": ppl, "dev_bleu": bleu}


def _table(seeds: dict[str, list[float]]) -> list[dict]:
    return [_record(n, s, p) for n, ps in seeds.items() for s, p in enumerate(ps, 1)]


def test_a_shared_seed_effect_is_removed_by_pairing() -> None:
    """Seed 1 raises every row's PPL: unpaired, the ranges swallow the difference; paired, the
    variation is 5% worse at every seed and the finding holds."""
    recs = _table({"base": [20.0, 10.0, 15.0], "A-h1": [21.0, 10.5]})
    (c,) = [c for c in report.check_findings(recs) if c["finding"].subject == "A-h1"]
    assert c["old"] == stats.NOISE
    assert c["verdict"] == stats.HOLDS
    assert c["intervals"]["ppl"].mean == pytest.approx(math.log(1.05))


def test_an_about_equal_finding_needs_its_interval_inside_the_margin() -> None:
    """Under the old rule a noisier base makes "about equal" easier; the margin does not."""
    noisy = _table({"base": [12.0, 18.0, 15.0], "E-learned": [14.0, 16.0]})
    (c,) = report.check_findings(noisy)
    assert c["old"] == stats.HOLDS  # -1.0 PPL within the base's range of 6
    assert c["verdict"] == stats.INCONCLUSIVE  # +16.7% and -11.1%: far beyond +-3%
    close = _table({"base": [12.0, 18.0, 15.0], "E-learned": [12.12, 18.18]})  # +1% each
    assert report.check_findings(close)[0]["verdict"] == stats.HOLDS


def test_the_findings_table_shows_both_rules_and_the_notes_say_what_moved() -> None:
    recs = _table({"base": [20.0, 10.0, 15.0], "A-h1": [21.0, 10.5], "D-drop0.2": [20.0, 10.0]})
    checked = report.check_findings(recs)
    for lang in ("en", "zh"):
        table = findings.findings_table(checked, lang)
        rows = [line for line in table.splitlines() if line.startswith("| A ")]
        assert len(rows) == 1
        cells = rows[0].split(" | ")
        assert cells[2] == "2"  # pairs
        assert cells[3] == "+5.0% [+5.0%, +5.0%]"
        assert len(table.splitlines()[0].split(" | ")) == len(cells)
    en = findings.findings_notes(checked)
    assert "A-h1 (PPL): within noise -> holds; the seeds' differences +5.0%, +5.0%" in en
    zh = findings.findings_notes(checked, "zh")
    assert "A-h1（PPL）：在噪声之内 → 成立" in zh


def test_the_changes_against_the_base_and_their_signs() -> None:
    seeds = {"base": [10.0, 20.0], "C-n2": [11.0, 22.0], "E-learned": [9.0, 18.0]}
    recs = [record(n, s, dev_ppl=p) for n, ps in seeds.items() for s, p in enumerate(ps, 1)]
    runs = stats.by_variation(recs)
    assert report.our_change(runs, "C-n2", "ppl") == pytest.approx(0.1)
    # the paper: C-n2 6.11 against 4.92 (+24.2%), E-learned 4.92 against 4.92 (not counted)
    agree, differ, flat = report.signs(recs)["ppl"]
    assert (agree, differ, flat) == (["C-n2"], [], ["E-learned"])
    lines = report.table(recs).splitlines()
    paper = next(line for line in lines if line.startswith("| C | paper | 2 |"))
    assert "| +24.2% | -8.1% |" in paper
    ours = next(line for line in lines if line.startswith("| C-n2 | ours"))
    assert "| +10.0% | +0.0% |" in ours
    assert "PPL in 1 of 1" in lines[-1]
    untrained = [{**r, "dev_bleu": 0.0} for r in recs]  # a few updates: no BLEU at all
    assert math.isnan(report.our_change(stats.by_variation(untrained), "C-n2", "bleu"))
    ours = next(x for x in report.table(untrained).splitlines() if x.startswith("| C-n2 | ours"))
    assert "| +10.0% |  |" in ours


# The committed run ----------------------------------------------------------------------------

COMMITTED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "table3"


def test_the_committed_report_holds_todays_tables_of_the_committed_results() -> None:
    """report.md's main table (but its bootstrap p-values), the sign count and the findings
    are what aiayn.table3 computes from results.jsonl today: rerun scripts/refresh-docs.py."""
    from aiayn.table3.results import read_results

    records = read_results(COMMITTED)
    md = (COMMITTED / "report.md").read_text(encoding="utf-8")
    without_p = re.sub(r" \(p [\d.]+\)", "", md)
    assert report.table(records) in without_p
    assert report.findings_table(report.check_findings(records)) in md
    plots = sorted(p.name for p in (COMMITTED / "plots").glob("*.png"))
    assert plots == [f"table3-{g}.png" for g in "ABCDE"]
    assert all(f"](plots/{name})" in md for name in plots)


@pytest.mark.parametrize(
    ("doc", "heading"),
    [("docs/table3.md", "## What the rerun says"), ("docs/zh/table3.md", "## 重跑说明了什么")],
)
def test_every_figure_the_docs_read_from_the_tables_is_in_them(doc, heading) -> None:
    """The prose under the heading quotes only figures of the generated block (the paired
    changes, intervals, BLEU), so a rerun that moves them fails here until the prose follows."""
    text = (COMMITTED.parents[2] / doc).read_text(encoding="utf-8")
    start = text.index("<!-- generated: scripts/refresh-docs.py table3 -->")
    block = text[start : text.index("<!-- /generated -->", start)]
    prose = text[text.index(heading) :]
    figures = re.findall(r"[+-]?\d+\.\d+%?", prose)
    assert len(figures) >= 20
    t_2_pairs = f"{t_quantile(0.975, 1):.2f}"
    missing = [f for f in figures if f not in block and f != t_2_pairs and f != "11.3"]
    assert missing == []  # 11.3: the zh page's "1/113,000" (11.3 万分之一), the cost table's
