"""Ship a trained model inside the package: aiayn/pretrained/NAME.safetensors, its registry entry
and its results file (docs/pretrained.md), every figure measured on the shipped file itself.

    python scripts/ship-model.py en-zh RUN/final.safetensors --data DATA \\
        --prepare "aiayn prepare --source tatoeba --lang-pair en-zh --no-progress --out {data}" \\
        --made-by "python experiments/2026-12-tatoeba-en-zh/search.py ... final ..." \\
        --description "..." --source "..." --licence "..." --example "I love you.=我爱你。"

Scores the shipped file on the whole valid and test splits of DATA (`aiayn evaluate`, beam 4,
alpha 0.6, sacreBLEU with the target language's tokenizer, chrF2) and on the first 200 test
sentences (the block tests/test_pretrained.py re-scores), and records the commit, the data's
SHA-256, the command that trained it and the data's licence. A model over 12 MB is refused.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
MAX_BYTES = 12_000_000


def evaluate(checkpoint: str, data: Path, split: str, limit: int | None = None) -> dict:
    from aiayn.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        argv = ["evaluate", "--checkpoint", checkpoint, "--data", str(data), "--split", split]
        argv += ["--json", str(report)] + (["--limit", str(limit)] if limit else [])
        if main(argv) != 0:
            sys.exit(f"aiayn {' '.join(argv)} failed")
        r = json.loads(report.read_text(encoding="utf-8"))
    return {
        "sentences": r["speed"]["sentences"],
        "sacrebleu": round(r["sacrebleu"]["score"], 2),
        "signature": r["sacrebleu"]["signature"],
        "chrf": round(r["chrf"]["score"], 2),
        "perplexity": round(r["perplexity"]["value"], 3),
    }


def write_shipped(model: Path, dest: Path) -> None:
    """The model file as shipped: the same weights, config and tokenizer, its averaged checkpoints
    named by their directory (step_N) instead of the paths of the machine that trained it."""
    from aiayn.weights import CONFIG_KEY, DIGEST_KEY, load_state, save_model

    state, config, meta = load_state(model)
    meta = {k: v for k, v in meta.items() if k not in (CONFIG_KEY, DIGEST_KEY)}
    if "averaged_from" in meta:
        names = [Path(f).parent.name or Path(f).name for f in json.loads(meta["averaged_from"])]
        meta["averaged_from"] = json.dumps(names)
    save_model(dest, state, config, metadata=meta)


def _data_sha256(source_info: dict) -> str | dict[str, str]:
    """The SHA-256 of what was read: one file's (Tatoeba), or each raw file's where the corpus is
    several files that match the official sums (Multi30k)."""
    if "sha256" in source_info:
        return source_info["sha256"]
    if source_info.get("matches_official_sha256"):
        from aiayn.data.corpora.multi30k import SHA256

        return dict(SHA256)
    sys.exit(f"the data's manifest records no SHA-256 of its source: {source_info}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("model", type=Path, help="the model file (aiayn average's output)")
    ap.add_argument("--data", type=Path, required=True, help="its prepared data directory")
    ap.add_argument("--prepare", required=True, help="the command that prepares DATA ({data})")
    ap.add_argument("--made-by", required=True, help="the command that trained the model")
    ap.add_argument("--description", required=True)
    ap.add_argument("--source", required=True, help="where the data comes from, in words")
    ap.add_argument("--licence", required=True, help="the data's licence")
    ap.add_argument("--example", action="append", default=[], help="SOURCE=REFERENCE")
    ap.add_argument(
        "--corpus", help="the prepare source (tatoeba, multi30k): the explorer names it"
    )
    ap.add_argument("--record", type=Path, help="the results file of the run that chose it")
    args = ap.parse_args()

    from aiayn import pretrained
    from aiayn.data import layout
    from aiayn.storage import sha256_file

    size = args.model.stat().st_size
    if size > MAX_BYTES:
        sys.exit(f"{args.model}: {size:,} bytes, over the {MAX_BYTES:,} a shipped model may have")
    dest = pretrained.DIR / f"{args.name}.safetensors"
    write_shipped(args.model, dest)
    size = dest.stat().st_size
    examples = [
        dict(zip(("source", "reference"), e.split("=", 1), strict=True)) for e in args.example
    ]
    results_name = f"{args.name}.results.json"
    manifest = json.loads(layout.manifest_path(args.data).read_text(encoding="utf-8"))
    registry_path = pretrained.DIR / pretrained.REGISTRY
    models = json.loads(registry_path.read_text(encoding="utf-8"))
    models[args.name] = {
        "file": dest.name,
        "sha256": sha256_file(dest),
        "bytes": size,
        "results": results_name,
        "description": args.description,
        "data_licence": args.licence,
        "examples": examples,
        "corpus": args.corpus or manifest["source"],
        "languages": [manifest["src_lang"], manifest["tgt_lang"]],
    }
    registry_path.write_text(json.dumps(models, indent=2, ensure_ascii=False) + "\n", "utf-8")
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    first = evaluate(args.name, args.data, "test", 200)
    first["command"] = (
        f"aiayn evaluate --checkpoint {args.name} --data {{data}} --split test --limit 200"
    )
    results = {
        "model": args.name,
        "file": {"name": dest.name, "bytes": size, "sha256": models[args.name]["sha256"]},
        "made_by": args.made_by,
        "commit": commit,
        "data": {
            "source": args.source,
            "licence": args.licence,
            "prepare": args.prepare,
            "sha256": _data_sha256(manifest["source_info"]),
            "pairs": {k: v["pairs"] for k, v in manifest["splits"].items()},
        },
        "decoding": "beam 4, alpha 0.6 (section 6.1), aiayn evaluate's defaults",
        "valid": evaluate(args.name, args.data, "valid"),
        "test": evaluate(args.name, args.data, "test"),
        "test_first_200": first,
        "chosen_by": str(args.record) if args.record else None,
    }
    out = pretrained.DIR / results_name
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
