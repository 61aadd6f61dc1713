"""The model the explorer shows, named: its data, its languages, how far it was trained.

What a run directory and a model file record (``aiayn.run_dir``, ``aiayn.weights``): the
prepared data's corpus and languages (the run's ``config.json`` names the data), the update a
checkpoint was saved at and the checkpoints an average was made of (the file's metadata), and
the run's validations (``metrics.jsonl``). With them the page can say "trained for 300 steps,
valid perplexity 412" beside a translation, so that a model that has not learned yet and a
model that is broken do not look alike.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from aiayn.errors import UserError
from aiayn.run_dir import CONFIG_FILE, read_metrics

MAX_EXAMPLES = 40  # test sentences offered on the page
CORPORA = {  # what a run's prepared data was, in words (the page says it beside the input)
    "packaged": "software help texts (LibreOffice help, from Debian packages)",
    "multi30k": "Multi30k: everyday image captions",
    "tatoeba": "Tatoeba: short everyday sentences",
    "numbers": "numbers written out in words",
    "copy": "a synthetic copy task",
    "reverse": "a synthetic reverse task",
    "wmt14": "WMT 2014 news and parliament texts",
    "files": "the parallel files given to aiayn prepare",
}
KINDS = ("trained", "imported", "shipped")  # which model the page shows (Explorer's ``kind``)
TRAINED = "trained with aiayn"  # the origin of a model file that names none


def origin(path: Path) -> str:
    """Where the model came from: its metadata's "origin" (aiayn import-hf), else aiayn."""
    from aiayn.weights import read_metadata

    return read_metadata(path).get("origin") or TRAINED


def training(path: Path, run_dir: Path | None) -> dict[str, Any]:
    """What the model file and its run record of its training, for the page to name the model.

    ``step``: the updates the model file was saved at (an average: its newest checkpoint's),
    None where the file does not say (an imported model); ``averaged``: how many checkpoints
    were averaged into it (0: none); ``valid``: the run's last validation at or before that
    step (``step``, ``ppl``, and ``bleu`` where ``--valid-bleu`` scored it), None without one.
    """
    from aiayn.weights import read_metadata

    meta = read_metadata(path)
    step = int(meta["step"]) if meta.get("step", "").isdigit() else None
    try:
        averaged = len(json.loads(meta.get("averaged_from", "[]")))
    except (ValueError, TypeError):
        averaged = 0
    valid = None
    if run_dir is not None:
        try:
            events = read_metrics(run_dir)
        except UserError:  # no metrics, or damaged: the page names the model without them
            events = []
        done = [
            e
            for e in events
            if e.get("event") == "valid" and (step is None or e.get("step", 0) <= step)
        ]
        if done:
            last = done[-1]
            valid = {"step": last.get("step"), "ppl": _number(last.get("ppl"))}
            if _number(last.get("bleu")) is not None:
                valid["bleu"] = _number(last.get("bleu"))
    return {"step": step, "averaged": averaged, "valid": valid}


def _number(x: Any) -> float | None:
    """A finite number of a metrics event, rounded; anything else None."""
    ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
    return round(float(x), 4) if ok else None


def run_data(run_dir: Path) -> tuple[str, list[str] | None, list[dict[str, str]]]:
    """The run's corpus name, its [source, target] languages and the first test pairs of its
    prepared data (if still there)."""
    from aiayn.data import load_prepared

    try:
        data = json.loads((run_dir / CONFIG_FILE).read_text(encoding="utf-8")).get("data")
        prepared = load_prepared(data)
        sources, references = prepared.texts("test")
    except (OSError, ValueError, TypeError, UserError):
        return "unknown", None, []
    pairs = [
        {"source": s, "reference": r}
        for s, r in zip(sources[:MAX_EXAMPLES], references[:MAX_EXAMPLES], strict=False)
    ]
    manifest = prepared.manifest
    langs = [manifest.get("src_lang"), manifest.get("tgt_lang")]
    languages = [str(x) for x in langs] if all(langs) else None
    return str(manifest.get("source", "unknown")), languages, pairs
