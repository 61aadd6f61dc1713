"""The paper's findings from Table 3 (section 6.2), each checked two ways, in English and Chinese.

``check_findings`` gives every finding whose runs are in the results its verdict under the
paired rule (``aiayn.table3.stats``: the seed-paired differences and their 95% t-interval) and,
beside it for one release, under the old rule (the means against the larger min-max range of
the two sides), with whether each survives dropping one seed. ``findings_table`` shows them,
``findings_notes`` says which verdicts moved from the old rule to the paired one and why.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiayn.table3.stats import (
    FAILS,
    FEW,
    HOLDS,
    INCONCLUSIVE,
    MARGINS,
    NOISE,
    by_variation,
    decide,
    interval,
    paired,
    range_stability,
    range_verdict,
    stability,
)


@dataclass(frozen=True)
class Finding:
    """One of the paper's findings: subject's metric is "higher", "lower" or "same" than ref's.

    ref is a variation name, or a tuple of names: the best of them (lowest mean PPL, highest
    mean BLEU), the subject excluded.
    """

    row: str
    text: str
    subject: str
    ref: str | tuple[str, ...]
    expect: str  # "higher", "lower" or "same"
    metric: str = "ppl"  # "ppl" or "bleu"


# The paper's reading of Table 3 (section 6.2), one checkable finding a line. "Too many heads"
# is checked against the best of 4, 8 and 16 heads: the paper says "quality also drops off with
# too many heads" after "single-head attention is 0.9 BLEU worse than the best setting", so the
# single head is the other end of the same sentence, checked by the finding above it, and left
# out of the reference on purpose (even where it has the lowest PPL, as in our runs).
FINDINGS: tuple[Finding, ...] = (
    Finding("A", "single-head attention is worse than 8 heads", "A-h1", "base", "higher"),
    Finding("A", "too many heads also hurt: 32 heads are worse than the best head count",
            "A-h32", ("A-h4", "base", "A-h16"), "higher"),
    Finding("B", "reducing d_k hurts: d_k 16 is worse than 64", "B-dk16", "base", "higher"),
    Finding("B", "reducing d_k hurts: d_k 32 is worse than 64", "B-dk32", "base", "higher"),
    Finding("C", "bigger models are better: N 2 is worse than 6", "C-n2", "base", "higher"),
    Finding("C", "bigger models are better: N 4 is worse than 6", "C-n4", "base", "higher"),
    Finding("C", "bigger models are better: N 8 is better than 6", "C-n8", "base", "lower"),
    Finding("C", "bigger models are better: d_model 256 is worse than 512", "C-d256", "base",
            "higher"),
    Finding("C", "bigger models are better: d_model 1024 is better than 512", "C-d1024", "base",
            "lower"),
    Finding("C", "bigger models are better: d_ff 1024 is worse than 2048", "C-dff1024", "base",
            "higher"),
    Finding("C", "bigger models are better: d_ff 4096 is better than 2048", "C-dff4096", "base",
            "lower"),
    Finding("D", "dropout is very helpful: P_drop 0.0 is worse than 0.1", "D-drop0.0", "base",
            "higher"),
    Finding("D", "P_drop 0.2 is about as good as 0.1", "D-drop0.2", "base", "same"),
    Finding("D", "label smoothing hurts perplexity: eps_ls 0.0 has a lower PPL than 0.1",
            "D-ls0.0", "base", "lower"),
    Finding("D", "label smoothing hurts perplexity: eps_ls 0.2 has a higher PPL than 0.1",
            "D-ls0.2", "base", "higher"),
    Finding("D", "but improves BLEU: eps_ls 0.0 has a lower BLEU than 0.1", "D-ls0.0", "base",
            "lower", "bleu"),
    Finding("E", "learned positional embeddings are about as good as sinusoids", "E-learned",
            "base", "same"),
)  # fmt: skip


# The same findings and verdicts in Chinese, for docs/zh/table3.md (by subject and metric).
FINDINGS_ZH: dict[tuple[str, str], str] = {
    ("A-h1", "ppl"): "单头注意力比 8 个头差",
    ("A-h32", "ppl"): "头太多也不好：32 个头比最好的头数差",
    ("B-dk16", "ppl"): "减小 d_k 有害：d_k 16 比 64 差",
    ("B-dk32", "ppl"): "减小 d_k 有害：d_k 32 比 64 差",
    ("C-n2", "ppl"): "模型越大越好：N 2 比 6 差",
    ("C-n4", "ppl"): "模型越大越好：N 4 比 6 差",
    ("C-n8", "ppl"): "模型越大越好：N 8 比 6 好",
    ("C-d256", "ppl"): "模型越大越好：d_model 256 比 512 差",
    ("C-d1024", "ppl"): "模型越大越好：d_model 1024 比 512 好",
    ("C-dff1024", "ppl"): "模型越大越好：d_ff 1024 比 2048 差",
    ("C-dff4096", "ppl"): "模型越大越好：d_ff 4096 比 2048 好",
    ("D-drop0.0", "ppl"): "dropout 很有帮助：P_drop 0.0 比 0.1 差",
    ("D-drop0.2", "ppl"): "P_drop 0.2 和 0.1 差不多",
    ("D-ls0.0", "ppl"): "标签平滑损害困惑度：eps_ls 0.0 的 PPL 比 0.1 低",
    ("D-ls0.2", "ppl"): "标签平滑损害困惑度：eps_ls 0.2 的 PPL 比 0.1 高",
    ("D-ls0.0", "bleu"): "但提高 BLEU：eps_ls 0.0 的 BLEU 比 0.1 低",
    ("E-learned", "ppl"): "学到的位置嵌入和正弦位置编码差不多",
}
VERDICTS_ZH = {
    HOLDS: "成立",
    FAILS: "不成立",
    INCONCLUSIVE: "无法判定",
    NOISE: "在噪声之内",
    FEW: "种子太少",
}


def _values(runs: dict[str, list[dict]], name: str, metric: str) -> list[float]:
    return [r[f"dev_{metric}"] for r in runs.get(name, [])]


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else math.nan


def check_findings(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding whose subject and reference have results, checked under both rules.

    Keys: finding, ref (the variation it is checked against), candidates (for a best-of
    reference); the paired rule: verdict, marginal, pairs ({metric: {seed: difference}}),
    intervals ({metric: Interval}), checkable and moved (``stats.stability``); the old rule:
    old, delta, noise and old_moved (the reference seeds whose removal moves it).
    """
    runs = by_variation(records)
    out = []
    for f in FINDINGS:
        if f.subject not in runs:
            continue
        candidates: list[str] = []
        if isinstance(f.ref, tuple):
            candidates = [n for n in f.ref if n in runs and n != f.subject]
            if not candidates:
                continue
            best = min if f.metric == "ppl" else max
            ref = best(candidates, key=lambda n: _mean(_values(runs, n, f.metric)))
        else:
            ref = f.ref
            if ref not in runs:
                continue
        subject = _values(runs, f.subject, f.metric)
        old, delta, noise = range_verdict(subject, _values(runs, ref, f.metric), f.expect)
        by_seed = {r["seed"]: r[f"dev_{f.metric}"] for r in runs[ref]}
        pairs = {m: paired(runs, f.subject, ref, m) for m in ("ppl", "bleu")}
        intervals = {m: interval(list(d.values())) for m, d in pairs.items()}
        margin = MARGINS.get(f.metric) if f.expect == "same" else None
        verdict, marginal = decide(intervals[f.metric], f.expect, margin)
        checkable, moved = stability(pairs[f.metric], f.expect, margin)
        out.append(
            {
                "finding": f,
                "ref": ref,
                "candidates": candidates,
                "verdict": verdict,
                "marginal": marginal,
                "pairs": pairs,
                "intervals": intervals,
                "checkable": checkable,
                "moved": moved,
                "old": old,
                "delta": delta,
                "noise": noise,
                "old_moved": range_stability(subject, by_seed, f.expect),
            }
        )
    return out


def change(diff: float, metric: str, signed: bool = True) -> str:
    """A paired difference as shown: PPL as a change in % (from log PPL), BLEU in points."""
    if metric == "ppl":
        return f"{100 * math.expm1(diff):{'+' if signed else ''}.1f}%"
    return f"{diff:{'+' if signed else ''}.2f}"


def _interval_cell(iv: Any, metric: str) -> str:
    if iv.n < 2:
        return f"{change(iv.mean, metric)} (1 pair)" if iv.n else ""
    return f"{change(iv.mean, metric)} [{change(iv.lo, metric)}, {change(iv.hi, metric)}]"


def verdict_text(c: dict[str, Any], lang: str = "en") -> str:
    """The paired verdict, with "marginal" where it applies."""
    zh = lang == "zh"
    text = VERDICTS_ZH[c["verdict"]] if zh else c["verdict"]
    if c["marginal"]:
        text += "（临界）" if zh else " (marginal)"
    return text


def _dropped(c: dict[str, Any], lang: str) -> str:
    zh = lang == "zh"
    n = c["intervals"][c["finding"].metric].n
    if not c["checkable"]:
        return f"无法检验（{n} 对）" if zh else f"not checkable ({n} pairs)"
    if not c["moved"]:
        return "稳定" if zh else "stable"
    parts = [
        (f"去掉种子 {s}：{VERDICTS_ZH[v]}" if zh else f"without seed {s}: {v}")
        for s, v in c["moved"]
    ]
    return ("；" if zh else "; ").join(parts)


def reference_text(c: dict[str, Any], lang: str = "en") -> str:
    """What a best-of finding is checked against, and why single-head attention is left out."""
    if not c["candidates"]:
        return ""
    names = "、".join(c["candidates"]) if lang == "zh" else ", ".join(c["candidates"])
    if lang == "zh":
        return f"（对照 {c['ref']}，{names} 中 PPL 最低的；单头是上一条结论的对象，有意不算在内）"
    return (
        f" (against {c['ref']}, the lowest PPL of {names}; single-head attention, the finding "
        "above, is left out on purpose)"
    )


def findings_table(checked: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """Markdown: each finding, its paired changes and verdict, and the old rule beside it."""
    zh = lang == "zh"
    if zh:
        head = (
            "| 行 | 论文的结论 | 种子对数 | PPL 变化 [95% 区间] | BLEU 变化 [95% 区间] "
            "| 判定（配对） | 去掉一个种子 | 旧规则：差别（噪声） | 旧判定 |"
        )
    else:
        head = (
            "| row | the paper's finding | pairs | PPL change [95% interval] "
            "| BLEU change [95% interval] | verdict (paired) | one seed dropped "
            "| old rule: difference (noise) | old verdict |"
        )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for c in checked:
        f = c["finding"]
        unit = "PPL" if f.metric == "ppl" else "BLEU"
        text = (FINDINGS_ZH[(f.subject, f.metric)] if zh else f.text) + reference_text(c, lang)
        if f.expect == "same":
            low, high = (100 * math.expm1(b) for b in MARGINS[f.metric])
            text += f"（等价界 {low:+.0f}% 到 {high:+.0f}%）" if zh else (
                f" (margin {low:+.0f}% to {high:+.0f}%)")  # fmt: skip
        spread = "无波动" if zh else "no spread"
        noise = spread if c["noise"] != c["noise"] else f"{c['noise']:.2f}"
        old = VERDICTS_ZH[c["old"]] if zh else c["old"]
        ppl, bleu = (_interval_cell(c["intervals"][m], m) for m in ("ppl", "bleu"))
        lines.append(
            f"| {f.row} | {text} | {c['intervals'][f.metric].n} | {ppl} | {bleu} "
            f"| **{verdict_text(c, lang)}** | {_dropped(c, lang)} "
            f"| {f.subject}: {c['delta']:+.2f} {unit} ({noise}) | {old} |"
        )
    return "\n".join(lines)


def _same(old: str, new: str) -> bool:
    return old == new or (old == NOISE and new == INCONCLUSIVE)


def findings_notes(checked: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """Markdown: which verdicts moved from the old rule to the paired one, and which verdicts
    of the old rule moved when one base seed was dropped."""
    zh = lang == "zh"
    moved = []
    for c in checked:
        f = c["finding"]
        if _same(c["old"], c["verdict"]):
            continue
        seeds = c["pairs"][f.metric].values()
        diffs = ("、" if zh else ", ").join(change(d, f.metric) for d in seeds)
        old = VERDICTS_ZH[c["old"]] if zh else c["old"]
        if zh:
            moved.append(f"{f.subject}（{f.metric.upper()}）：{old} → {verdict_text(c, lang)}；"
                         f"各种子的差别 {diffs}")  # fmt: skip
        else:
            moved.append(f"{f.subject} ({f.metric.upper()}): {old} -> {verdict_text(c, lang)}; "
                         f"the seeds' differences {diffs}")  # fmt: skip
    shaky = [
        f"{c['finding'].subject} ({', '.join(f'seed {s}' for s in c['old_moved'])})"
        if not zh
        else f"{c['finding'].subject}（种子 {'、'.join(str(s) for s in c['old_moved'])}）"
        for c in checked
        if c["old_moved"]
    ]
    same = sum(_same(c["old"], c["verdict"]) for c in checked)
    if zh:
        text = (
            f"与旧规则相比，{len(checked)} 条结论中有 {len(moved)} 条的判定变了"
            f"（旧规则的“在噪声之内”与配对规则的“无法判定”视为相同，{same} 条未变）："
        )
        tail = (
            f"旧规则下，去掉 base 的一个种子就会改变判定的有：{'、'.join(shaky)}。"
            if shaky
            else "旧规则下，去掉 base 的任何一个种子都不改变判定。"
        )
    else:
        text = (
            f"{len(moved)} of the {len(checked)} verdicts moved from the old rule to the paired "
            f"one ({same} stayed; the old rule's within noise and the paired inconclusive count "
            "as the same):"
        )
        tail = (
            f"Under the old rule, dropping one base seed moves the verdicts of {', '.join(shaky)}."
            if shaky
            else "Under the old rule, dropping any one base seed moves no verdict."
        )
    return "\n".join([text, "", *[f"- {m}" for m in moved], "", tail])


def summary(checked: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{row: {paired verdict: count}}."""
    out: dict[str, dict[str, int]] = {}
    for c in checked:
        row = out.setdefault(c["finding"].row, {})
        row[c["verdict"]] = row.get(c["verdict"], 0) + 1
    return out
