"""Table 3's plots: each variation's change against the base, seed by seed, beside the paper's.

One PNG a row group (``group_plots``): for every quantity the group varies, the change of dev
PPL (top, in %) and of dev BLEU (bottom, in points) against the base run of the same seed,
each seed's difference as a dot, their mean with its 95% t-interval (``aiayn.table3.stats``),
and the paper's change as a cross (for BLEU, the paper's relative change in points of our
base's BLEU). The panels of a group share their y axis, so a group's
variations are read on one scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiayn.table3.rows import PAPER_BASE, VARIATIONS, quantities, scale_variation, variation
from aiayn.table3.stats import by_variation, interval, paired


def paper_change(name: str, metric: str) -> float:
    """The paper's relative change of name against its base: PPL or BLEU ratio minus 1."""
    v, base = variation(name), variation("base")
    return (v.ppl / base.ppl if metric == "ppl" else v.bleu / base.bleu) - 1


def paper_value(name: str, q: str) -> Any:
    """The value of quantity q in the paper's configuration of name."""
    cfg, train = scale_variation(variation(name), PAPER_BASE)
    return quantities(cfg, train)[q]


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def _shown(diff: float, metric: str) -> float:
    """A paired difference as plotted: PPL as a change in %, BLEU in points."""
    return 100 * math.expm1(diff) if metric == "ppl" else diff


def group_plots(records: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG a row group: each variation's paired change against the base, 95% intervals."""
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
        varied = list(dict.fromkeys(variation(n).varied for n in names))
        fig, axes = plt.subplots(
            2,
            len(varied),
            figsize=(max(3.6 * len(varied), 5.0), 6.0),
            squeeze=False,
            sharey="row",
        )
        for col, q in enumerate(varied):
            members = ["base", *[n for n in names if variation(n).varied == q]]
            members.sort(key=lambda n: _sort_key(runs[n][0]["values"][q]))
            labels = [f"{runs[n][0]['values'][q]}\n(paper {paper_value(n, q)})" for n in members]
            for row, metric in enumerate(("ppl", "bleu")):
                ax = axes[row][col]
                ax.axhline(0, color="grey", lw=0.8)
                for x, n in enumerate(members):
                    if n == "base":
                        ax.scatter([x], [0], color="black", zorder=3)
                        continue
                    diffs = paired(runs, n, "base", metric)
                    ys = [_shown(d, metric) for d in diffs.values()]
                    ax.scatter([x] * len(ys), ys, s=14, color="tab:blue", alpha=0.6, zorder=3)
                    iv = interval(list(diffs.values()))
                    mean = _shown(iv.mean, metric)
                    if iv.n >= 2:
                        lo, hi = _shown(iv.lo, metric), _shown(iv.hi, metric)
                        yerr = [[mean - lo], [hi - mean]]
                        ax.errorbar(x, mean, yerr=yerr, fmt="o", color="tab:red", capsize=4)
                    else:
                        ax.scatter([x], [mean], color="tab:red", zorder=3)
                    paper = paper_change(n, metric)
                    if metric == "bleu":  # the paper's change in points of our base's BLEU
                        paper *= _base_bleu(runs, diffs)
                    ax.scatter([x], [100 * paper if metric == "ppl" else paper], marker="x",
                               color="tab:green", s=40, zorder=4)  # fmt: skip
                ax.set_xticks(range(len(members)), labels)
                ax.set_xlim(-0.5, len(members) - 0.5)
                ax.set_xlabel(f"{q} (ours)")
                if col == 0:
                    ax.set_ylabel(
                        "dev PPL, % change vs base" if metric == "ppl" else "dev BLEU vs base"
                    )
                ax.grid(alpha=0.3)
        fig.suptitle(
            f"Table 3 row {group}: change against the base run of the same seed\n"
            "dots: seeds; red: their mean and 95% t-interval; green x: the paper's change\n"
            "(for BLEU its relative change, in points of our base's BLEU)",
            fontsize=10,
        )
        fig.tight_layout()
        path = out_dir / f"table3-{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _base_bleu(runs: dict[str, list[dict]], diffs: dict[int, float]) -> float:
    """Our base's mean BLEU over the seeds of a pairing."""
    values = [r["dev_bleu"] for r in runs["base"] if r["seed"] in diffs]
    return sum(values) / len(values)
