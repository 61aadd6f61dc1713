"""Learning curves of Table 3's runs, and the equal-compute view of row C.

OUT/curves.json holds, for every run that recorded them, its dev perplexity at each evaluated
checkpoint and its training loss per logging window (the mean of the label-smoothed loss over
the window's target tokens, as ``aiayn train`` logs it every ``--log-every`` updates):

    {"runs": {"base-s1": {"dev_ppl": [[200, 41.2], [400, 22.9], ...],
                          "train_loss": [[50, 7.91], [100, 6.80], ...]}, ...}}

``curve_from_metrics`` takes them from a run's RUN/metrics.jsonl events ("valid" and "train");
``write_curve`` adds one run (the file is rewritten whole, atomically); ``read_curves`` checks
the file. ``curve_plots`` draws one figure a row group, dev PPL against updates, every
variation and seed. ``equal_compute`` reads row C at the base's training FLOPs: each run's
dev PPL at the update where it has spent as many FLOPs as the base run of the same seed did in
its whole budget, interpolated between checkpoints (linearly in log PPL) or at the nearest
checkpoint, and labelled so.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from aiayn.errors import UserError
from aiayn.table3.rows import VARIATIONS
from aiayn.table3.stats import by_variation

CURVES_FILE = "curves.json"
SERIES = ("dev_ppl", "train_loss")


def curve_from_metrics(events: Iterable[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """{"dev_ppl": [[step, ppl]...], "train_loss": [[step, loss]...]} of a run's metrics events,
    by step (a step logged twice, as after a resume, keeps its last value)."""
    found: dict[str, dict[int, float]] = {name: {} for name in SERIES}
    for e in events:
        if e.get("event") == "valid" and e.get("ppl") is not None:
            found["dev_ppl"][int(e["step"])] = float(e["ppl"])
        elif e.get("event") == "train" and e.get("loss") is not None:
            found["train_loss"][int(e["step"])] = float(e["loss"])
    return {name: [[s, v] for s, v in sorted(points.items())] for name, points in found.items()}


def _problem(runs: Any) -> str:
    if not isinstance(runs, dict):
        return "no object 'runs'"
    for rid, curve in runs.items():
        if not isinstance(curve, dict) or any(name not in curve for name in SERIES):
            return f"run {rid!r}: needs {' and '.join(SERIES)}"
        for name in SERIES:
            steps = []
            for point in curve[name]:
                ok = isinstance(point, list) and len(point) == 2
                ok = ok and all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in point
                )
                if not ok or not math.isfinite(point[1]) or point[0] < 0:
                    return f"run {rid!r}: {name}: {point!r} is not [step, finite value]"
                steps.append(point[0])
            if steps != sorted(set(steps)):
                return f"run {rid!r}: {name}: steps not increasing"
    return ""


def read_curves(out: Path) -> dict[str, dict[str, list[list[float]]]]:
    """{run: curve} of OUT/curves.json ({} when there is none); a damaged file is one line."""
    path = out / CURVES_FILE
    if not path.is_file():
        return {}
    try:
        runs = json.loads(path.read_text(encoding="utf-8")).get("runs")
    except (ValueError, UnicodeDecodeError, AttributeError):
        runs = None
        problem = "not a JSON object"
    else:
        problem = _problem(runs)
    if problem:
        raise UserError(f"{path}: {problem}; fix it or remove it")
    return runs


def write_curve(out: Path, rid: str, curve: dict[str, list[list[float]]]) -> None:
    """Add (or replace) one run's curve in OUT/curves.json, written whole and atomically."""
    runs = {**read_curves(out), rid: curve}
    if problem := _problem(runs):
        raise ValueError(problem)
    path = out / CURVES_FILE
    tmp = path.with_suffix(".tmp")
    text = json.dumps({"runs": dict(sorted(runs.items()))}, separators=(",", ":"))
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def at_flops(
    dev: Sequence[Sequence[float]], flops_per_update: float, target: float, how: str
) -> dict[str, Any]:
    """The dev PPL of a curve at ``target`` training FLOPs: {"step", "ppl", "how"}.

    how "interpolated": linear in log PPL between the checkpoints around the target update
    (exactly a checkpoint's value on one); "nearest": the checkpoint nearest to it. Beyond the
    last checkpoint, or before the first, there is no value: how says "beyond the run" or
    "before the first checkpoint", ppl is nan, step the update that would be needed.
    """
    if how not in ("interpolated", "nearest"):
        raise ValueError(f"how: interpolated or nearest, got {how!r}")
    step = target / flops_per_update
    if not dev or step > dev[-1][0]:
        return {"step": step, "ppl": math.nan, "how": "beyond the run"}
    if step < dev[0][0]:
        return {"step": step, "ppl": math.nan, "how": "before the first checkpoint"}
    if how == "nearest":
        s, ppl = min(dev, key=lambda p: abs(p[0] - step))
        return {"step": s, "ppl": ppl, "how": "nearest"}
    for (s0, p0), (s1, p1) in itertools.pairwise(dev):
        if s0 <= step <= s1:
            w = (step - s0) / (s1 - s0)
            ppl = math.exp((1 - w) * math.log(p0) + w * math.log(p1))
            return {"step": step, "ppl": ppl, "how": "interpolated"}
    return {"step": step, "ppl": dev[-1][1], "how": "interpolated"}  # one checkpoint only


def equal_compute(
    records: Sequence[dict[str, Any]], curves: dict[str, Any], how: str = "interpolated"
) -> list[dict[str, Any]]:
    """Row C at the base's compute: for each run of row C with a curve, its dev PPL where it
    has spent the training FLOPs of the base run of the same seed (``at_flops``)."""
    runs = by_variation(records)
    base = {r["seed"]: r for r in runs.get("base", [])}
    out = []
    for v in VARIATIONS:
        if v.row != "C":
            continue
        for r in runs.get(v.name, []):
            if r["seed"] not in base or r["run"] not in curves:
                continue
            per_update = r["train_flops"] / r["steps"]
            found = at_flops(
                curves[r["run"]]["dev_ppl"], per_update, base[r["seed"]]["train_flops"], how
            )
            out.append({"run": r["run"], "name": v.name, "seed": r["seed"], **found})
    return out


def curve_plots(
    records: Sequence[dict[str, Any]], curves: dict[str, Any], out_dir: Path
) -> list[Path]:
    """One PNG a row group: dev PPL against updates, every variation and seed (the base in
    black), on a log scale; groups without a curve are skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = by_variation(records)
    written = []
    for group in ("A", "B", "C", "D", "E"):
        names = ["base", *[v.name for v in VARIATIONS if v.row == group]]
        shown = [(n, r) for n in names for r in runs.get(n, []) if r["run"] in curves]
        if not any(n != "base" for n, _ in shown):
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(7.0, 4.5))
        colors = {n: f"C{i}" for i, n in enumerate(names)}
        for n, r in shown:
            dev = curves[r["run"]]["dev_ppl"]
            ax.plot([p[0] for p in dev], [p[1] for p in dev], marker="o", ms=3,
                    color="black" if n == "base" else colors[n],
                    linestyle="-" if r["seed"] == 1 else "--",
                    label=n if r["seed"] == min(x["seed"] for x in runs[n]) else None)  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("updates")
        ax.set_ylabel("dev PPL")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"Table 3 row {group}: dev PPL at each checkpoint (seed 1 solid)", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"curves-{group}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
