"""Table 3's report: the paper's row beside ours, the findings and their verdicts, the plots.

Dev perplexity is the main figure. A finding of the paper is checked by comparing the mean over
seeds of one variation with that of its reference (the base, or the best of a group); the noise
is the seeds' spread, the larger range (max - min) of the two. A difference within it is
"within noise", never a trend; beyond it the finding "holds" or "does not hold". A finding that
two settings are about equal holds when they differ by less than the noise. BLEU differences
come with sacreBLEU's paired bootstrap test (1000 resamples) against the base run of the same
seed, on the same dev sentences, with the tokenizer of the runs' own dev BLEU (its signature's
``tok:``: 13a for German, zh for Chinese).
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiayn.config import ModelConfig, from_dict
from aiayn.flops import PAPER_TRAINING_FLOPS
from aiayn.table3.rows import PAPER_BASE, PAPER_STEPS, VARIATIONS, Variation, variation, variations

HOLDS, FAILS, NOISE, FEW = "holds", "does not hold", "within noise", "too few seeds"


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


# The paper's reading of Table 3 (section 6.2), one checkable finding a line.
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
VERDICTS_ZH = {HOLDS: "成立", FAILS: "不成立", NOISE: "在噪声之内", FEW: "种子太少"}


def verdict(
    subject: Sequence[float], ref: Sequence[float], expect: str
) -> tuple[str, float, float]:
    """(verdict, mean(subject) - mean(ref), noise): noise = the larger range of the two.

    "higher": holds when the difference exceeds the noise upwards, does not hold when it
    exceeds it downwards, else within noise ("lower" mirrored). "same": holds within the noise.
    Fewer than two values on either side: no spread, so no verdict.
    """
    if len(subject) < 2 or len(ref) < 2:
        delta = statistics.fmean(subject) - statistics.fmean(ref) if subject and ref else 0.0
        return FEW, delta, float("nan")
    delta = statistics.fmean(subject) - statistics.fmean(ref)
    noise = max(max(subject) - min(subject), max(ref) - min(ref))
    if expect == "same":
        return (HOLDS if abs(delta) <= noise else FAILS), delta, noise
    if abs(delta) <= noise:
        return NOISE, delta, noise
    sign = 1 if expect == "higher" else -1
    return (HOLDS if sign * delta > 0 else FAILS), delta, noise


def by_variation(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records of each variation, ordered by seed."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (r["name"], r["seed"])):
        out.setdefault(r["name"], []).append(r)
    return out


def _values(runs: dict[str, list[dict]], name: str, metric: str) -> list[float]:
    return [r[f"dev_{metric}"] for r in runs.get(name, [])]


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def check_findings(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding whose subject has results: its verdict, difference, noise and reference."""
    runs = by_variation(records)
    out = []
    for f in FINDINGS:
        if f.subject not in runs:
            continue
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
        v, delta, noise = verdict(
            _values(runs, f.subject, f.metric), _values(runs, ref, f.metric), f.expect
        )
        out.append({"finding": f, "ref": ref, "verdict": v, "delta": delta, "noise": noise})
    return out


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
    "| BLEU (dev) | params |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _paper_line(v: Variation) -> str:
    from aiayn.table3.rows import scale_variation  # the paper's config: scale 1

    cfg, train = scale_variation(v, PAPER_BASE)
    import dataclasses

    shape = _shape(dataclasses.asdict(cfg), train)
    params = f"{v.params_m}M" if v.params_m else ""
    return (
        f"| {v.row} | paper | {' | '.join(shape)} | 100K | {v.ppl:.2f} | {v.bleu:.1f} | {params} |"
    )


def table(records: Sequence[dict[str, Any]], pvalues: dict | None = None) -> str:
    """Markdown: for each variation with results, the paper's line and ours (mean [min, max])."""
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
        lines.append(_paper_line(v))
        lines.append(
            f"| {v.name} | ours ({seeds} seed{'s' if seeds > 1 else ''}) | {' | '.join(shape)} "
            f"| {first['steps']:,} | {_fmt(_values(runs, v.name, 'ppl'), 2)} | {bleu} "
            f"| {first['params'] / 1e6:.2f}M |"
        )
    return "\n".join(lines)


def findings_table(checked: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """Markdown: each finding, the reference it is checked against, difference, noise, verdict."""
    zh = lang == "zh"
    head = "| 行 | 论文的结论 | 我们的差别（噪声） | 判定 |" if zh else (
        "| row | the paper's finding | ours: difference (noise) | verdict |")  # fmt: skip
    lines = [head, "|---|---|---|---|"]
    for c in checked:
        f = c["finding"]
        unit = "PPL" if f.metric == "ppl" else "BLEU"
        text = FINDINGS_ZH[(f.subject, f.metric)] if zh else f.text
        if c["ref"] != "base":
            text += f"（对照 {c['ref']}，最好的一个）" if zh else f" (against {c['ref']}, the best)"
        spread = "无波动" if zh else "no spread"
        noise = spread if c["noise"] != c["noise"] else f"{c['noise']:.2f}"
        v = VERDICTS_ZH[c["verdict"]] if zh else c["verdict"]
        lines.append(
            f"| {f.row} | {text} | {f.subject}: {c['delta']:+.2f} {unit} ({noise}) | **{v}** |"
        )
    return "\n".join(lines)


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


def summary(checked: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{row: {verdict: count}}."""
    out: dict[str, dict[str, int]] = {}
    for c in checked:
        row = out.setdefault(c["finding"].row, {})
        row[c["verdict"]] = row.get(c["verdict"], 0) + 1
    return out


def group_plots(records: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG a row group: dev PPL and BLEU against each varied quantity, seeds and range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = by_variation(records)
    written = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for group in ("A", "B", "C", "D", "E"):
        names = [v.name for v in VARIATIONS if v.row == group and v.name in runs]
        if not names or "base" not in runs:
            continue
        quantities = list(dict.fromkeys(variation(n).varied for n in names))
        fig, axes = plt.subplots(
            2, len(quantities), figsize=(max(3.6 * len(quantities), 5.0), 5.6), squeeze=False
        )
        for col, q in enumerate(quantities):
            members = ["base", *[n for n in names if variation(n).varied == q]]
            members.sort(key=lambda n: _sort_key(runs[n][0]["values"][q]))
            labels = [f"{runs[n][0]['values'][q]}\n(paper {_paper_value(n, q)})" for n in members]
            for row, metric in enumerate(("ppl", "bleu")):
                ax = axes[row][col]
                for x, n in enumerate(members):
                    ys = _values(runs, n, metric)
                    ax.scatter([x] * len(ys), ys, s=14, color="tab:blue", alpha=0.6)
                    ax.errorbar(
                        x,
                        _mean(ys),
                        yerr=[[_mean(ys) - min(ys)], [max(ys) - _mean(ys)]],
                        fmt="o",
                        color="black" if n == "base" else "tab:red",
                        capsize=4,
                    )
                ax.set_xticks(range(len(members)), labels)
                ax.set_xlim(-0.5, len(members) - 0.5)
                ax.set_xlabel(f"{q} (ours)")
                ax.set_ylabel("dev PPL" if metric == "ppl" else "dev sacreBLEU")
                ax.grid(alpha=0.3)
        fig.suptitle(
            f"Table 3 row {group}: mean over seeds (black: base, red: variations),\n"
            "seeds as dots, their range as bars",
            fontsize=10,
        )
        fig.tight_layout()
        path = out_dir / f"table3-{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _paper_value(name: str, q: str) -> Any:
    from aiayn.table3.rows import quantities, scale_variation

    cfg, train = scale_variation(variation(name), PAPER_BASE)
    return quantities(cfg, train)[q]


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def docs_results(out: Path, lang: str = "en") -> str:
    """The results section of docs/table3.md (or docs/zh/table3.md) from OUT's results and report.

    The findings table is computed from OUT/results.jsonl; the main table, with its bootstrap
    p-values, is copied from OUT/report.md, which ``aiayn table3`` wrote from the same results.
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
            "[最小, 最大]；p 是与同种子 base 的配对自助法检验的最大 p 值。"
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
            "bootstrap p-value against the base run of the same seed."
        )
    checked = check_findings(records)
    return "\n\n".join([status, main, findings_table(checked, lang), *images]) + "\n"
