"""Export to CTranslate2 and translate with it.  Sections 3.1-3.5 and 6.1.

The model maps onto CTranslate2's ``TransformerSpec`` term by term: ``pre_norm=False`` is the
paper's post-LN sub-layer LayerNorm(x + Sublayer(x)) and needs no final LayerNorm (3.1); the
embeddings are multiplied by sqrt(d_model) (3.4); one matrix E is the source embedding, the
target embedding and the pre-softmax projection (3.4), which CTranslate2 stores once (it aliases
equal variables); and the position table is written out explicitly (3.5). That last point is
the trap: without a table CTranslate2 adds its own sinusoids, the concatenated [sin | cos]
layout, not the paper's interleaved PE(pos, 2i) = sin, PE(pos, 2i+1) = cos. The exported table
holds ``max_positions`` rows of whichever positions the model was trained with (interleaved,
concatenated or learned), row p for position p.

CTranslate2 ranks hypotheses by log P(Y | X) / |Y|^alpha (its ``length_penalty``), the form
aiayn calls ``length_penalty="fairseq"``; the paper's GNMT penalty ((5 + |Y|) / 6)^alpha has no
CTranslate2 equivalent (see docs/serving.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn.data.specials import BOS, EOS, PAD, SPECIAL_TOKENS
from aiayn.decode import Hypothesis, length_penalty, max_lengths
from aiayn.errors import UserError
from aiayn.export import (
    DEFAULT_MAX_POSITIONS,
    TOKENIZER_FILE,
    EngineTranslator,
    check_exportable,
    read_json,
    require,
    write_manifest,
)
from aiayn.loss import Perplexity
from aiayn.model import Transformer
from aiayn.translator import length_batches

log = logging.getLogger(__name__)

QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16", "float16", "bfloat16")
# CTranslate2's beam stops once beam * patience hypotheses have finished; aiayn's stops when no
# live hypothesis can still win (decode.best_possible_score). Patience 1 (CTranslate2's default)
# returns a worse hypothesis for about 1% of sentences; 2 made them identical in our tests.
PATIENCE = 2.0
PAD_TOKEN = "<blank>"  # CTranslate2's name for padding (its converters rename "<pad>" to it)
VOCABULARY_FILE = "shared_vocabulary.json"  # where CTranslate2's spec.save writes it


def vocabulary(tokenizer: Any) -> list[str]:
    """The shared vocabulary, id i -> token i; PAD renamed to CTranslate2's "<blank>"."""
    tokens = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]
    tokens[PAD] = PAD_TOKEN
    return tokens


def position_table(model: Transformer, rows: int) -> Tensor:
    """PE of positions 0 .. rows - 1, as the model adds them.  Section 3.5.

    Shapes: -> (rows, D).
    """
    cfg = model.config
    if cfg.positions == "learned" and rows > cfg.max_positions:
        rows = cfg.max_positions  # the learned table has no row beyond max_positions
    with torch.no_grad():
        return model.positions(rows).detach().float().cpu().clone()  # (rows, D)


def _t(w: Tensor) -> Any:
    """A weight as a float32 NumPy array (CTranslate2's LinearSpec is (out, in))."""
    return w.detach().float().cpu().contiguous().numpy()


def _linear(spec: Any, w: Tensor, b: Tensor | None) -> None:
    """spec <- x @ w + b with w (in, out), stored as (out, in) like nn.Linear."""
    spec.weight = _t(w.t())
    if b is not None:
        spec.bias = _t(b)


def _norm(spec: Any, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _t(norm.weight), _t(norm.bias)


def build_spec(
    model: Transformer,
    tokenizer: Any,
    max_positions: int = DEFAULT_MAX_POSITIONS,
    engine_positions: bool = False,
) -> Any:
    """The CTranslate2 TransformerSpec of model, weights copied.  Sections 3.1-3.5.

    ``engine_positions=True`` leaves out the position table, so that CTranslate2 adds its own
    sinusoids: a deliberately wrong export, which the equality tests must catch.
    """
    require("ctranslate2")
    from ctranslate2.specs import transformer_spec as ts

    cfg = model.config
    check_exportable(cfg, "ctranslate2")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise UserError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model's vocabulary has "
            f"{cfg.vocab_size}"
        )
    head_dim = cfg.d_k if cfg.d_k * cfg.n_heads != cfg.d_model else None
    common = {"pre_norm": cfg.norm_first, "head_dim": head_dim}
    enc = ts.TransformerEncoderSpec(cfg.n_layers, cfg.n_heads, **common)
    dec = ts.TransformerDecoderSpec(cfg.decoder_layers, cfg.n_heads, **common)
    spec = ts.TransformerSpec(enc, dec)
    E = model.embedding  # (V, D): the three-way tied matrix of 3.4
    enc.embeddings[0].weight = _t(E)
    dec.embeddings.weight = _t(E)
    dec.projection.weight = _t(E)  # logits = Z_D E^T: (out V, in D)
    enc.scale_embeddings = dec.scale_embeddings = True  # E[ids] * sqrt(d_model)
    if not engine_positions:
        table = _t(position_table(model, max_positions))  # (P, D)
        enc.position_encodings.encodings = table
        dec.position_encodings.encodings = table
    for layer, ls in zip(model.encoder, enc.layer, strict=True):
        a = layer.self_attn
        _linear(ls.self_attention.linear[0], a.w_qkv, a.b_qkv)  # [W^Q | W^K | W^V]
        _linear(ls.self_attention.linear[1], a.w_o, a.b_o)
        _norm(ls.self_attention.layer_norm, layer.norm1)
        _linear(ls.ffn.linear_0, layer.ffn.w_1, layer.ffn.b_1)
        _linear(ls.ffn.linear_1, layer.ffn.w_2, layer.ffn.b_2)
        _norm(ls.ffn.layer_norm, layer.norm2)
    for layer, ls in zip(model.decoder, dec.layer, strict=True):
        a, c = layer.self_attn, layer.cross_attn
        _linear(ls.self_attention.linear[0], a.w_qkv, a.b_qkv)
        _linear(ls.self_attention.linear[1], a.w_o, a.b_o)
        _norm(ls.self_attention.layer_norm, layer.norm1)
        hk = c.n_heads * c.d_k
        _linear(ls.attention.linear[0], c.w_q, c.b_q)
        kv_b = None if c.b_qkv is None else c.b_qkv[hk:]
        _linear(ls.attention.linear[1], c.w_qkv[:, hk:], kv_b)  # [W^K | W^V] of the memory
        _linear(ls.attention.linear[2], c.w_o, c.b_o)
        _norm(ls.attention.layer_norm, layer.norm2)
        _linear(ls.ffn.linear_0, layer.ffn.w_1, layer.ffn.b_1)
        _linear(ls.ffn.linear_1, layer.ffn.w_2, layer.ffn.b_2)
        _norm(ls.ffn.layer_norm, layer.norm3)
    if cfg.norm_first:
        # DEVIATION(3.1) models only: pre-LN's final LayerNorm on each stack.
        _norm(enc.layer_norm, model.encoder_norm)
        _norm(dec.layer_norm, model.decoder_norm)
    spec.config.layer_norm_epsilon = cfg.layer_norm_eps
    spec.config.add_source_eos = True  # sources end with EOS, as in training (5.1)
    spec.config.decoder_start_token = SPECIAL_TOKENS[BOS]
    vocab = vocabulary(tokenizer)
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    return spec


def export_ctranslate2(
    model: Transformer,
    tokenizer: Any,
    out: Path,
    quantization: str = "float32",
    max_positions: int = DEFAULT_MAX_POSITIONS,
    engine_positions: bool = False,
    meta: dict[str, Any] | None = None,
) -> None:
    """Write model as a CTranslate2 directory in out (created, must not exist).  Section 3."""
    if quantization not in QUANTIZATIONS:
        raise UserError(
            f"--quantization: unknown type {quantization!r}; choose from {', '.join(QUANTIZATIONS)}"
        )
    spec = build_spec(model, tokenizer, max_positions, engine_positions)
    spec.validate()
    spec.optimize(quantization=quantization)
    out.mkdir(parents=True)
    spec.save(str(out))
    tokenizer.save(out / TOKENIZER_FILE)
    rows = position_table(model, max_positions).size(0)
    write_manifest(
        out,
        "ctranslate2",
        model.config,
        quantization=quantization,
        max_positions=rows,
        engine_positions=engine_positions,
        **(meta or {}),
    )


@dataclass
class CTranslate2Translator(EngineTranslator):
    """An exported model run by CTranslate2, with aiayn's tokenizer, limits and output.

    The interface of ``aiayn.translator.Translator``. Search settings map as follows (section
    6.1): beam and nbest as they are; alpha with ``length_penalty="fairseq"`` is CTranslate2's
    ``length_penalty`` (|Y|^alpha, |Y| counting EOS: checked in tests); ``"none"`` is alpha 0;
    ``"gnmt"`` has no equivalent and is refused. The maximum length floor(a |X| + b) counts EOS
    in aiayn; CTranslate2's ``max_decoding_length`` does not count it and stops without EOS, so
    it is given floor(a |X| + b) - 1 and a hypothesis cut there gets its EOS appended and
    scored by ``score_batch``, as aiayn's forced EOS at the last position. Sentences are batched
    by equal |X| (CTranslate2 takes one maximum length per call). Beam search runs with
    ``patience`` (see PATIENCE): CTranslate2's stopping rule is not aiayn's. aiayn never
    produces PAD or BOS: a batch where CTranslate2 did is searched again with them suppressed.
    """

    # path, tokenizer, config, max_positions, max_tokens, max_sentences: EngineTranslator's
    compute_type: str = "default"
    threads: int = 0
    patience: float = PATIENCE
    cached: bool = True  # for reports: CTranslate2 always decodes incrementally

    def __post_init__(self) -> None:
        ct2 = require("ctranslate2")
        cfg = self.config
        if cfg.length_penalty == "gnmt" and cfg.alpha != 0 and cfg.beam > 1:
            raise UserError(
                "--engine ctranslate2 ranks hypotheses by logprob / |Y|^alpha; the GNMT penalty "
                "((5 + |Y|) / 6)^alpha has no equivalent there: give --length-penalty fairseq "
                "(or none, or --alpha 0); see docs/serving.md"
            )
        self.vocab = vocabulary(self.tokenizer)
        saved = self.path / VOCABULARY_FILE
        if saved.is_file() and read_json(saved, "CTranslate2's vocabulary") != self.vocab:
            raise UserError(
                f"{saved}: the vocabulary is not the tokenizer's (id i is token i of "
                f"{TOKENIZER_FILE}); export the model again, or give its own --tokenizer"
            )
        try:
            self.engine = ct2.Translator(
                str(self.path), device="cpu", compute_type=self.compute_type,
                intra_threads=self.threads,
            )  # fmt: skip
        except (RuntimeError, ValueError) as e:
            first = " ".join(str(e).split())[:200]
            raise UserError(f"{self.path}: CTranslate2 cannot load this model ({first})") from None
        self.ids = {t: i for i, t in enumerate(self.vocab)}
        self.device = torch.device("cpu")

    @property
    def alpha(self) -> float:
        """CTranslate2's length_penalty for this DecodeConfig (|Y|^alpha)."""
        cfg = self.config
        return 0.0 if cfg.length_penalty == "none" or cfg.beam == 1 else cfg.alpha

    def tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.vocab[i] for i in ids]

    def batches(self, sources: Sequence[Sequence[int]]) -> list[list[int]]:
        """Indices of sources with equal length, longest first, under the token budget."""
        return length_batches(sources, self.max_tokens, self.max_sentences, equal_length=True)

    def translate_ids(self, sources: Sequence[Sequence[int]]) -> list[list[Hypothesis]]:
        """The n-best list of each source (ids without specials), in input order."""
        cfg = self.config
        results: list[list[Hypothesis]] = [[] for _ in sources]
        for idx in self.batches(sources):
            n = len(sources[idx[0]]) + 1  # |X| with EOS
            one = torch.full((1, n), EOS)  # (1, |X|): a source of this length
            limit = int(max_lengths(one, cfg.max_len_a, cfg.max_len_b)[0])  # floor(a |X| + b)
            limit = min(limit, self.max_positions)
            if n == 1:
                limit = 1  # an empty line translates to the empty sentence, as in aiayn
            for i, hyps in zip(idx, self._search([sources[i] for i in idx], limit), strict=True):
                results[i] = hyps
        return results

    def _search(self, batch: list[Sequence[int]], limit: int) -> list[list[Hypothesis]]:
        """One CTranslate2 call for sources of one |X|, limit = max |Y| with EOS."""
        src = [self.tokens(s) for s in batch]
        if limit <= 1:  # only EOS may follow BOS: score it
            return [[h] for h in self._complete(src, [[] for _ in src])]
        # Beam search asks for all K hypotheses and _finish ranks them: one cut at the limit is
        # ranked by CTranslate2 without its EOS (over one token fewer), but aiayn ranks it with
        # the forced EOS, which can lift it above a hypothesis that finished earlier.
        num = self.config.beam if self.config.beam > 1 else self.config.nbest
        out = self._translate(src, limit, num=num)
        banned = {self.vocab[PAD], self.vocab[BOS]}
        if any(banned & set(t) for r in out for t in r.hypotheses):
            # aiayn never produces PAD or BOS: search again with them suppressed (CTranslate2
            # then renormalises over the other tokens, so scores rise by -log(1 - P(banned))).
            suppress = [[t] for t in sorted(banned)]
            out = self._translate(src, limit, suppress=suppress, num=num)
        return self._finish(src, out)

    def _translate(
        self,
        src: list[list[str]],
        limit: int,
        suppress: list[list[str]] | None = None,
        num: int | None = None,
    ) -> list[Any]:
        """CTranslate2's search: at most limit - 1 tokens before EOS, EOS returned."""
        cfg = self.config
        return self.engine.translate_batch(
            src,
            beam_size=cfg.beam,
            patience=self.patience if cfg.beam > 1 else 1.0,
            num_hypotheses=num or cfg.nbest,
            length_penalty=self.alpha,
            max_decoding_length=limit - 1,
            min_decoding_length=0,  # EOS may come first (the empty translation)
            return_scores=True,
            return_end_token=True,
            suppress_sequences=suppress,
            max_input_length=0,
        )

    def _finish(self, src: list[list[str]], out: list[Any]) -> list[list[Hypothesis]]:
        """aiayn's n-best lists from CTranslate2's results (cut hypotheses get their EOS)."""
        cfg = self.config
        hyps: list[list[Hypothesis]] = []
        for s, res in zip(src, out, strict=True):
            found: list[Hypothesis] = []
            cut: list[list[int]] = []
            for toks, score in zip(res.hypotheses, res.scores, strict=True):
                ids = [self.ids[t] for t in toks]
                if ids and ids[-1] == EOS:
                    logprob = float(score) * float(length_penalty(len(ids), self.alpha, "fairseq"))
                    found.append(self._hypothesis(ids, logprob))
                else:
                    cut.append(list(ids))
            if cut:  # reached limit - 1 tokens: EOS is forced, as aiayn's search does
                found += self._complete([s] * len(cut), cut)
            hyps.append(sorted(found, key=lambda h: -h.score)[: cfg.nbest])
        return hyps

    def _complete(self, src: list[list[str]], outs: list[list[int]]) -> list[Hypothesis]:
        """Hypotheses outs + EOS, scored by CTranslate2 (teacher-forced)."""
        scored = self.engine.score_batch(src, [self.tokens(o) for o in outs], max_input_length=0)
        hyps = []
        for o, r in zip(outs, scored, strict=True):
            logprob = float(sum(r.log_probs))  # its target ends with EOS
            hyps.append(self._hypothesis([*o, EOS], logprob))
        return hyps

    def _hypothesis(self, tokens: list[int], logprob: float) -> Hypothesis:
        """aiayn's Hypothesis: score = log P(Y | X) / lp(|Y|) with the config's penalty."""
        cfg = self.config
        lp = float(length_penalty(len(tokens), cfg.alpha, cfg.length_penalty))
        return Hypothesis(list(tokens), logprob / lp, logprob)

    def perplexity(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> Perplexity:
        """PPL of the references, teacher-forced by CTranslate2 (EOS counted).  Table 3."""
        src = [self.tokens(s) for s, _ in pairs]
        tgt = [self.tokens(t) for _, t in pairs]
        scored = self.engine.score_batch(
            src, tgt, max_batch_size=self.max_tokens, batch_type="tokens", max_input_length=0
        )
        nll = -sum(float(sum(r.log_probs)) for r in scored)
        return Perplexity(nll, sum(len(r.log_probs) for r in scored))
