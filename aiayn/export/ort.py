"""Export to ONNX and translate with ONNX Runtime inside aiayn's own search.  Sections 3, 6.1.

Two graphs, written by ``torch.onnx.export`` (the TorchScript exporter) from aiayn's own layers:
- ``encoder.onnx``: src (B, S) -> the memory's keys and values for every decoder layer's
  cross-attention, (B, H, S, K) each: all a decoder step needs from the source (3.2.3);
- ``decoder_step.onnx``: one cached step (6.1): the newest token (N, 1), its position, the
  source mask (N, S) and every layer's self-attention cache (N, H, t, K) and cross keys and
  values -> the next-token logits (N, V) and the caches grown to t + 1.
Batch, source length and cache length are dynamic axes. ``OnnxTranslator`` runs the graphs as
a step function for ``aiayn.decode.search``, so greedy and beam search, the length penalty and
the maximum length are aiayn's own, and the outputs equal aiayn's up to float rounding.

Both graphs trace the model's own ``encode`` and ``decode`` (nothing of the model is written a
second time here): the model gathers its positional encodings by index, so the decoder step's
position is an input of the graph rather than a traced constant, and the sinusoid table, grown
to at least ``max_positions`` rows before tracing, is a constant of the graph.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from aiayn.config import ModelConfig, from_dict
from aiayn.data.batch import collate
from aiayn.data.specials import EOS, PAD
from aiayn.decode import Hypothesis, SentenceRows, StepFn, follow_origin, max_lengths, search
from aiayn.errors import UserError
from aiayn.export import TOKENIZER_FILE, EngineTranslator, check_exportable, require, write_manifest
from aiayn.export.ct2 import position_table
from aiayn.loss import Perplexity, label_smoothed_loss
from aiayn.model import DecoderState, Transformer
from aiayn.translator import length_batches

ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder_step.onnx"
OPSET = 17


class EncoderGraph(nn.Module):
    """src (B, S) -> (k_0, v_0, k_1, v_1, ...) of every decoder layer's cross-attention."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, ...]:
        memory, _ = self.model.encode(src)  # (B, S, D): Z_E
        return tuple(
            kv for layer in self.model.decoder for kv in layer.cross_attn.project_kv(memory)
        )


class DecoderStepGraph(nn.Module):
    """(token, position, src_keep, caches...) -> (logits, grown self-attention caches...)."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, token: Tensor, position: Tensor, src_keep: Tensor, *caches: Tensor
    ) -> tuple[Tensor, ...]:
        """Shapes: token (N, 1), position (1,), src_keep (N, S); caches per layer: self k, v
        (N, H, t, K), cross k, v (N, H, S, K) -> logits (N, V), per layer self k, v (N, H, t+1, K).
        """
        m = self.model
        layers = [
            {"self": {"k": sk, "v": sv}, "cross": {"k": ck, "v": cv}}
            for sk, sv, ck, cv in zip(*[iter(caches)] * 4, strict=True)
        ]
        state = DecoderState(None, src_keep[:, None, None, :], layers, length=position)
        # The memory is only in the cross caches: any tensor stands for it (the layers read
        # their cached keys and values and never look at it).
        z = m.decode(token, caches[2], state.src_keep, state=state)  # (N, 1, D)
        grown = [t for layer in layers for t in (layer["self"]["k"], layer["self"]["v"])]
        return (m.logits(z)[:, -1], *grown)  # (N, V), (N, H, t + 1, K) ...


def export_onnx(
    model: Transformer,
    tokenizer: Any,
    out: Path,
    max_positions: int = 1024,
    meta: dict[str, Any] | None = None,
) -> None:
    """Write encoder.onnx, decoder_step.onnx, the tokenizer and the manifest into out."""
    require("onnx")
    cfg = model.config
    check_exportable(cfg, "onnx")
    was_training = model.training
    rows = position_table(model, max_positions).size(0)
    out.mkdir(parents=True)
    try:
        _export_graphs(model, out, rows)
    finally:
        model.train(was_training)  # the exporter leaves its module (and so model) in train mode
    tokenizer.save(out / TOKENIZER_FILE)
    write_manifest(out, "onnx", cfg, max_positions=rows, opset=OPSET, **(meta or {}))


def _export_graphs(model: Transformer, out: Path, rows: int) -> None:
    """torch.onnx.export of EncoderGraph and DecoderStepGraph with their dynamic axes."""
    cfg = model.config
    L, H, K, Kv = cfg.decoder_layers, cfg.n_heads, cfg.d_k, cfg.d_v
    src = torch.tensor([[5, 6, 7, EOS], [5, 6, EOS, PAD]])  # (2, 4): a padded example batch
    kv_names = [f"{n}_{i}" for i in range(L) for n in ("cross_k", "cross_v")]
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns at each Python branch on a shape; the branches it fixes (the CPU
        # attention kernel, no all-padding row: every source ends with EOS) hold for any input.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            EncoderGraph(model).eval(),
            (src,),
            str(out / ENCODER_FILE),
            dynamo=False,
            input_names=["src"],
            output_names=kv_names,
            dynamic_axes={"src": {0: "batch", 1: "src_len"}}
            | {n: {0: "batch", 2: "src_len"} for n in kv_names},
            opset_version=OPSET,
        )
        N, S, t = 2, 4, 3
        caches: list[Tensor] = []
        names: list[str] = []
        for i in range(L):
            caches += [torch.zeros(N, H, t, K), torch.zeros(N, H, t, Kv)]
            caches += [torch.zeros(N, H, S, K), torch.zeros(N, H, S, Kv)]
            names += [f"self_k_{i}", f"self_v_{i}", f"cross_k_{i}", f"cross_v_{i}"]
        grown = [f"new_self_{n}_{i}" for i in range(L) for n in ("k", "v")]
        dyn: dict[str, dict[int, str]] = {
            "token": {0: "rows"},
            "src_keep": {0: "rows", 1: "src_len"},
            "logits": {0: "rows"},
        }
        for n in names:
            dyn[n] = {0: "rows", 2: "past_len" if n.startswith("self") else "src_len"}
        for n in grown:
            dyn[n] = {0: "rows", 2: "new_len"}
        args = (torch.tensor([[5], [6]]), torch.tensor([t]), torch.ones(N, S, dtype=torch.bool))
        torch.onnx.export(
            DecoderStepGraph(model).eval(),
            (*args, *caches),
            str(out / DECODER_FILE),
            dynamo=False,
            input_names=["token", "position", "src_keep", *names],
            output_names=["logits", *grown],
            dynamic_axes=dyn,
            opset_version=OPSET,
        )


class OnnxStep:
    """aiayn's step function (aiayn.decode) over the two ONNX Runtime sessions.  Section 6.1.

    The source is encoded on the first call. The caches live in the library's
    ``DecoderState`` (the cross keys and values in place of the memory) and follow the search's
    rows as ``model_step_fn``'s do (``decode.follow_origin``): the self-attention caches every
    ``origin``, the cross keys, values and source mask only when the rows' sentences change.
    """

    def __init__(self, translator: OnnxTranslator, src: Tensor) -> None:
        self.t, self.src = translator, src
        self.rows = SentenceRows(src.size(0))
        self.state: DecoderState | None = None

    def _start(self) -> DecoderState:
        """DecoderState of the encoder graph's cross keys and values, empty self caches."""
        t, B = self.t, self.src.size(0)
        cross = [torch.from_numpy(c) for c in t.encoder.run(None, {"src": self.src.numpy()})]
        layers = []
        for i in range(t.layers):
            empty = [torch.zeros(B, t.heads, 0, d) for d in t.self_dims[2 * i : 2 * i + 2]]
            layers.append(
                {
                    "self": {"k": empty[0], "v": empty[1]},  # (B, H, 0, K): t = 0
                    "cross": {"k": cross[2 * i], "v": cross[2 * i + 1]},  # (B, H, S, K)
                }
            )
        src_keep = (self.src != PAD)[:, None, None, :]  # (B, 1, 1, S)
        return DecoderState(None, src_keep, layers)

    def __call__(self, prefix: Tensor, origin: Tensor | None) -> Tensor:
        import numpy as np

        if self.state is None:
            self.state = self._start()
        state = self.state
        follow_origin(state, self.rows, origin)
        if state.length != prefix.size(1) - 1:
            raise RuntimeError(f"cache holds {state.length} positions, prefix {prefix.size(1)}")
        feed = {
            "token": prefix[:, -1:].numpy(),
            "position": np.array([state.length], dtype=np.int64),  # of the newest token
            "src_keep": state.src_keep[:, 0, 0, :].numpy(),  # (N, S)
        }
        for i, layer in enumerate(state.layers):
            for name in ("self", "cross"):
                feed[f"{name}_k_{i}"] = layer[name]["k"].numpy()
                feed[f"{name}_v_{i}"] = layer[name]["v"].numpy()
        logits, *grown = self.t.decoder.run(None, feed)
        for i, layer in enumerate(state.layers):
            layer["self"] = {
                "k": torch.from_numpy(grown[2 * i]),
                "v": torch.from_numpy(grown[2 * i + 1]),
            }
        state.length += 1
        return torch.from_numpy(logits)  # (N, V)


@dataclass
class OnnxTranslator(EngineTranslator):
    """An ONNX export run by ONNX Runtime with aiayn's search, tokenizer, limits and batching.

    The interface of ``aiayn.translator.Translator``; every DecodeConfig setting applies as in
    aiayn (the search is aiayn's). Sources and outputs are bounded by the exported table.
    """

    # path, tokenizer, config, max_positions, max_tokens, max_sentences: EngineTranslator's
    threads: int = 0
    cached: bool = True
    sessions: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ort = require("onnxruntime")
        from aiayn.export import read_manifest

        cfg = from_dict(ModelConfig, read_manifest(self.path)["model_config"])
        self.layers, self.heads = cfg.decoder_layers, cfg.n_heads
        self.self_dims = [cfg.d_k, cfg.d_v] * self.layers  # of each layer's self k, v caches
        opts = ort.SessionOptions()
        if self.threads:
            opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        try:
            self.encoder = ort.InferenceSession(
                str(self.path / ENCODER_FILE), opts, providers=["CPUExecutionProvider"]
            )
            self.decoder = ort.InferenceSession(
                str(self.path / DECODER_FILE), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime raises its own exception types
            first = " ".join(str(e).split())[:200]
            raise UserError(
                f"{self.path}: ONNX Runtime cannot load this export ({first})"
            ) from None
        self._check_graphs(cfg)
        self.device = torch.device("cpu")

    def _check_graphs(self, cfg: ModelConfig) -> None:
        """The graphs' inputs and outputs are those the manifest's model_config implies: the
        cache of each decoder layer with its heads and head size (static axes), V logits."""

        def shapes(io: list[Any]) -> dict[str, list[Any]]:
            return {x.name: list(x.shape) for x in io}

        want = {"token": None, "position": None, "src_keep": None}
        for i in range(self.layers):
            for n, d in (("k", cfg.d_k), ("v", cfg.d_v)):
                want[f"self_{n}_{i}"] = want[f"cross_{n}_{i}"] = [self.heads, d]
        got = shapes(self.decoder.get_inputs())
        logits = shapes(self.decoder.get_outputs()).get("logits", [None, None])
        ok = set(got) == set(want) and logits[-1] == cfg.vocab_size
        ok = ok and all(s is None or [got[n][1], got[n][3]] == s for n, s in want.items())
        ok = ok and set(shapes(self.encoder.get_inputs())) == {"src"}
        if not ok:
            raise UserError(
                f"{self.path / DECODER_FILE}: its inputs are not those of the manifest's "
                f"model_config ({self.layers} decoder layer(s), {self.heads} heads of "
                f"{cfg.d_k}, {cfg.vocab_size} tokens); export the model again"
            )

    def batches(self, sources: Sequence[Sequence[int]]) -> list[list[int]]:
        """The batches of aiayn's Translator (similar lengths, under the same budgets)."""
        return length_batches(sources, self.max_tokens, self.max_sentences)

    def step_fn(self, src: Tensor) -> StepFn:
        return OnnxStep(self, src)

    def translate_ids(self, sources: Sequence[Sequence[int]]) -> list[list[Hypothesis]]:
        """The n-best list of each source (ids without specials), in input order."""
        cfg = self.config
        results: list[list[Hypothesis]] = [[] for _ in sources]
        for idx in self.batches(sources):
            src = collate([(sources[i], []) for i in idx]).src  # (B, S)
            limit = max_lengths(src, cfg.max_len_a, cfg.max_len_b)  # (B,)
            limit = limit.masked_fill((src != PAD).sum(dim=1) == 1, 1)  # an empty line: EOS
            limit = limit.clamp(max=self.max_positions)
            for i, hyps in zip(idx, search(self.step_fn(src), limit, cfg), strict=True):
                results[i] = hyps
        return results

    def perplexity(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> Perplexity:
        """PPL of the references, teacher-forced through the cached step.  Table 3."""
        nll, count = 0.0, 0
        for idx in self.batches([s for s, _ in pairs]):
            batch = collate([pairs[i] for i in idx])
            step = self.step_fn(batch.src)
            for j in range(batch.tgt_in.size(1)):
                logits = step(batch.tgt_in[:, : j + 1], None).float()  # (B, V)
                _, step_nll, n = label_smoothed_loss(logits, batch.tgt_out[:, j], 0.0, PAD)
                nll += float(step_nll)
                count += n
        return Perplexity(nll, count)
