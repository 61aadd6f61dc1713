"""Export a trained model: CTranslate2, ONNX Runtime (docs/serving.md) or Hugging Face.

    aiayn export --checkpoint PATH --format ctranslate2 --out DIR [--quantization int8]
    aiayn export --checkpoint PATH --format onnx --out DIR
    aiayn export --checkpoint PATH --format hf --out DIR      (docs/huggingface.md)

`--format hf` writes a MarianMT directory for Hugging Face Transformers (pip install
'aiayn[hf]'): `MarianMTModel.from_pretrained(DIR)`, `AutoTokenizer.from_pretrained(DIR)` and
`pipeline("translation", model=DIR)` load it offline.

The directory holds the model, the checkpoint's tokenizer and aiayn_export.json; run it with
`aiayn translate --engine ctranslate2 --checkpoint DIR` (or `--engine onnx`), and score it with
`aiayn evaluate --engine ...`. The engines are an optional extra: pip install 'aiayn[serve]'.
A checkpoint the engine cannot represent is refused with the setting named, before anything
is written; an existing non-empty DIR is replaced only with --force.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aiayn.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint", required=True, metavar="PATH", help="model file, checkpoint or run dir"
    )
    parser.add_argument("--format", required=True, choices=("ctranslate2", "onnx", "hf"))
    parser.add_argument("--out", required=True, metavar="DIR", help="the export directory")
    parser.add_argument(
        "--quantization",
        default="float32",
        help="CTranslate2 weight type: float32 (default), int8, int8_float32, int16, float16, "
        "bfloat16",
    )
    parser.add_argument(
        "--max-positions",
        type=int,
        default=None,
        metavar="N",
        help="rows of the position table, i.e. the longest source or output in tokens "
        "(default 1024; a learned table keeps its own size)",
    )
    parser.add_argument("--tokenizer", metavar="FILE", default=None, help="tokenizer JSON")
    parser.add_argument("--force", action="store_true", help="replace a non-empty --out")


def run(args: argparse.Namespace) -> int:
    from aiayn.cli.common import say_checkpoint
    from aiayn.export import (
        DEFAULT_MAX_POSITIONS,
        EXPORT_NEEDS,
        check_exportable,
        prepare_out,
        publish,
        require,
    )
    from aiayn.run_dir import resolve_checkpoint
    from aiayn.translator import load_translator

    for module in EXPORT_NEEDS[args.format]:  # the optional extra, before anything
        require(module)
    if args.format == "hf":
        from aiayn.export.hf import require_hf

        require_hf()
    out = prepare_out(args.out, args.force)
    rows = args.max_positions if args.max_positions is not None else DEFAULT_MAX_POSITIONS
    if rows < 2:
        raise UserError(f"--max-positions: must be >= 2, got {rows}")
    if args.format != "ctranslate2" and args.quantization != "float32":
        raise UserError("--quantization applies to --format ctranslate2 only")
    if args.format == "ctranslate2":
        from aiayn.export.ct2 import QUANTIZATIONS

        if args.quantization not in QUANTIZATIONS:
            raise UserError(
                f"--quantization: unknown type {args.quantization!r}; choose from "
                f"{', '.join(QUANTIZATIONS)}"
            )
    say_checkpoint("export", args.checkpoint)  # a shipped model's name: which model it means
    if args.format == "hf":
        return _export_hf(args, out)
    path = resolve_checkpoint(args.checkpoint)
    translator = load_translator(path, tokenizer=args.tokenizer, device="cpu")
    model, tok = translator.model, translator.tokenizer
    check_exportable(model.config, args.format)
    meta = {"checkpoint": str(path)}
    if args.format == "ctranslate2":
        from aiayn.export.ct2 import export_ctranslate2

        def write(tmp: Path) -> None:
            export_ctranslate2(model, tok, tmp, args.quantization, rows, meta=meta)
    else:
        from aiayn.export.ort import export_onnx

        def write(tmp: Path) -> None:
            export_onnx(model, tok, tmp, rows, meta=meta)

    publish(out, args.force, write)
    print(f"aiayn export: wrote {out} ({args.format}); run it with: aiayn translate "
          f"--engine {args.format} --checkpoint {out}")  # fmt: skip
    return 0


def _export_hf(args: argparse.Namespace, out: Path) -> int:
    from aiayn.export import publish
    from aiayn.export.hf import check_exportable_hf, export_hf, require_hf
    from aiayn.run_dir import resolve_checkpoint
    from aiayn.translator import load_translator

    if args.quantization != "float32" or args.max_positions is not None:
        raise UserError("--quantization and --max-positions apply to ctranslate2 and onnx only")
    require_hf()
    path = resolve_checkpoint(args.checkpoint)
    translator = load_translator(path, tokenizer=args.tokenizer, device="cpu", kernels="plain")
    model, tok = translator.model, translator.tokenizer
    check_exportable_hf(model.config)
    publish(out, args.force, lambda tmp: export_hf(model, tok, tmp, {"checkpoint": str(path)}))
    print(f"aiayn export: wrote {out} (hf); load it with: "
          f"transformers.MarianMTModel.from_pretrained({str(out)!r})")  # fmt: skip
    return 0
