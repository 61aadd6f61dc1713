"""The run's metrics: one JSON object a line in RUN/metrics.jsonl, and their plots.

Events (key "event"): "train" (every log_every steps: smoothed loss, NLL and perplexity per
target token, learning rate, tokens per second), "valid" (validation loss, NLL, perplexity and
optionally BLEU), "skip" (an update skipped for a non-finite loss or gradient), "checkpoint",
"stop" (why the run ended). Every event carries the step it belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiayn.run_dir import METRICS_FILE, read_metrics  # read_metrics: aiayn.train's API too
from aiayn.storage import append_text, atomic_write


class MetricsLog:
    """Appends events to RUN/metrics.jsonl (only on the main rank: pass ``enabled=False`` else)."""

    def __init__(self, run_dir: str | Path, enabled: bool = True) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self.enabled = enabled

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"event": event, **fields}
        if self.enabled:
            append_text(self.path, json.dumps(record, allow_nan=True) + "\n")
        return record

    def truncate_after(self, step: int) -> None:
        """Drop events after ``step`` (those of a run that is being resumed from ``step``)."""
        if not self.enabled or not self.path.exists():
            return
        kept = [r for r in read_metrics(self.path) if int(r.get("step", 0)) <= step]
        text = "".join(json.dumps(r) + "\n" for r in kept)
        atomic_write(self.path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _series(events: Iterable[dict[str, Any]], event: str, key: str) -> tuple[list, list]:
    xs, ys = [], []
    for e in events:
        if e.get("event") == event and e.get(key) is not None:
            xs.append(e["step"])
            ys.append(e[key])
    return xs, ys


def plot_metrics(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Draw loss.png, perplexity.png, lr.png and bleu.png where logged; return their paths.

    A figure whose curves have no point is not drawn (bleu.png without a validation BLEU, lr.png
    without a train event), and the directory is made only when a figure is written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = read_metrics(run_dir)
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "plots"
    figures = {
        "loss": [
            ("train", "loss", "train, label-smoothed"),
            ("train", "nll", "train, NLL"),
            ("valid", "loss", "valid, label-smoothed"),
            ("valid", "nll", "valid, NLL"),
        ],
        "perplexity": [("train", "ppl", "train"), ("valid", "ppl", "valid")],
        "lr": [("train", "lr", "learning rate, Eq. (3)")],
        "bleu": [("valid", "bleu", "valid BLEU")],
    }
    ylabels = {"loss": "nats per target token", "perplexity": "exp(NLL)", "lr": "lr", "bleu": ""}
    written = []
    for name, curves in figures.items():
        data = [(_series(events, ev, key), label) for ev, key, label in curves]
        if not any(xs for (xs, _), _ in data):
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for (xs, ys), label in data:
            if xs:
                ax.plot(xs, ys, label=label, marker="." if len(xs) < 30 else None)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabels[name])
        if name == "perplexity":
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.png"
        atomic_write(path, lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=100))
        plt.close(fig)
        written.append(path)
    return written
