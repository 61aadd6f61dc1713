"""What the explorer shows, computed by the library: translation, trace, beam.  Sections 3, 6.1.

``Explorer.analyze`` translates one sentence with ``Translator`` (the code path of
``aiayn translate``), recording the beam search's own steps (``decode.BeamStep``), then runs
``aiayn.trace`` on the source and the chosen output to collect every intermediate the page
draws. Nothing here re-implements a formula of the paper: the numbers are the library's
tensors, rounded for JSON. The two experiments change the *weights* of a copy of the model,
never the code that runs it:

- a head switched off: head_i's output O_i is set to zero before W^O (3.2.2). Since
  Concat(O_1..O_h) W^O = sum_i O_i W^O_i, zeroing the rows of W^O that multiply O_i is the same;
- the study note's erratum: scores divided by sqrt(d_model) instead of sqrt(d_k) (3.2.1).
  Multiplying W^Q by sqrt(d_k / d_model) gives exactly Q K^T / sqrt(d_model) after the
  library's own division by sqrt(d_k).
"""

from __future__ import annotations

import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from aiayn import pretrained
from aiayn.config import DecodeConfig
from aiayn.data.specials import BOS, EOS
from aiayn.decode import BeamStep, length_penalty
from aiayn.errors import UserError
from aiayn.explore.card import (
    CORPORA,
    KINDS,
    MAX_EXAMPLES,
    TRAINED,
    origin,
    run_data,
    training,
)
from aiayn.kernels import FAST
from aiayn.model import Transformer, trace
from aiayn.run_dir import (
    MODEL_FILE,
    find_run_dir,
    list_checkpoints,
    resolve_checkpoint,
)
from aiayn.translator import Translator, load_translator
from aiayn.weights import load_model

MAX_BYTES = 4096  # a source (or reference) sentence, UTF-8 bytes
MAX_TOKENS = 256  # source tokens, EOS included
BEAM_RANGE = (1, 8)
ALPHA_RANGE = (0.0, 2.0)
TOP_K = 5  # tokens shown per output position
MODELS_IN_MEMORY = 2  # history checkpoints kept loaded besides the main model
STACKS = ("encoder", "decoder_self", "decoder_cross")
DIGITS = 6  # decimals of the numbers in the JSON


class BadRequest(UserError):
    """A request the explorer refuses; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Request:
    """One analysis: the sentence and the settings of views 1, 5, 6 and 7."""

    text: str
    beam: int = 4
    alpha: float = 0.6
    reference: str | None = None
    checkpoint: str | None = None  # a name from Explorer.checkpoint_names; None: the main model
    heads_off: tuple[tuple[str, int, int], ...] = ()  # (stack, layer, head)
    erratum: bool = False


def _round(t: Tensor) -> Any:
    return t.detach().double().cpu().round(decimals=DIGITS).tolist()


def _finite(x: float) -> float | None:
    return round(x, DIGITS) if math.isfinite(x) else None


def switch_off_heads(model: Transformer, heads: Sequence[tuple[str, int, int]]) -> None:
    """O_i := 0 before W^O for each (stack, layer, head), by zeroing W^O's rows of head i."""
    for stack, layer, head in heads:
        mha = _attention_of(model, stack, layer)
        if not 0 <= head < mha.n_heads:
            raise BadRequest(f"heads_off: head {head} of {stack} layer {layer} does not exist")
        with torch.no_grad():
            mha.w_o[head * mha.d_v : (head + 1) * mha.d_v] = 0.0  # (d_v, D) of W^O


def apply_erratum(model: Transformer) -> None:
    """Scores Q K^T / sqrt(d_model) in every attention: W^Q (and b^Q) times sqrt(d_k / d_model)."""
    c = math.sqrt(model.config.d_k / model.config.d_model)
    with torch.no_grad():
        for layer in model.encoder:
            _scale_queries(layer.self_attn, c)
        for layer in model.decoder:
            _scale_queries(layer.self_attn, c)
            _scale_queries(layer.cross_attn, c)


def _scale_queries(mha: Any, c: float) -> None:
    hk = mha.n_heads * mha.d_k
    mha.w_qkv[:, :hk] *= c  # (D, H K): W^Q
    if mha.b_qkv is not None:
        mha.b_qkv[:hk] *= c


def _attention_of(model: Transformer, stack: str, layer: int) -> Any:
    layers = model.encoder if stack == "encoder" else model.decoder
    if stack not in STACKS:
        raise BadRequest(f"heads_off: stack must be one of {', '.join(STACKS)}, got {stack!r}")
    if not 0 <= layer < len(layers):
        raise BadRequest(f"heads_off: {stack} has no layer {layer} (it has {len(layers)})")
    if stack == "encoder":
        return layers[layer].self_attn
    return layers[layer].self_attn if stack == "decoder_self" else layers[layer].cross_attn


class Explorer:
    """A loaded model (and its run, when it has one), answering ``analyze`` requests.

    Thread-safe: one analysis at a time (the CPU is the limit anyway). History checkpoints are
    loaded on demand, at most ``MODELS_IN_MEMORY`` of them kept (least recently used dropped).
    """

    def __init__(
        self, checkpoint: str | Path, device: str = "cpu", kind: str | None = None
    ) -> None:
        """``kind`` names the model on the page: "trained" (by aiayn), "imported" (``aiayn
        import-hf``) or "shipped" (inside the package); None: shipped for a file of
        ``aiayn.pretrained``, imported where the file's metadata names an origin, else trained."""
        if kind is not None and kind not in KINDS:
            raise UserError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.path = resolve_checkpoint(checkpoint)
        self.translator = load_translator(self.path, DecodeConfig(), device=device)
        self.model = self.translator.model
        self.tokenizer = self.translator.tokenizer
        self.device = device
        self.run_dir = find_run_dir(self.path)
        self.origin = origin(self.path)
        self.kind = kind or ("trained" if self.origin == TRAINED else "imported")
        self.training = training(self.path, self.run_dir)
        self.checkpoints: dict[str, Path] = {}
        self.corpus, self.examples = "unknown", []
        self.languages: list[str] | None = None
        if self.run_dir is not None:
            for d in list_checkpoints(self.run_dir):
                self.checkpoints[d.name] = d / MODEL_FILE
            self.corpus, self.languages, self.examples = run_data(self.run_dir)
        elif (name := pretrained.shipped_name(self.path)) is not None:  # shipped with aiayn
            self.kind = kind or "shipped"
            shipped = pretrained.entry(name)  # its corpus by key, named in the page's language
            self.corpus = shipped.get("corpus", shipped["description"])
            self.languages = shipped.get("languages")
            valid = pretrained.results(name).get("valid")  # measured on the shipped file itself
            if isinstance(valid, dict) and self.training["valid"] is None:
                step = self.training["step"]
                self.training["valid"] = {"step": step, "ppl": valid.get("perplexity")}
                if isinstance(valid.get("sacrebleu"), int | float):
                    self.training["valid"]["bleu"] = valid["sacrebleu"]
            self.examples = pretrained.examples(name)[:MAX_EXAMPLES]
        self._loaded: OrderedDict[str, Transformer] = OrderedDict()
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        cfg = self.model.config
        return {
            "checkpoint": str(self.path.resolve()),
            "checkpoint_label": self._label(),
            "origin": self.origin,  # which model this is: trained by aiayn, or imported
            "kind": self.kind,  # trained, imported or shipped
            "run": str(self.run_dir) if self.run_dir else None,
            "corpus": self.corpus,
            "corpus_description": CORPORA.get(self.corpus, self.corpus),
            "languages": self.languages,  # [source, target] of the prepared data, or None
            **self.training,  # step, averaged, valid: how far it was trained
            "examples": self.examples,
            "checkpoints": list(self.checkpoints),
            "model": {
                "d_model": cfg.d_model,
                "n_heads": cfg.n_heads,
                "d_k": cfg.d_k,
                "d_v": cfg.d_v,
                "d_ff": cfg.d_ff,
                "n_layers": cfg.n_layers,
                "decoder_layers": cfg.decoder_layers,
                "vocab_size": cfg.vocab_size,
                "norm_first": cfg.norm_first,
            },
            "limits": {
                "max_bytes": MAX_BYTES,
                "max_tokens": MAX_TOKENS,
                "beam": list(BEAM_RANGE),
                "alpha": list(ALPHA_RANGE),
            },
        }

    def _label(self) -> str:
        """The model file as the page shows it: RUN/relative path, or its name."""
        if self.run_dir is None:
            return self.path.name
        return f"{self.run_dir.name}/{self.path.resolve().relative_to(self.run_dir.resolve())}"

    def _model_for(self, name: str | None) -> Transformer:
        if name is None:
            return self.model
        if name not in self.checkpoints:
            raise BadRequest(f"checkpoint {name!r} is not one of this run's", status=404)
        if name in self._loaded:
            self._loaded.move_to_end(name)
            return self._loaded[name]
        model, _ = load_model(self.checkpoints[name], self.device, ops=FAST)
        self._loaded[name] = model
        while len(self._loaded) > MODELS_IN_MEMORY:
            self._loaded.popitem(last=False)
        return model

    def _encode(self, text: str, what: str) -> list[int]:
        if len(text.encode("utf-8")) > MAX_BYTES:
            raise BadRequest(f"{what}: more than {MAX_BYTES} bytes", status=413)
        tok = self.tokenizer
        ids = tok.encode_target(text) if what == "reference" else tok.encode(text)
        if len(ids) + 1 > MAX_TOKENS:
            raise BadRequest(f"{what}: {len(ids) + 1} tokens, more than {MAX_TOKENS}", status=413)
        return ids

    def analyze(self, req: Request) -> dict[str, Any]:
        """Everything the page draws for one sentence (see docs/explore.md for the keys)."""
        if not req.text.strip():
            raise BadRequest("text: empty")
        ids = self._encode(req.text, "text")
        ref_ids = self._encode(req.reference, "reference") if req.reference else None
        with self._lock:
            model = self._model_for(req.checkpoint)
            if req.heads_off or req.erratum:
                model = copy.deepcopy(model)
                switch_off_heads(model, req.heads_off)
                if req.erratum:
                    apply_erratum(model)
            return self._analyze(model, req, ids, ref_ids)

    @torch.inference_mode()
    def _analyze(
        self, model: Transformer, req: Request, ids: list[int], ref_ids: list[int] | None
    ) -> dict[str, Any]:
        cfg = DecodeConfig(beam=req.beam, alpha=req.alpha)
        translator = Translator(
            model, self.tokenizer, cfg, trained_length=self.translator.trained_length
        )
        record: list[list[BeamStep]] = []
        best = translator.translate_ids([ids], record=record)[0][0]
        dev = model.embedding.device
        src = torch.tensor([[*ids, EOS]], device=dev)  # (1, S)
        tgt_in = torch.tensor([[BOS, *best.tokens[:-1]]], device=dev)  # (1, T)
        tr = trace(model, src, tgt_in)
        tok = self.tokenizer
        S = src.size(1)
        d_k = model.config.d_k
        divisor = math.sqrt(model.config.d_model if req.erratum else d_k)
        out: dict[str, Any] = {
            "source": {"ids": src[0].tolist(), "pieces": tok.tokens(src[0].tolist())},
            "output": {
                "ids": best.tokens,
                "pieces": tok.tokens(best.tokens),
                "text": tok.decode(best.tokens),
                "empty": not tok.decode(best.tokens).strip(),  # the page says why in words
                "logprob": best.logprob,
                "length": len(best.tokens),
                "lp": float(length_penalty(len(best.tokens), req.alpha)),
                "score": best.score,
            },
            "settings": {
                "beam": req.beam,
                "alpha": req.alpha,
                "checkpoint": req.checkpoint,
                "heads_off": [list(h) for h in req.heads_off],
                "erratum": req.erratum,
                "divisor": divisor,
            },
            "embedding": {
                "X_E": _round(tr.X_E[0]),  # (S, D)
                "PE": _round(model.positions(S)),  # (S, D)
            },
            "attention": _attention(tr),
            "distribution": _distribution(tr.P[0], best.tokens, tok),
            "beam": _beam(record[0], tok),
        }
        if ref_ids is not None:
            ref = [*ref_ids, EOS]
            tref = trace(model, src, torch.tensor([[BOS, *ref[:-1]]], device=dev))  # (1, T')
            logp = tref.L[0].log_softmax(dim=-1)  # (T', V)
            nll = -logp.gather(1, torch.tensor(ref, device=dev)[:, None])[:, 0]  # (T',)
            out["reference"] = {
                "ids": ref,
                "pieces": tok.tokens(ref),
                "p": _round(nll.neg().exp()),
                "nll": _round(nll),
                "loss_sum": float(nll.sum()),
                "loss_mean": float(nll.mean()),
            }
        return out


def _attention(tr: Any) -> dict[str, Any]:
    """Per stack and layer: weights, scores (before the mask) and the mask, each (H, Lq, Lk)."""

    def entry(rec: dict[str, Tensor]) -> dict[str, Any]:
        scores = rec["scores"][0]  # (H, Lq, Lk)
        keep = torch.isfinite(rec["scores_masked"][0])  # (H, Lq, Lk)
        weights = rec["weights"][0]  # (H, Lq, Lk)
        return {
            "weights": _round(weights),
            "scores": _round(scores),
            "keep": keep[0].int().tolist(),  # (Lq, Lk): the same for every head
            "mean": _round(weights.mean(dim=0)),  # (Lq, Lk)
        }

    return {
        "encoder": [entry(layer["attn"]) for layer in tr.encoder],
        "decoder_self": [entry(layer["self_attn"]) for layer in tr.decoder],
        "decoder_cross": [entry(layer["cross_attn"]) for layer in tr.decoder],
    }


def _distribution(P: Tensor, chosen: list[int], tok: Any) -> list[dict[str, Any]]:
    """At each output position: the top-k of softmax(Z_D E^T) and the chosen token's p."""
    top_p, top_i = P.topk(TOP_K, dim=-1)  # (T, k), (T, k)
    rows = []
    for t, y in enumerate(chosen):
        ids = top_i[t].tolist()
        rows.append(
            {
                "chosen": y,
                "chosen_piece": tok.tokens([y])[0],
                "p_chosen": _finite(float(P[t, y])),
                "top": [
                    {"id": i, "piece": piece, "p": _finite(float(p))}
                    for i, piece, p in zip(ids, tok.tokens(ids), top_p[t].tolist(), strict=True)
                ],
            }
        )
    return rows


def _beam(steps: list[BeamStep], tok: Any) -> list[dict[str, Any]]:
    """The search's record as JSON: hypotheses with their pieces, -inf as null."""
    out = []
    for s in steps:
        out.append(
            {
                "t": s.t,
                "max_len": s.max_len,
                "live_before": [
                    {"tokens": tokens, "pieces": tok.tokens(tokens), "logprob": _finite(lp)}
                    for tokens, lp in s.live_before
                ],
                "candidates": [
                    {
                        **c,
                        "pieces": tok.tokens(c["tokens"]),
                        "logprob": _finite(c["logprob"]),
                        "score": _finite(c["score"]),
                    }
                    for c in s.candidates
                ],
                "dropped": s.dropped,
                "best_live": _finite(s.best_live),
                "bound": _finite(s.bound),
                "threshold": _finite(s.threshold),
                "stop": s.stop,
                "finished_total": s.finished_total,
            }
        )
    return out
