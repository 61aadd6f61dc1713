"""Heatmaps of the encoder-decoder attention of a translation.  Sections 3.2.3 and 6.1.

The cross-attention weights softmax(Q K^T / sqrt(d_k)) of every decoder layer and head, for
the final hypothesis, recomputed with ``aiayn.trace`` (the explicit path that keeps them).
Rows are the output tokens (each row is the attention while that token is predicted), columns
the source tokens. Drawn with matplotlib's Agg canvas (no display needed).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from aiayn.data.specials import BOS, EOS
from aiayn.model import Transformer, trace


@torch.inference_mode()
def cross_attention(model: Transformer, src: Sequence[int], out: Sequence[int]) -> Tensor:
    """The weights of every decoder layer's encoder-decoder attention.  Section 3.2.3.

    src: source ids ending with EOS; out: output ids ending with EOS (a Hypothesis' tokens).
    The decoder reads BOS + out[:-1] and row t is the attention while predicting out[t].
    Shapes: -> (L, H, T, S) with T = len(out), S = len(src).
    """
    model.eval()
    device = model.embedding.device
    src_t = torch.as_tensor([list(src)], dtype=torch.long, device=device)  # (1, S)
    tgt_in = torch.as_tensor([[BOS, *out[:-1]]], dtype=torch.long, device=device)  # (1, T)
    tr = trace(model, src_t, tgt_in)
    weights = [layer["cross_attn"]["weights"][0] for layer in tr.decoder]  # L x (H, T, S)
    return torch.stack(weights).float().cpu()  # (L, H, T, S)


def _label(token: str) -> str:
    return token.replace("$", r"\$")  # no mathtext


def attention_figure(
    weights: Tensor, src_tokens: Sequence[str], out_tokens: Sequence[str], title: str = ""
):
    """A figure: one panel per layer and head, each layer's mean over heads, and the mean of all.

    Shapes: weights (L, H, T, S), len(out_tokens) = T, len(src_tokens) = S.
    """
    from matplotlib.figure import Figure
    from matplotlib.gridspec import GridSpec

    L, H, T, S = weights.shape
    if len(out_tokens) != T or len(src_tokens) != S:
        raise ValueError(f"attention_figure: weights {(T, S)} vs tokens {len(out_tokens), S}")
    cell = max(1.6, 0.13 * max(S, T))  # inches a panel
    fig = Figure(figsize=(cell * (H + 1) + 1, cell * (L + 2.5) + 1), dpi=90, layout="constrained")
    grid = GridSpec(L + 3, H + 1, figure=fig)  # the last three rows: the mean of everything
    src_labels = [_label(t) for t in src_tokens]
    out_labels = [_label(t) for t in out_tokens]
    small = max(3.0, min(7.0, 200 / max(S, T, 1)))

    def panel(ax, w: Tensor, name: str, xlabels: bool, ylabels: bool, size: float):
        # Each panel scaled to its own maximum (weights are in [0, 1], rows sum to 1).
        image = ax.imshow(w.numpy(), cmap="viridis", vmin=0.0, vmax=float(w.max()), aspect="auto")
        ax.set_title(name, fontsize=8)
        ax.set_xticks(range(S), src_labels if xlabels else [""] * S, rotation=90, fontsize=size)
        ax.set_yticks(range(T), out_labels if ylabels else [""] * T, fontsize=size)
        return image

    for layer in range(L):
        for head in range(H):
            ax = fig.add_subplot(grid[layer, head])
            panel(ax, weights[layer, head], f"layer {layer + 1} head {head + 1}",
                  layer == L - 1, head == 0, small)  # fmt: skip
        ax = fig.add_subplot(grid[layer, H])
        panel(ax, weights[layer].mean(0), f"layer {layer + 1} mean", layer == L - 1, False, small)
    ax = fig.add_subplot(grid[L:, :])
    image = panel(ax, weights.mean((0, 1)), "mean over layers and heads", True, True, small + 1)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def save_attention(
    path: str | Path,
    weights: Tensor,
    src_tokens: Sequence[str],
    out_tokens: Sequence[str],
    title: str = "",
) -> None:
    """Write ``attention_figure`` as a PNG, atomically."""
    from aiayn.storage import atomic_write

    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # glyphs missing from the font (CJK, emoji) are drawn as boxes
        fig = attention_figure(weights, src_tokens, out_tokens, title)
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))


def plot_translation(
    path: str | Path,
    model: Transformer,
    tokenizer: object,
    src_ids: Sequence[int],
    out_ids: Sequence[int],
    title: str = "",
) -> None:
    """Save the cross-attention heatmaps of one translation (ids without specials; EOS added)."""
    src = [*src_ids, EOS]
    out = list(out_ids) if out_ids and out_ids[-1] == EOS else [*out_ids, EOS]
    weights = cross_attention(model, src, out)  # (L, H, T, S)
    tokens = tokenizer.tokens  # type: ignore[attr-defined]
    save_attention(path, weights, tokens(src), tokens(out), title)
