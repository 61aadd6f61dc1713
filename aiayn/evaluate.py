"""How well a model translates, in the numbers the field uses.  Section 6.1, Tables 2 and 3.

Three BLEU flavours are not interchangeable (on the same output, tokenized and detokenized BLEU
differ by about 0.7 to 1.5 points):

- ``sacre_bleu``: corpus BLEU of the *detokenized* output against the raw references, with
  sacreBLEU's signature. The headline number. Words are cut with the tokenizer of the target
  language, ``bleu_tokenizer(lang)``: ``zh`` for Chinese, ``ja-mecab`` and ``ko-mecab`` for
  Japanese and Korean where MeCab is installed (else ``char``), and 13a, sacreBLEU's default,
  for every other language and an unknown one (en, de, fr: every EN-DE figure here). The
  signature names it (``tok:zh``): 13a would score a Chinese sentence, written without spaces,
  as one word, so that one wrong character makes the whole sentence wrong.
- ``chrf``: sacreBLEU's chrF2 of the same text, with its signature: character n-grams, the same
  for every language.
- ``lowercase_bleu``: sacreBLEU of the same text, lowercased (signature ``case:lc``, 13a): near
  the Multi30k papers' flavour, not it (13a keeps "McDonald's" whole, Moses splits it). With the
  target language's tokenizer, as ``sacre_bleu``.
- ``moses_bleu``: the Multi30k papers' flavour itself: both sides lowercased, punctuation
  normalized and tokenized as the Multi30k repository's ``task1-tokenize.sh`` does with the Moses
  scripts (here their port, sacremoses), then BLEU on those tokens without smoothing, as
  multi-bleu.perl computes it. Labelled wherever it is shown, so a figure here can stand beside
  a published one.
- ``paper_bleu``: the flavour of the paper's Table 2: both sides tokenized (here with
  sacreBLEU's 13a tokenizer, an approximation of Moses' tokenizer.perl), compounds split
  ("rich-text" -> "rich ##AT##-##AT## text"), then BLEU on those tokens without smoothing, as
  multi-bleu.perl computes it. Labelled as such wherever it is shown.

The last two are flavours of European-language papers: their tokenizers (Moses', 13a) split
at spaces and punctuation only, so ``score_texts`` leaves them out, saying why, for a target
whose BLEU tokenizer is not 13a (Chinese, Japanese, Korean).

Also the perplexity of the references under the model (teacher-forced, per target token, EOS
included, padding excluded), the quantity of Table 3's PPL column.

>>> compound_split("a rich-text format , well-known")
'a rich ##AT##-##AT## text format , well ##AT##-##AT## known'
>>> round(paper_bleu(["the rich-text format"], ["the rich-text format"]), 1)
100.0
>>> bleu_tokenizer("zh"), bleu_tokenizer("de"), bleu_tokenizer(None)
('zh', '13a', '13a')
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import torch

from aiayn.config import DecodeConfig
from aiayn.data.batch import collate
from aiayn.loss import Perplexity
from aiayn.model import Transformer
from aiayn.translator import Translator

LOWERCASE_BLEU_LABEL = (
    "lowercased sacreBLEU, 13a: approximates the Multi30k papers' flavour (Moses BLEU is it)"
)
MOSES_BLEU_LABEL = (
    "Moses-tokenized, lowercased BLEU (lowercase.perl | normalize-punctuation.perl | "
    "tokenizer.perl, their defaults, in sacremoses), multi-bleu.perl's computation: "
    "the Multi30k literature's flavour, not sacreBLEU"
)
# tokenizer.perl's own language when -l is not given; used when the target language is unknown.
MOSES_FALLBACK_LANG = "en"
PAPER_BLEU_LABEL = (
    "tokenized BLEU, 13a + compound splitting (paper-compatible flavour, not sacreBLEU)"
)
_COMPOUND = re.compile(r"(\S)-(\S)")
# The tokenizer sacreBLEU itself picks for a target language written without spaces between
# words (BLEU(trg_lang=...)), the one WMT's Chinese, Japanese and Korean figures use.
_SPACELESS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
# The same languages under their ISO 639-2/639-3 codes (Tatoeba's, e.g. cmn for Mandarin).
_LANG_ALIASES = {
    **dict.fromkeys(("zho", "chi", "cmn", "yue", "wuu", "lzh"), "zh"),
    "jpn": "ja",
    "kor": "ko",
}


@functools.cache
def _tokenizer_works(name: str) -> bool:
    """Whether sacreBLEU can build the tokenizer here (MeCab's need ``sacrebleu[ja]``/``[ko]``)."""
    from sacrebleu.metrics import BLEU

    try:
        BLEU(tokenize=name)
    except (ImportError, RuntimeError, AssertionError, OSError):
        return False
    return True


def bleu_tokenizer(lang: str | None) -> str:
    """lang -> sacreBLEU's tokenizer: zh, ja-mecab, ko-mecab, else 13a.  Section 6.1's BLEU.

    lang is the target language's code (ISO 639-1 or -3, a region allowed: "zh", "cmn",
    "zh-TW"); None (unknown) gives 13a, sacreBLEU's default. Japanese and Korean use MeCab
    where it is installed (``pip install "sacrebleu[ja]"`` or ``"sacrebleu[ko]"``); without it
    ``char`` (every character a word), which the signature names (``tok:char``), so that a
    figure says how it was made.
    """
    if lang is None:
        return "13a"
    code = re.split(r"[-_]", lang.strip().lower(), maxsplit=1)[0]
    name = _SPACELESS.get(_LANG_ALIASES.get(code, code), "13a")
    if name.endswith("-mecab") and not _tokenizer_works(name):
        return "char"
    return name


def sacre_bleu(
    hyps: Sequence[str], refs: Sequence[str], lang: str | None = None
) -> tuple[float, str]:
    """(corpus BLEU, signature) of detokenized text; sacreBLEU's defaults but the tokenizer.

    The tokenizer is the target language's, ``bleu_tokenizer(lang)`` (13a when lang is None),
    with exponential smoothing; the signature names it.
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize=bleu_tokenizer(lang))
    score = metric.corpus_score(list(hyps), [list(refs)])
    return score.score, str(metric.get_signature())


def lowercase_bleu(
    hyps: Sequence[str], refs: Sequence[str], lang: str | None = None
) -> tuple[float, str]:
    """(corpus BLEU, signature) of lowercased text (13a for en, de): near the Multi30k flavour.

    An approximation of what Multi30k papers report: 13a is not Moses' tokenizer (it keeps
    apostrophes inside words, splits "3." and knows no abbreviations); ``moses_bleu`` is the
    flavour itself. The tokenizer is the target language's, ``bleu_tokenizer(lang)``: 13a for
    en, de, fr and an unknown language.

    >>> round(lowercase_bleu(["A Dog runs ."], ["a dog runs ."])[0], 1)
    100.0
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(lowercase=True, tokenize=bleu_tokenizer(lang))
    score = metric.corpus_score(list(hyps), [list(refs)])
    return score.score, str(metric.get_signature())


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> tuple[float, str]:
    """(corpus chrF2, signature) of detokenized text (sacreBLEU).

    Character n-grams (spaces ignored): no tokenizer, the same for every target language.
    """
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


@functools.cache
def _moses(lang: str) -> tuple[Any, Any]:
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang, perl_parity=True), MosesTokenizer(lang=lang)


def moses_tokenize(text: str, lang: str) -> str:
    """lowercase.perl | normalize-punctuation.perl -l LANG | tokenizer.perl -l LANG, in sacremoses.

    The pipeline that made Multi30k's tokenized files (``data/task1/tok/*.lc.norm.tok.*``, made
    by the dataset repository's ``scripts/task1-tokenize.sh``), in that order, each script with
    its defaults: the normalizer with ``perl_parity=True`` (the perl script turns a lone "’" into
    '"'; sacremoses' default turns it into "'"), the tokenizer with ``escape=True`` (perl's
    default, no ``-no-escape``: '"' -> "&quot;", "'" -> "&apos;", "&" -> "&amp;") and
    ``aggressive_dash_splits=False`` (no ``-a``: "saftig-grünes" stays one token). Escaping
    renames tokens one to one and never moves a boundary, so it changes no BLEU when both sides
    get it; it is kept to match the published files. German (like every language but en, fr and
    it) splits every apostrophe off: "McDonald's" -> "mcdonald &apos; s"; English keeps it on
    the right ("mcdonald &apos;s"). On Multi30k's raw EN and DE files this gives exactly
    the word counts the dataset repository publishes for its tokenized files.
    """
    normalizer, tokenizer = _moses(lang)
    normalized = normalizer.normalize(text.lower())
    return tokenizer.tokenize(
        normalized, escape=True, aggressive_dash_splits=False, return_str=True
    )


def moses_tokenizer_description(lang: str) -> str:
    """The exact Moses BLEU computation, with package versions, so that a figure can be redone."""
    return (
        f"sacremoses {version('sacremoses')}: str.lower(), "
        f"MosesPunctNormalizer(lang={lang!r}, perl_parity=True).normalize, "
        f"MosesTokenizer(lang={lang!r}).tokenize(escape=True, aggressive_dash_splits=False); "
        f"sacrebleu {version('sacrebleu')} BLEU(tokenize='none', smooth_method='none', "
        "force=True) on the tokens"
    )


def moses_bleu(hyps: Sequence[str], refs: Sequence[str], lang: str) -> float:
    """BP * exp(sum_n 1/4 log p_n) on lowercased Moses tokens, unsmoothed.  Multi30k's flavour.

    BP = min(1, exp(1 - r/c)) over the corpus, p_n the clipped n-gram precisions, n = 1..4, as
    multi-bleu.perl computes them on the tokenized, lowercased files that Multi30k papers score
    (fairseq's tokenized BLEU is the same computation). Both sides go through
    ``moses_tokenize(., lang)``, lang the target language ("de" for Multi30k EN-DE). Not
    sacreBLEU: report it only with ``MOSES_BLEU_LABEL`` and ``moses_tokenizer_description``.

    >>> moses_tokenize("Ein Hund frisst McDonald's Pommes.", "de")
    'ein hund frisst mcdonald &apos; s pommes .'
    >>> round(moses_bleu(["Ein Hund rennt."], ["ein Hund rennt ."], "de"), 1)
    100.0
    """
    from sacrebleu.metrics import BLEU

    metric = BLEU(tokenize="none", smooth_method="none", force=True)
    h = [moses_tokenize(x, lang) for x in hyps]
    r = [moses_tokenize(x, lang) for x in refs]
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


def score_texts(
    hyps: Sequence[str], refs: Sequence[str], lang: str | None = None
) -> dict[str, Any]:
    """sacreBLEU (headline), chrF, lowercased, Moses and paper-compatible BLEU of the texts.

    lang: the references' language, for the BLEU tokenizer (``bleu_tokenizer``) and Moses'
    tokenizer; None: 13a, and ``MOSES_FALLBACK_LANG`` (tokenizer.perl's default), which the
    report says ("lang_given": false). For a target whose BLEU tokenizer is not 13a (zh, ja,
    ko) the Moses and paper-compatible flavours, made for European languages, are left out:
    "skipped" says why.
    """
    if len(hyps) != len(refs):
        raise ValueError(f"score_texts: {len(hyps)} hypotheses but {len(refs)} references")
    bleu, bleu_sig = sacre_bleu(hyps, refs, lang)
    chr_f, chrf_sig = chrf(hyps, refs)
    lc, lc_sig = lowercase_bleu(hyps, refs, lang)
    tok = bleu_tokenizer(lang)
    lc_label = LOWERCASE_BLEU_LABEL if tok == "13a" else f"lowercased sacreBLEU, tok:{tok}"
    report: dict[str, Any] = {
        "sacrebleu": {"score": bleu, "signature": bleu_sig},
        "chrf": {"score": chr_f, "signature": chrf_sig},
        "lowercase_bleu": {"score": lc, "signature": lc_sig, "label": lc_label},
    }
    if tok != "13a":
        why = (
            f"not computed for {lang}: a flavour of European-language papers, whose tokenizer "
            f"(Moses', 13a) cuts words at spaces and punctuation only; sacreBLEU with tok:{tok} "
            "and chrF2 are the figures"
        )
        return {**report, "skipped": {"moses_bleu": why, "paper_bleu": why}}
    moses_lang = MOSES_FALLBACK_LANG if lang is None else lang
    return {
        **report,
        "moses_bleu": {
            "score": moses_bleu(hyps, refs, moses_lang),
            "label": MOSES_BLEU_LABEL,
            "lang": moses_lang,
            "lang_given": lang is not None,
            "sacremoses": version("sacremoses"),
            "tokenizer": moses_tokenizer_description(moses_lang),
        },
        "paper_bleu": {"score": paper_bleu(hyps, refs), "label": PAPER_BLEU_LABEL},
    }


def greedy_bleu(
    model: Transformer,
    tokenizer: Any,
    sources: Sequence[str],
    references: Sequence[str],
    lang: str | None = None,
) -> float:
    """sacreBLEU of greedy translations (beam 1, max length |X| + 50).  Section 6.1.

    The validation BLEU of ``aiayn train --valid-bleu``: ``train(..., bleu=greedy_bleu)``, or
    ``functools.partial(greedy_bleu, lang=...)`` with the references' language (its
    ``bleu_tokenizer``; None: 13a), as the CLI passes the prepared data's target language.
    """
    translator = Translator(model, tokenizer, DecodeConfig(beam=1, nbest=1))
    hyps = [nbest[0][0] for nbest in translator.translate(list(sources))]
    return sacre_bleu(hyps, references, lang)[0]


def evaluate(
    translator: Any,
    sources: Sequence[str],
    references: Sequence[str],
    lang: str | None = None,
) -> dict[str, Any]:
    """Translate sources, then every figure: BLEU flavours, chrF, reference PPL, speed.

    ``translator`` is an ``aiayn.translator.Translator``; lang the references' language (for
    the BLEU tokenizer and the Moses BLEU, see ``score_texts``). Returns a JSON-ready dict; the
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
    report = score_texts(hyps, references, lang)
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
