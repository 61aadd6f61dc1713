"""How well a model translates, in the numbers the field uses.  Section 6.1, Tables 2 and 3.

Three BLEU flavours are not interchangeable (on the same output, tokenized and detokenized BLEU
differ by about 0.7 to 1.5 points):

- ``sacre_bleu``: corpus BLEU of the *detokenized* output against the raw references, with
  sacreBLEU's signature. The headline number.
- ``chrf``: sacreBLEU's chrF2 of the same text, with its signature.
- ``lowercase_bleu``: sacreBLEU of the same text, lowercased (signature ``case:lc``, 13a): the
  flavour most Multi30k papers report (they lowercase, tokenize with Moses and score with
  multi-bleu.perl; 13a approximates that tokenizer). Labelled wherever it is shown, so a figure
  here can stand beside a published one.
- ``paper_bleu``: the flavour of the paper's Table 2: both sides tokenized (here with
  sacreBLEU's 13a tokenizer, an approximation of Moses' tokenizer.perl), compounds split
  ("rich-text" -> "rich ##AT##-##AT## text"), then BLEU on those tokens without smoothing, as
  multi-bleu.perl computes it. Labelled as such wherever it is shown.

Also the perplexity of the references under the model (teacher-forced, per target token, EOS
included, padding excluded), the quantity of Table 3's PPL column.

>>> compound_split("a rich-text format , well-known")
'a rich ##AT##-##AT## text format , well ##AT##-##AT## known'
>>> round(paper_bleu(["the rich-text format"], ["the rich-text format"]), 1)
100.0
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import torch

from aiayn.config import DecodeConfig
from aiayn.data.batch import collate
from aiayn.loss import Perplexity
from aiayn.model import Transformer
from aiayn.translator import Translator

LOWERCASE_BLEU_LABEL = "lowercased (the flavour of most Multi30k papers)"
PAPER_BLEU_LABEL = (
    "tokenized BLEU, 13a + compound splitting (paper-compatible flavour, not sacreBLEU)"
)
_COMPOUND = re.compile(r"(\S)-(\S)")


def sacre_bleu(hyps: Sequence[str], refs: Sequence[str]) -> tuple[float, str]:
    """(corpus BLEU, signature) of detokenized text; sacreBLEU's defaults (13a, exp smoothing)."""
    from sacrebleu.metrics import BLEU

    metric = BLEU()
    score = metric.corpus_score(list(hyps), [list(refs)])
    return score.score, str(metric.get_signature())


def lowercase_bleu(hyps: Sequence[str], refs: Sequence[str]) -> tuple[float, str]:
    """(corpus BLEU, signature) of lowercased, 13a-tokenized text: the Multi30k papers' flavour.

    >>> round(lowercase_bleu(["A Dog runs ."], ["a dog runs ."])[0], 1)
    100.0
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(lowercase=True)
    score = metric.corpus_score(list(hyps), [list(refs)])
    return score.score, str(metric.get_signature())


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> tuple[float, str]:
    """(corpus chrF2, signature) of detokenized text (sacreBLEU)."""
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    score = metric.corpus_score(list(hyps), [list(refs)])
    return score.score, str(metric.get_signature())


def compound_split(text: str) -> str:
    """(\\S)-(\\S) -> "$1 ##AT##-##AT## $2", left to right without overlap (as in the script).

    The substitution of tensor2tensor's get_ende_bleu.sh, after the Stanford NMT convention:
    non-overlapping, so "a-b-c" keeps its second hyphen ("a ##AT##-##AT## b-c"), as perl's
    ``s{(\\S)-(\\S)}{...}g`` does.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", text)


def paper_tokenize(text: str, tokenize: str = "13a") -> str:
    """The text as the paper-compatible BLEU sees it: tokenized, then compounds split."""
    if tokenize == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        tokenized = Tokenizer13a()(text)
    elif tokenize == "intl":
        # The international tokenizer splits every hyphen itself, leaving no compound to mark.
        from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

        tokenized = TokenizerV14International()(text)
    else:
        raise ValueError(f"paper_tokenize: tokenize must be 13a or intl, got {tokenize!r}")
    return compound_split(tokenized)


def paper_bleu(hyps: Sequence[str], refs: Sequence[str], tokenize: str = "13a") -> float:
    """Tokenized BLEU with compound splitting (multi-bleu.perl style).  Table 2's flavour.

    Not sacreBLEU: report it only with ``PAPER_BLEU_LABEL``.
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize="none", smooth_method="none", force=True)
    h = [paper_tokenize(x, tokenize) for x in hyps]
    r = [paper_tokenize(x, tokenize) for x in refs]
    return metric.corpus_score(h, [r]).score


@torch.inference_mode()
def reference_perplexity(
    model: Transformer,
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    max_tokens: int = 6000,
) -> Perplexity:
    """PPL = exp(-(1/N) sum_t log P(y_t | y_<t, X)), teacher-forced.  Table 3.

    pairs: (source ids, target ids) without specials. Every target token and its EOS counts
    once; padding never does. No label smoothing: the model's own probabilities.
    """
    model.eval()
    device = model.embedding.device
    order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
    nll, count, start = 0.0, 0, 0
    while start < len(order):
        widest = max(len(pairs[order[start]][0]), len(pairs[order[start]][1])) + 1
        size = max(1, max_tokens // widest)
        batch = collate([pairs[i] for i in order[start : start + size]]).to(device)
        # label_smoothed_loss's NLL (eps = 0), through the model's ops: the fast kernel never
        # builds the (B, T, V) logits at once.
        _, batch_nll, n = model(batch.src, batch.tgt_in, target=batch.tgt_out)
        nll += float(batch_nll)
        count += int(n)
        start += size
    return Perplexity(nll, count)


def score_texts(hyps: Sequence[str], refs: Sequence[str]) -> dict[str, Any]:
    """sacreBLEU (headline), chrF, lowercased BLEU and the paper-compatible BLEU of the texts."""
    if len(hyps) != len(refs):
        raise ValueError(f"score_texts: {len(hyps)} hypotheses but {len(refs)} references")
    bleu, bleu_sig = sacre_bleu(hyps, refs)
    chr_f, chrf_sig = chrf(hyps, refs)
    lc, lc_sig = lowercase_bleu(hyps, refs)
    return {
        "sacrebleu": {"score": bleu, "signature": bleu_sig},
        "chrf": {"score": chr_f, "signature": chrf_sig},
        "lowercase_bleu": {"score": lc, "signature": lc_sig, "label": LOWERCASE_BLEU_LABEL},
        "paper_bleu": {"score": paper_bleu(hyps, refs), "label": PAPER_BLEU_LABEL},
    }


def greedy_bleu(
    model: Transformer, tokenizer: Any, sources: Sequence[str], references: Sequence[str]
) -> float:
    """sacreBLEU of greedy translations (beam 1, max length |X| + 50).  Section 6.1.

    The validation BLEU of ``aiayn train --valid-bleu``: ``train(..., bleu=greedy_bleu)``.
    """
    translator = Translator(model, tokenizer, DecodeConfig(beam=1, nbest=1))
    hyps = [nbest[0][0] for nbest in translator.translate(list(sources))]
    return sacre_bleu(hyps, references)[0]


def evaluate(translator: Any, sources: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """Translate sources, then every figure: BLEU flavours, chrF, reference PPL, speed.

    ``translator`` is an ``aiayn.translator.Translator``. Returns a JSON-ready dict; the
    hypotheses are under "hypotheses".
    """
    if len(sources) != len(references):
        raise ValueError(f"evaluate: {len(sources)} sources but {len(references)} references")
    src_ids = translator.encode(sources)
    t0 = time.perf_counter()
    nbest = translator.translate_ids(src_ids)
    if translator.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    hyps = [translator.tokenizer.decode(hs[0].tokens) if hs else "" for hs in nbest]
    report = score_texts(hyps, references)
    ref_ids = translator.tokenizer.encode_target_batch(list(references))
    pairs = list(zip(src_ids, ref_ids, strict=True))
    engine_ppl = getattr(translator, "perplexity", None)  # an exported model scores itself
    ppl = (
        engine_ppl(pairs)
        if engine_ppl is not None
        else reference_perplexity(translator.model, pairs)
    )
    report["perplexity"] = {"value": ppl.value, "nll": ppl.nll, "tokens": ppl.tokens}
    report["speed"] = {
        "sentences": len(sources),
        "seconds": seconds,
        "sentences_per_second": len(sources) / seconds if seconds > 0 else float("inf"),
        "cached": translator.cached,
        "device": str(translator.device),
    }
    report["hypotheses"] = hyps
    return report
