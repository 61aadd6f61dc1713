"""Table 3's findings checked seed by seed: paired differences, their t-interval, the verdict.

For one seed every row of a results directory trains on the same batches, so the runs of two
variations with the same seed form a pair, and their difference is free of what that seed does
to every row alike (seed 1 has the higher dev PPL in most configurations). For a finding
"subject is higher / lower / about the same as ref" we take, for each seed both have run,

    d_s = log PPL(subject, s) - log PPL(ref, s)      (or BLEU(subject, s) - BLEU(ref, s))

and the 95% Student t-interval of their mean, mean(d) +- t(0.975, n - 1) * sd(d) / sqrt(n).
With n pairs the interval has n - 1 degrees of freedom: with 2 pairs t is 12.71, with 3 it is
4.30, with 4 it is 3.18, so two seeds give an interval about six times the spread of their two
differences, and it narrows fast with each seed added. The verdict is read from the interval,
with rules fixed before the results were looked at (``decide``):

- "higher" / "lower": **holds** when the whole interval lies on the paper's side of 0, **does
  not hold** when it lies wholly on the other side, else **inconclusive**;
- "same": **holds** when the whole interval lies within the equivalence margin (``MARGINS``:
  the PPL of the two within 3% of each other), **does not hold** when it lies wholly outside,
  else **inconclusive**;
- **marginal**, beside any of these, when an end of the interval lies within a tenth of the
  interval's half-width of a boundary (0, or a margin): a slightly narrower or wider interval,
  one seed more or less, could move the verdict.

``stability`` asks whether a verdict survives dropping any single seed. The old rule (the
means against the larger min-max range of the two sides) stays as ``range_verdict`` so that the
report can show both.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

HOLDS, FAILS, INCONCLUSIVE, FEW = "holds", "does not hold", "inconclusive", "too few seeds"
NOISE = "within noise"  # the old rule's word for a difference inside the seeds' range

CONFIDENCE = 0.95
MARGINAL = 0.1  # an end within this fraction of the half-width of a boundary: "marginal"
# Equivalence margins of the "about the same" findings, fixed in advance: the subject's PPL
# within 3% of the reference's (a ratio from 0.97 to 1.03), as log-PPL bounds.
MARGINS = {"ppl": (math.log(0.97), math.log(1.03))}


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with df (a whole number >= 1) degrees of freedom.

    The finite series of Abramowitz and Stegun 26.7.3 (df odd) and 26.7.4 (df even), in
    theta = atan(t / sqrt(df)).

    >>> round(t_cdf(12.7062, 1), 4), round(t_cdf(4.3027, 2), 4), round(t_cdf(0.0, 7), 4)
    (0.975, 0.975, 0.5)
    """
    if df < 1:
        raise ValueError(f"df: must be >= 1, got {df}")
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2:  # odd: 1/2 + (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)) / pi
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= (2 * k) / (2 * k + 1) * c * c
            total += term
        return 0.5 + (theta + s * c * total) / math.pi
    term, total = 1.0, 1.0  # even: 1/2 + sin/2 (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * c * c
        total += term
    return 0.5 + 0.5 * s * total


def t_quantile(p: float, df: int) -> float:
    """The t with P(T <= t) = p (0 < p < 1), by bisection on ``t_cdf``.

    >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 2), 3)
    (12.706, 4.303)
    """
    if not 0 < p < 1:
        raise ValueError(f"p: must be between 0 and 1, got {p}")
    lo, hi = -1e6, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class Interval:
    """The mean of n paired differences and its t-interval (nan ends for fewer than 2)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half(self) -> float:
        return (self.hi - self.lo) / 2


def interval(diffs: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """mean(d) +- t((1 + confidence) / 2, n - 1) * sd(d) / sqrt(n); no interval below 2 pairs.

    >>> iv = interval([1.0, 3.0])  # mean 2, sd sqrt(2), t(0.975, 1) = 12.706
    >>> round(iv.lo, 2), round(iv.hi, 2)
    (-10.71, 14.71)
    """
    n = len(diffs)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(diffs)
    if n < 2:
        return Interval(mean, math.nan, math.nan, n)
    half = t_quantile((1 + confidence) / 2, n - 1) * statistics.stdev(diffs) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def decide(
    iv: Interval, expect: str, margin: tuple[float, float] | None = None
) -> tuple[str, bool]:
    """(verdict, marginal) read from the interval; the rules are this module's docstring's.

    expect is "higher", "lower" or "same" (then margin, (low, high), is required).

    >>> decide(Interval(0.2, 0.1, 0.3, 3), "higher")
    ('holds', False)
    >>> decide(Interval(0.2, 0.01, 0.39, 3), "higher")  # 0.01 from 0, within 0.1 * 0.19
    ('holds', True)
    >>> decide(Interval(0.0, -0.02, 0.02, 3), "same", (-0.03, 0.03))
    ('holds', False)
    """
    if iv.n < 2:
        return FEW, False
    if expect == "same":
        if margin is None:
            raise ValueError("an equivalence finding needs its margin")
        low, high = margin
        if low <= iv.lo and iv.hi <= high:
            verdict = HOLDS
        elif iv.hi < low or iv.lo > high:
            verdict = FAILS
        else:
            verdict = INCONCLUSIVE
        bounds: tuple[float, ...] = margin
    else:
        sign = 1 if expect == "higher" else -1
        lo, hi = sorted((sign * iv.lo, sign * iv.hi))  # the paper's side is > 0
        verdict = HOLDS if lo > 0 else FAILS if hi < 0 else INCONCLUSIVE
        bounds = (0.0,)
    near = MARGINAL * iv.half
    marginal = any(abs(end - b) <= near for end in (iv.lo, iv.hi) for b in bounds)
    return verdict, marginal


def stability(
    diffs: dict[int, float], expect: str, margin: tuple[float, float] | None = None
) -> tuple[bool, list[tuple[int, str]]]:
    """(whether it can be checked, [(seed, the verdict without it) where it moves]).

    Dropping one of n pairs leaves n - 1: with 3 or more pairs the interval of the rest gives
    a verdict to compare; with 2 pairs one difference is left and no interval (not checkable).
    """
    whole, _ = decide(interval(list(diffs.values())), expect, margin)
    if len(diffs) < 3:
        return False, []
    moved = []
    for seed in diffs:
        rest = [d for s, d in diffs.items() if s != seed]
        without, _ = decide(interval(rest), expect, margin)
        if without != whole:
            moved.append((seed, without))
    return True, moved


def by_variation(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of each variation, ordered by seed."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (r["name"], r["seed"])):
        out.setdefault(r["name"], []).append(r)
    return out


def paired(runs: dict[str, list[dict]], subject: str, ref: str, metric: str) -> dict[int, float]:
    """{seed: difference} over the seeds both have: log PPL ratio, or BLEU points."""
    theirs = {r["seed"]: r[f"dev_{metric}"] for r in runs.get(ref, [])}
    out = {}
    for r in runs.get(subject, []):
        if r["seed"] in theirs:
            mine, other = r[f"dev_{metric}"], theirs[r["seed"]]
            out[r["seed"]] = math.log(mine / other) if metric == "ppl" else mine - other
    return out


def range_verdict(
    subject: Sequence[float], ref: Sequence[float], expect: str
) -> tuple[str, float, float]:
    """The old rule: (verdict, mean(subject) - mean(ref), noise = the larger range of the two).

    "higher": holds when the difference exceeds the noise upwards, does not hold when it
    exceeds it downwards, else within noise ("lower" mirrored). "same": holds within the noise.
    Fewer than two values on either side: no spread, so no verdict.
    """
    if len(subject) < 2 or len(ref) < 2:
        delta = statistics.fmean(subject) - statistics.fmean(ref) if subject and ref else 0.0
        return FEW, delta, math.nan
    delta = statistics.fmean(subject) - statistics.fmean(ref)
    noise = max(max(subject) - min(subject), max(ref) - min(ref))
    if expect == "same":
        return (HOLDS if abs(delta) <= noise else FAILS), delta, noise
    if abs(delta) <= noise:
        return NOISE, delta, noise
    sign = 1 if expect == "higher" else -1
    return (HOLDS if sign * delta > 0 else FAILS), delta, noise


def range_stability(subject: Sequence[float], ref: dict[int, float], expect: str) -> list[int]:
    """The old rule: the reference seeds whose removal moves the verdict (a side keeping 2+)."""
    whole = range_verdict(subject, list(ref.values()), expect)[0]
    if len(ref) < 3:
        return []
    return [
        seed
        for seed in ref
        if range_verdict(subject, [v for s, v in ref.items() if s != seed], expect)[0] != whole
    ]
