"""Import a Hugging Face Marian translator (e.g. OPUS-MT) as an aiayn model (docs/huggingface.md).

    aiayn import-hf --model Helsinki-NLP/opus-mt-en-de --out opus-en-de.safetensors
    aiayn import-hf --model DIR --out model.safetensors     (a save_pretrained directory)

Writes one aiayn model file with its tokenizer (Marian's SentencePiece pair over one
vocabulary), so that `aiayn translate`, `aiayn evaluate` and `aiayn explore` run on it and
`aiayn.model.trace` records its every step; its logits equal Transformers' (the d_model
coordinates relabelled, the vocabulary reordered: aiayn's ids 0-3 are PAD, BOS, EOS, UNK).
A Hub name needs a machine that reaches huggingface.co; a directory needs nothing but
pip install 'aiayn[hf]'. A checkpoint aiayn cannot represent exactly (pre-LN, learned
positions, another architecture, untied or unscaled embeddings, an activation other than
relu or swish) is refused in one line naming the setting; an existing --out is kept unless
--force.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aiayn.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, metavar="NAME_OR_DIR", help="a Hub name or a local directory"
    )
    parser.add_argument(
        "--out", required=True, metavar="FILE", help="the aiayn model file (.safetensors)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --out")


def run(args: argparse.Namespace) -> int:
    from aiayn.cli.common import output_file
    from aiayn.export.hf import import_marian, require_hf
    from aiayn.run_dir import MODEL_FILE
    from aiayn.translator import TOKENIZER_KEY
    from aiayn.weights import save_model

    require_hf()  # the optional extra, before anything
    out = Path(args.out)
    if out.is_dir() or not out.suffix:
        out = out / MODEL_FILE  # a directory named as the output is made, like --run
    else:
        output_file(out, "--out")  # a file: in a directory that exists
    if out.exists() and not args.force:
        raise UserError(f"{out}: exists; pass --force to replace it")
    state, cfg, tokenizer, meta = import_marian(args.model)
    save_model(out, state, cfg, {TOKENIZER_KEY: tokenizer.to_str(), **meta})
    print(
        f"aiayn import-hf: wrote {out} ({cfg.n_layers}+{cfg.decoder_layers} layers, d_model "
        f"{cfg.d_model}, {cfg.vocab_size} tokens); translate with: aiayn translate "
        f"--checkpoint {out}"
    )
    return 0
