"""For the shipped models (aiayn.pretrained): re-score one on its first test sentences and hold
the figure to its results file; and a tiny stand-in model, made in seconds, to test with.

A shipped model's results JSON (docs/pretrained.md) records where its test sentences come from
and what they scored::

    {"model": "en-zh",
     "data": {"source": "...", "licence": "...", "prepare": "aiayn prepare ... --out {data}"},
     "test_first_200": {"command": "aiayn evaluate --checkpoint en-zh --data {data} --split test
                                    --limit 200", "sentences": 200,
                        "sacrebleu": 0.0, "signature": "...", "chrf": 0.0}}

``{data}`` stands for the directory the prepare command writes. ``record`` makes that block
from a model and its prepared data (how a real model's results file is written), ``rescore``
runs the recorded command again and ``check`` holds the two to each other.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path
from typing import Any

TEST_SENTENCES = 200  # the first N test sentences are re-scored (a few seconds on a CPU)
TOLERANCE = 0.5  # points of sacreBLEU and chrF2: another CPU may round a beam differently
BLOCK = "test_first_200"


def _main(argv: list[str]) -> None:
    """Run `aiayn ARGV` quietly; its output is in the assertion message if it fails."""
    from aiayn.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(argv)
    assert rc == 0, f"aiayn {shlex.join(argv)}: exit {rc}\n{out.getvalue()}"


def command(recorded: str, data: Path) -> list[str]:
    """A recorded `aiayn ...` command as argv for aiayn.cli.main, with {data} made DATA."""
    words = [w.replace("{data}", str(data)) for w in shlex.split(recorded)]
    assert words[0] == "aiayn", f"not an aiayn command: {recorded}"
    return words[1:]


def prepare(results: dict[str, Any], data: Path) -> Path:
    """Prepare the model's test data into DATA with the command its results file records."""
    _main(command(results["data"]["prepare"], data))
    return data


def score(checkpoint: str | Path, data: Path, n: int = TEST_SENTENCES) -> dict[str, Any]:
    """The figures of `aiayn evaluate --checkpoint CHECKPOINT --data DATA --split test
    --limit N` (beam 4, alpha 0.6): the block a results file records, and rescore compares."""
    evaluate = f"aiayn evaluate --checkpoint {checkpoint} --data {{data}} --split test --limit {n}"
    return _evaluate(evaluate, data)


def _evaluate(evaluate: str, data: Path) -> dict[str, Any]:
    report_file = data.parent / f"{data.name}.report.json"
    _main([*command(evaluate, data), "--json", str(report_file)])
    report = json.loads(report_file.read_text(encoding="utf-8"))
    report_file.unlink()
    return {
        "command": evaluate,
        "sentences": report["speed"]["sentences"],
        "sacrebleu": round(report["sacrebleu"]["score"], 2),
        "signature": report["sacrebleu"]["signature"],
        "chrf": round(report["chrf"]["score"], 2),
    }


def record(
    name: str, data: Path, prepare_command: str, source: str, licence: str
) -> dict[str, Any]:
    """A results file's content for the shipped model NAME (already registered), scored on
    DATA, which PREPARE_COMMAND (with {data} for its --out) wrote."""
    return {
        "model": name,
        "data": {"source": source, "licence": licence, "prepare": prepare_command},
        BLOCK: score(name, data),
    }


def rescore(name: str, data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recorded, measured): the shipped model NAME's first-200 block, and the same command run
    again on DATA (prepared by ``prepare`` from the same results file)."""
    from aiayn import pretrained

    recorded = pretrained.results(name)[BLOCK]
    return recorded, _evaluate(recorded["command"], data)


def check(recorded: dict[str, Any], measured: dict[str, Any], tol: float = TOLERANCE) -> None:
    """The re-scored figures are the recorded ones, within tol points, on as many sentences."""
    assert measured["sentences"] == recorded["sentences"], (recorded, measured)
    for key in ("sacrebleu", "chrf"):
        assert abs(measured[key] - recorded[key]) <= tol, f"{key}: {recorded} != {measured}"


# The tiny stand-in: English-Chinese pairs in a Tatoeba bundle's form (text, tab, text, tab,
# attribution), prepared by `aiayn prepare --source tatoeba` as en-zh's data is, trained for one
# step of a d_model 16 model and averaged by `aiayn average` as a shipped model is.

CREDIT = "CC-BY 2.0 (France) Attribution: tatoeba.org #{} (CK) & #{} (Martha)"
LOVE = ("I love you.", "我爱你。")


def make_tiny(base: Path) -> dict[str, Any]:
    """Under BASE: a bundle, its prepared data, a one-step run and its average; returns
    {"model", "data", "prepare"} (the prepare command, with {data} for its --out)."""
    from tests.zh_support import PAIRS

    base.mkdir(parents=True, exist_ok=True)
    lines = [f"{en}\t{zh}\t{CREDIT.format(i, 1000 + i)}" for i, (en, zh) in enumerate(PAIRS)]
    lines.append(f"{LOVE[0]}\t{LOVE[1]}\t{CREDIT.format(1434, 380195)}")
    bundle = base / "cmn.txt"
    bundle.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["aiayn", "prepare", "--source", "tatoeba", "--lang-pair", "en-zh", "--tatoeba-file"]
    argv += [str(bundle), "--vocab-size", "300", "--valid-share", "0.1", "--test-share", "0.2"]
    prepare_command = shlex.join([*argv, "--no-progress", "--out", "{data}"])
    data, run, model = base / "data", base / "run", base / "en-zh.safetensors"
    _main(command(prepare_command, data))
    train = ["train", "--data", str(data), "--run", str(run), "--preset", "tiny"]
    train += ["--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--n-layers", "1"]
    _main([*train, "--max-tokens", "400", "--warmup", "10", "--max-steps", "1", "--no-progress"])
    _main(["average", str(run), "--last", "1", "--out", str(model)])
    return {"model": model, "data": data, "prepare": prepare_command}
