"""Load a trained aiayn model and translate from Python.  Section 6.1.

    python examples/translate.py [CHECKPOINT] [SENTENCE ...]

CHECKPOINT is what `aiayn translate --checkpoint` takes: a model file (e.g. the demo's
runs/demo/average.safetensors, the default), a checkpoint directory or a run directory (its
latest checkpoint). The tokenizer travels inside the checkpoint. The search is the paper's:
beam 4, length penalty lp(Y) = ((5 + |Y|) / 6)^0.6, at most |X| + 50 output tokens.
"""

from __future__ import annotations

import sys

from aiayn.config import DecodeConfig
from aiayn.errors import UserError
from aiayn.translator import load_translator

DEFAULT_CHECKPOINT = "runs/demo/average.safetensors"  # written by `make demo`
DEFAULT_SENTENCES = [  # the demo's domain: Multi30k, captions of photographs
    "A dog runs through the grass.",
    "Two children are playing on the beach.",
]


def main(argv: list[str]) -> int:
    checkpoint = argv[0] if argv else DEFAULT_CHECKPOINT
    sentences = argv[1:] or DEFAULT_SENTENCES
    try:
        # nbest=2: the two best finished hypotheses of each beam, best first
        translator = load_translator(checkpoint, DecodeConfig(beam=4, alpha=0.6, nbest=2))
    except UserError as e:  # a missing or unreadable checkpoint: one line, no traceback
        print(f"error: {e} (run `make demo` to train one)", file=sys.stderr)
        return 2
    for source, nbest in zip(sentences, translator.translate(sentences), strict=True):
        print(source)
        for text, hyp in nbest:
            # score = log P(Y|X) / lp(Y); the tokens end with EOS
            print(
                f"  {hyp.score:8.4f}  log P {hyp.logprob:8.4f}  {len(hyp.tokens):3d} tokens  {text}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
