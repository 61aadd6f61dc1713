"""Table 3's report: the paper's rows beside ours, the findings and their verdicts, the cost.

Dev perplexity is the main figure. Each variation's line shows, beside the paper's, its change
against the base: the paper's relative change in PPL and BLEU, and ours, from the runs paired
by seed (``aiayn.table3.stats``), with the signs that agree counted. The paper's findings are
checked in ``aiayn.table3.findings`` (the paired 95% interval, the old range rule beside it),
the plots drawn by ``aiayn.table3.plots``. BLEU differences also come with sacreBLEU's paired
bootstrap test (1000 resamples) against the base run of the same seed, on the same dev
sentences, with the tokenizer of the runs' own dev BLEU (its signature's ``tok:``: 13a for
German, zh for Chinese).
"""

from __future__ import annotations

import logging
import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiayn.config import ModelConfig, from_dict
from aiayn.flops import PAPER_TRAINING_FLOPS
from aiayn.table3.findings import check_findings, findings_notes, findings_table, summary
from aiayn.table3.plots import group_plots, paper_change
from aiayn.table3.rows import PAPER_BASE, PAPER_STEPS, VARIATIONS, Variation, variations
from aiayn.table3.stats import by_variation, paired

# The names aiayn table3's runner reads from here.
__all__ = ["by_variation", "check_findings", "findings_table", "group_plots", "summary"]


def bootstrap(records: Sequence[dict[str, Any]], out: Path, samples: int = 1000) -> dict:
    """{(name, seed): p}: paired bootstrap of each run's dev BLEU against base's, same seed."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    logging.getLogger("sacrebleu").setLevel(logging.WARNING)  # its progress lines
    runs = by_variation(records)
    base = {r["seed"]: r for r in runs.get("base", [])}
    refs = None
    result: dict[tuple[str, int], float] = {}
    for name, rs in runs.items():
        for r in rs:
            if name == "base" or r["seed"] not in base:
                continue
            b = base[r["seed"]]
            if refs is None:
                refs = _lines(out / b["refs"])
            systems = [("base", _lines(out / b["hyps"])), (name, _lines(out / r["hyps"]))]
            metric = BLEU(tokenize=bleu_tokenizer_of(b))
            test = PairedTest(systems, {"BLEU": metric}, [refs], test_type="bs", n_samples=samples)
            _, scores = test()
            result[(name, r["seed"])] = float(scores["BLEU"][1].p_value)
    return result


def bleu_tokenizer_of(record: dict[str, Any]) -> str:
    """The sacreBLEU tokenizer of a run's dev BLEU, from its signature (``tok:zh``); else 13a."""
    found = re.search(r"(?:^|\|)tok:([^|]+)", record.get("bleu_signature", ""))
    return found.group(1) if found else "13a"


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").split("\n")[:-1]
    except UnicodeDecodeError:
        from aiayn.errors import UserError

        raise UserError(f"{path}: not UTF-8 text, so not the translations it should be") from None


def _fmt(xs: Sequence[float], digits: int) -> str:
    if not xs:
        return ""
    if len(xs) == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{_mean(xs):.{digits}f} [{min(xs):.{digits}f}, {max(xs):.{digits}f}]"


def _shape(cfg: dict[str, Any], train: dict[str, Any]) -> list[str]:
    h = cfg["n_heads"]
    head = from_dict(ModelConfig, cfg)  # results of an older aiayn name the overrides d_k, d_v
    dk, dv = head.d_k, head.d_v
    ls = train.get("label_smoothing", 0.1)
    pos = "" if cfg["positions"] == "sinusoidal" else f" ({cfg['positions']} positions)"
    return [
        str(cfg["n_layers"]),
        str(cfg["d_model"]),
        str(cfg["d_ff"]),
        str(h),
        str(dk),
        str(dv),
        f"{cfg['dropout']:g}{pos}",
        f"{ls:g}",
    ]


HEADER = (
    "| row | | N | d_model | d_ff | h | d_k | d_v | P_drop | eps_ls | steps | PPL (dev) "
    "| BLEU (dev) | PPL vs base | BLEU vs base | params |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _values(runs: dict[str, list[dict]], name: str, metric: str) -> list[float]:
    return [r[f"dev_{metric}"] for r in runs.get(name, [])]


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else math.nan


def our_change(runs: dict[str, list[dict]], name: str, metric: str) -> float:
    """Our relative change of name against the base, over the seeds both have: for PPL the
    geometric mean of the paired ratios minus 1, for BLEU the mean paired difference over the
    base's mean BLEU of those seeds; nan without a pair (or with a base BLEU of 0)."""
    diffs = paired(runs, name, "base", metric)
    if not diffs:
        return math.nan
    mean = statistics.fmean(diffs.values())
    if metric == "ppl":
        return math.expm1(mean)
    base = _mean([r["dev_bleu"] for r in runs["base"] if r["seed"] in diffs])
    return mean / base if base > 0 else math.nan


def _pct(x: float) -> str:
    return "" if x != x else f"{100 * x:+.1f}%"


def signs(records: Sequence[dict[str, Any]]) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """{metric: (the variations whose change has the paper's sign, those of the other sign,
    those where the paper's change is 0 (not counted))}."""
    runs = by_variation(records)
    out = {}
    for metric in ("ppl", "bleu"):
        agree, differ, flat = [], [], []
        for v in VARIATIONS:
            if v.name == "base" or v.name not in runs or "base" not in runs:
                continue
            theirs, ours = paper_change(v.name, metric), our_change(runs, v.name, metric)
            if ours != ours:
                continue
            if round(theirs, 6) == 0:
                flat.append(v.name)
            else:
                (agree if (theirs > 0) == (ours > 0) else differ).append(v.name)
        out[metric] = (agree, differ, flat)
    return out


def sign_text(records: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """One sentence: in how many variations our change against the base has the paper's sign."""
    found = signs(records)
    parts = []
    for metric, unit in (("ppl", "PPL"), ("bleu", "BLEU")):
        agree, differ, flat = found[metric]
        counted = len(agree) + len(differ)
        if lang == "zh":
            part = f"{unit} 在 {counted} 个变体中有 {len(agree)} 个同号"
            if differ:
                part += f"（异号：{'、'.join(differ)}）"
            if flat:
                part += f"，{'、'.join(flat)} 论文里与 base 相同，不计"
        else:
            part = f"{unit} in {len(agree)} of {counted}"
            if differ:
                part += f" (the other sign: {', '.join(differ)})"
            if flat:
                part += f"; {', '.join(flat)} not counted (the paper's equals its base)"
        parts.append(part)
    if lang == "zh":
        return (
            "与 base 相比的变化（“vs base”两列：论文的相对变化，我们的按种子配对），"
            f"我们的符号与论文相同的：{'；'.join(parts)}。"
        )
    return (
        "The change against the base (the two vs-base columns: the paper's relative change, ours "
        f"paired by seed) has the paper's sign: {'; '.join(parts)}."
    )


def _paper_line(v: Variation) -> str:
    from aiayn.table3.rows import scale_variation  # the paper's config: scale 1

    cfg, train = scale_variation(v, PAPER_BASE)
    import dataclasses

    shape = _shape(dataclasses.asdict(cfg), train)
    params = f"{v.params_m}M" if v.params_m else ""
    ppl, bleu = ("" if v.name == "base" else _pct(paper_change(v.name, m)) for m in ("ppl", "bleu"))
    changes = f"| {ppl} | {bleu} |"
    return (
        f"| {v.row} | paper | {' | '.join(shape)} | 100K | {v.ppl:.2f} | {v.bleu:.1f} "
        f"{changes} {params} |"
    )


def table(records: Sequence[dict[str, Any]], pvalues: dict | None = None) -> str:
    """Markdown: for each variation with results, the paper's line and ours (mean [min, max]),
    each with its change against the base; then ``sign_text``'s sentence."""
    runs = by_variation(records)
    lines = [HEADER]
    for v in VARIATIONS:
        if v.name not in runs:
            continue
        rs = runs[v.name]
        first = rs[0]
        shape = _shape(first["model"], first["train_overrides"])
        bleu = _fmt(_values(runs, v.name, "bleu"), 2)
        if pvalues and v.name != "base":
            ps = [pvalues[(v.name, r["seed"])] for r in rs if (v.name, r["seed"]) in pvalues]
            if ps:
                bleu += f" (p {max(ps):.3f})"
        seeds = len(rs)
        changes = " | ".join(
            "" if v.name == "base" else _pct(our_change(runs, v.name, m)) for m in ("ppl", "bleu")
        )
        lines.append(_paper_line(v))
        lines.append(
            f"| {v.name} | ours ({seeds} seed{'s' if seeds > 1 else ''}) | {' | '.join(shape)} "
            f"| {first['steps']:,} | {_fmt(_values(runs, v.name, 'ppl'), 2)} | {bleu} "
            f"| {changes} | {first['params'] / 1e6:.2f}M |"
        )
    return "\n".join(lines) + "\n\n" + sign_text(records)


def cost_table(records: Sequence[dict[str, Any]]) -> str:
    """Markdown: Table 2's training cost of base and big beside the FLOPs of our runs."""
    runs = by_variation(records)
    lines = ["| model | steps | training FLOPs | share of the paper's base |", "|---|---|---|---|"]
    base = PAPER_TRAINING_FLOPS["base"]
    lines.append(f"| paper base (Table 2) | {PAPER_STEPS:,} | {base:.1e} | 1 |")
    lines.append(
        f"| paper big (Table 2) | 300,000 | {PAPER_TRAINING_FLOPS['big']:.1e} | "
        f"{PAPER_TRAINING_FLOPS['big'] / base:.1f} |"
    )
    for name in ("base", *[v.name for v in VARIATIONS if v.name != "base"]):
        if name not in runs:
            continue
        flops = _mean([r["train_flops"] for r in runs[name]])
        steps = runs[name][0]["steps"]
        lines.append(f"| ours {name} | {steps:,} | {flops:.1e} | 1/{base / flops:,.0f} |")
    return "\n".join(lines)


def _span(values: Sequence[float], unit: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0f}{unit}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}{unit}"


def provenance(records: Sequence[dict[str, Any]]) -> str:
    """Where the runs come from, over all of them: commits, threads, matmul peaks, minutes.

    A table run across sessions mixes machines' loads and thread counts: its minutes are
    comparable only where these agree, its updates and batches always.

    >>> one = {"commit": "abcdef0123", "threads": 1, "matmul_peak_gflops": 39.2}
    >>> two = {"commit": "0123456789", "threads": 2, "matmul_peak_gflops": 160.0}
    >>> text = provenance([{**one, "train_minutes": 9.0}, {**two, "train_minutes": 4.1}])
    >>> for part in text.split("; "):
    ...     print(part)
    2 runs on commits abcdef01 (1), 01234567 (1)
    1-2 threads
    matmul peak 39-160 GFLOP/s
    4-9 minutes of training a run
    >>> provenance([{**one, "train_minutes": 9.0}])
    '1 run on commit abcdef01 (1); 1 thread; matmul peak 39 GFLOP/s; 9 minutes of training a run'
    """
    commits: dict[str, int] = {}
    for r in records:
        commits[r["commit"][:8]] = commits.get(r["commit"][:8], 0) + 1
    listed = ", ".join(f"{c} ({n})" for c, n in commits.items())
    parts = [
        f"{len(records)} run{'s' if len(records) > 1 else ''} on "
        f"commit{'s' if len(commits) > 1 else ''} {listed}",
        _span([r["threads"] for r in records], " threads").replace("1 threads", "1 thread"),
        "matmul peak " + _span([r["matmul_peak_gflops"] for r in records], " GFLOP/s"),
        _span([r["train_minutes"] for r in records], " minutes of training a run"),
    ]
    return "; ".join(parts)


def docs_results(out: Path, lang: str = "en") -> str:
    """The results section of docs/table3.md (or docs/zh/table3.md) from OUT's results and report.

    The findings are computed from OUT/results.jsonl; the main table, with its bootstrap
    p-values, is copied from OUT/report.md, which ``aiayn table3`` wrote from the same results
    (a test checks that its every other figure is what ``table`` computes today).
    """
    from aiayn.table3.results import read_results

    records = read_results(out)
    text = (out / "report.md").read_text(encoding="utf-8")
    start = text.index(HEADER.splitlines()[0])
    main = text[start : text.index("\n\n", start)]
    runs = by_variation(records)
    total = len(records)
    # the default seeds: 3 for the base, 2 for each of the other variations
    planned = 3 + 2 * len(variations())
    plots = sorted((out / "plots").glob("table3-*.png"))
    rel = "../benchmarks/results/table3" if lang == "en" else "../../benchmarks/results/table3"
    images = [f"![row {p.stem[-1]}]({rel}/plots/{p.name})" for p in plots]
    if lang == "zh":
        done = (
            f"全表 {planned} 次训练已全部完成（base 和 {planned // 2 - 1} 个变体）。"
            if total >= planned
            else f"已完成全表 {planned} 次训练中的 {total} 次（{len(runs)} 个变体）；"
            "其余的用同一条命令继续。"
        )
        status = (
            f"{done}完整报告：[report.md]({rel}/report.md)。表中“ours”一行是种子均值和"
            "[最小, 最大]；p 是与同种子 base 的配对自助法检验的最大 p 值；“vs base”两列是与 "
            "base 相比的相对变化，论文的一行取论文的数，我们的一行按种子配对"
            "（PPL 取各对比值的几何平均）。"
        )
        plots_text = (
            "每行一张图：上排是 PPL 相对同种子 base 的变化（%），下排是 BLEU 的变化（分）；点是各"
            "种子，红色是均值和 95% t 区间，绿色叉是论文的变化；同一张图里各列共用 y 轴。"
        )
    else:
        done = (
            f"All {planned} runs of the table are finished "
            f"(the base and {planned // 2 - 1} variations)."
            if total >= planned
            else f"{total} of the table's {planned} runs are finished ({len(runs)} variations); "
            "the rest continue with the same command."
        )
        status = (
            f"{done} The full report: [report.md]({rel}/report.md). "
            'Each "ours" line is the mean over seeds and [min, max]; p is the largest paired '
            "bootstrap p-value against the base run of the same seed; the two vs-base columns "
            "are the change against the base, the paper's on its line, ours paired by seed (for "
            "PPL the geometric mean of the paired ratios)."
        )
        plots_text = (
            "One plot a row group: the change of dev PPL (top, %) and BLEU (bottom, points) "
            "against the base run of the same seed; dots are seeds, red their mean and 95% "
            "t-interval, the green cross the paper's change; a group's panels share the y axis."
        )
    checked = check_findings(records)
    higher = [n for n, rs in runs.items() if len(rs) > 1 and rs[0]["dev_ppl"] > rs[1]["dev_ppl"]]
    both = sum(len(rs) > 1 for rs in runs.values())
    first, second = (runs["base"][i]["seed"] for i in (0, 1))
    train = sum(r["train_minutes"] for r in records)
    score = sum(r.get("score_minutes", 0.0) for r in records)
    if lang == "zh":
        status += (
            f"这 {total} 次训练共用了 {train:.0f} 分钟（另有 {score:.1f} 分钟打分），"
            f"按这个速度，10 倍的步数约需 {(10 * train + score) / 60:.0f} 小时。"
        )
        seeds = (
            f"种子 {first} 的验证集 PPL 在 {both} 个配置中有 {len(higher)} 个高于种子 {second}："
            "这是所有行共有的种子效应，按种子配对就把它消掉了。"
        )
    else:
        status += (
            f" The {total} runs trained for {train:.0f} minutes in all (and were scored in "
            f"{score:.1f}): ten times the updates would take about "
            f"{(10 * train + score) / 60:.0f} hours at their pace."
        )
        seeds = (
            f"Seed {first} has the higher dev PPL than seed {second} in {len(higher)} of {both} "
            "configurations: a seed effect all rows share, which pairing by seed removes."
        )
    parts = [status, main, sign_text(records, lang), seeds, findings_table(checked, lang)]
    parts += [findings_notes(checked, lang), plots_text, *images]
    return "\n\n".join(parts) + "\n"
