"""Table 3's rows, the paper's figures, the same variations around a small base.  Section 6.2.

The paper varies one thing at a time around its base model (N 6, d_model 512, d_ff 2048, h 8,
d_k = d_v 64, P_drop 0.1, eps_ls 0.1, 100K steps). ``scale_variation`` applies the same change,
in the same proportion, around a small base that trains in minutes on a CPU: widths (d_model,
d_ff, d_k, d_v) by small d_model / 512, depth by small N / 6, and the rest (h, P_drop, eps_ls,
positions) unchanged. So row A still keeps h * d_k = d_model, row C still halves and doubles
d_model and d_ff, and N 2 / 4 / 8 become N 1 / 2 / 4 around a small N of 3.

>>> small = SMALL_BASE
>>> cfg, _ = scale_variation(variation("A-h32"), small)
>>> cfg.n_heads, cfg.d_k, cfg.n_heads * cfg.d_k == cfg.d_model
(32, 4, True)
>>> [scale_variation(variation(n), small)[0].n_layers for n in ("C-n2", "C-n4", "C-n8")]
[1, 2, 4]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from aiayn.config import PRESETS, ModelConfig

# The paper's base model (Table 3, first row) and its training length (section 5.2).
PAPER_BASE = ModelConfig()
PAPER_STEPS = 100_000

# The small base of ``aiayn table3``: the paper's shape with every width divided by 4 and half
# the depth, so that h * d_k = d_model and d_ff = 4 d_model hold as in the paper. The vocabulary
# is the data's (Multi30k with an 8000-token shared BPE by default).
SMALL_BASE = ModelConfig(d_model=128, n_heads=8, d_ff=512, n_layers=3)


@dataclass(frozen=True)
class Variation:
    """One row of Table 3: what the paper changed and what it measured (dev newstest2013)."""

    name: str  # "base", "A-h1", ...: the preset "table3-<name>" holds the paper's change
    row: str  # "base", "A", "B", "C", "D", "E"
    change: str  # the paper's wording of the change
    ppl: float  # the paper's dev perplexity per word-piece
    bleu: float  # the paper's dev BLEU (no checkpoint averaging)
    params_m: float | None  # the paper's parameter count in millions (given only for B and C)
    varied: str  # the quantity this row varies, for the plots ("h", "d_k", "N", ...)
    value: Any  # its value in the paper

    @property
    def preset(self) -> str:
        return "base" if self.name == "base" else f"table3-{self.name}"


# Table 3 of the paper (``spec/paper.md``): base and the 18 variations, in the paper's order.
VARIATIONS: tuple[Variation, ...] = (
    Variation("base", "base", "N 6, d_model 512, d_ff 2048, h 8, d_k = d_v 64", 4.92, 25.8, 65,
              "", None),
    Variation("A-h1", "A", "h 1, d_k = d_v 512", 5.29, 24.9, None, "h", 1),
    Variation("A-h4", "A", "h 4, d_k = d_v 128", 5.00, 25.5, None, "h", 4),
    Variation("A-h16", "A", "h 16, d_k = d_v 32", 4.91, 25.8, None, "h", 16),
    Variation("A-h32", "A", "h 32, d_k = d_v 16", 5.01, 25.4, None, "h", 32),
    Variation("B-dk16", "B", "d_k 16", 5.16, 25.1, 58, "d_k", 16),
    Variation("B-dk32", "B", "d_k 32", 5.01, 25.4, 60, "d_k", 32),
    Variation("C-n2", "C", "N 2", 6.11, 23.7, 36, "N", 2),
    Variation("C-n4", "C", "N 4", 5.19, 25.3, 50, "N", 4),
    Variation("C-n8", "C", "N 8", 4.88, 25.5, 80, "N", 8),
    Variation("C-d256", "C", "d_model 256, d_k = d_v 32", 5.75, 24.5, 28, "d_model", 256),
    Variation("C-d1024", "C", "d_model 1024, d_k = d_v 128", 4.66, 26.0, 168, "d_model", 1024),
    Variation("C-dff1024", "C", "d_ff 1024", 5.12, 25.4, 53, "d_ff", 1024),
    Variation("C-dff4096", "C", "d_ff 4096", 4.75, 26.2, 90, "d_ff", 4096),
    Variation("D-drop0.0", "D", "P_drop 0.0", 5.77, 24.6, None, "P_drop", 0.0),
    Variation("D-drop0.2", "D", "P_drop 0.2", 4.95, 25.5, None, "P_drop", 0.2),
    Variation("D-ls0.0", "D", "eps_ls 0.0", 4.67, 25.3, None, "eps_ls", 0.0),
    Variation("D-ls0.2", "D", "eps_ls 0.2", 5.47, 25.7, None, "eps_ls", 0.2),
    Variation("E-learned", "E", "learned positional embedding instead of sinusoids", 4.92, 25.7,
              None, "positions", "learned"),
)  # fmt: skip

ROWS = ("A", "B", "C", "D", "E")


def variation(name: str) -> Variation:
    """The row called name ("base", "A-h1", ...); ValueError naming the known ones."""
    for v in VARIATIONS:
        if v.name == name:
            return v
    raise ValueError(
        f"unknown Table 3 row {name!r}; known: {', '.join(v.name for v in VARIATIONS)}"
    )


def variations(rows: tuple[str, ...] = ROWS) -> list[Variation]:
    """The variations of the given row groups (A-E), in the paper's order; the base excluded."""
    for r in rows:
        if r not in ROWS:
            raise ValueError(f"unknown Table 3 row group {r!r}; choose from {', '.join(ROWS)}")
    return [v for v in VARIATIONS if v.row in rows]


def _times(value: int, num: int, den: int, field: str, name: str) -> int:
    if (value * num) % den:
        raise ValueError(
            f"{name}: {field} {value} times {num}/{den} is not a whole number; "
            "choose a small base whose sizes divide the paper's"
        )
    return value * num // den


def scale_variation(v: Variation, small: ModelConfig = SMALL_BASE) -> tuple[ModelConfig, dict]:
    """(the small model, its training overrides): v's change applied in the paper's proportion.

    Widths d_model, d_ff, d_k, d_v are multiplied by small.d_model / 512 (d_ff by
    small.d_ff / 2048), N by small.n_layers / 6; h, P_drop, eps_ls and positions are copied.
    """
    preset = PRESETS[v.preset]
    width = (small.d_model, PAPER_BASE.d_model)
    scale = {
        "d_model": width,
        "d_k_override": width,
        "d_v_override": width,
        "d_ff": (small.d_ff, PAPER_BASE.d_ff),
        "n_layers": (small.n_layers, PAPER_BASE.n_layers),
    }
    model: dict[str, Any] = {}
    for key, value in preset.model.items():
        if key in scale:
            model[key] = _times(value, *scale[key], key, v.name)
        elif key in ("n_heads", "dropout", "positions"):
            model[key] = value
        else:  # a preset field this scaling does not know: refuse rather than guess
            raise ValueError(f"{v.name}: cannot scale the setting {key}")
    return dataclasses.replace(small, **model), dict(preset.train)


def quantities(cfg: ModelConfig, train: dict) -> dict[str, Any]:
    """The value of every quantity Table 3 varies, in the model cfg (the plots' x axes)."""
    return {
        "h": cfg.n_heads,
        "d_k": cfg.d_k,
        "N": cfg.n_layers,
        "d_model": cfg.d_model,
        "d_ff": cfg.d_ff,
        "P_drop": cfg.dropout,
        "eps_ls": train.get("label_smoothing", 0.1),
        "positions": cfg.positions,
    }
