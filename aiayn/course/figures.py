"""The course's pictures: a labelled heatmap, and a font that draws 我 爱 你.

Matplotlib only (the notebooks draw inline); nothing here is needed to check an exercise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Fonts with CJK glyphs, tried in order after the default (the browser tests' Debian font first).
CJK_FONTS = ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC", "SimHei", "PingFang SC")


def use_cjk_font() -> str | None:
    """Let matplotlib draw Chinese tokens: the first installed CJK font joins the fallbacks.

    Returns the font's name, or None where none is installed (Chinese then shows as boxes).
    """
    import matplotlib
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    if not installed & set(CJK_FONTS):  # installed after matplotlib built its font cache
        for path in font_manager.findSystemFonts():
            try:
                family = font_manager.get_font(path).family_name
            except (OSError, RuntimeError):  # a file FreeType cannot read
                continue
            if family in CJK_FONTS:
                font_manager.fontManager.addfont(path)
                installed.add(family)
    for name in CJK_FONTS:
        if name in installed:
            matplotlib.rcParams["font.family"] = ["DejaVu Sans", name]  # per glyph, in order
            return name
    return None


def heatmap(
    ax: Any,
    values: Any,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    title: str = "",
    decimals: int = 2,
    cmap: str = "viridis",
) -> Any:
    """Draw a 2-D tensor on ``ax`` with its entries written in the cells (up to 12 x 12).

    Shapes: values (R, C); rows R labels, cols C labels.
    """
    import numpy as np

    a = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=float)
    finite = np.where(np.isfinite(a), a, np.nan)
    image = ax.imshow(finite, cmap=cmap, aspect="auto")
    R, C = a.shape
    ax.set_xticks(range(C), list(cols) if cols is not None else range(C))
    ax.set_yticks(range(R), list(rows) if rows is not None else range(R))
    if title:
        ax.set_title(title, fontsize=10)
    if R <= 12 and C <= 12:
        lo, hi = np.nanmin(finite), np.nanmax(finite)
        for i in range(R):
            for j in range(C):
                v = a[i, j]
                text = f"{v:.{decimals}f}" if np.isfinite(v) else ("-∞" if v < 0 else "∞")
                light = np.isfinite(v) and hi > lo and (v - lo) / (hi - lo) < 0.5
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if light else "black")  # fmt: skip
    return image
