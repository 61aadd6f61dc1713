"""The inputs the checker tries: the study note's sentence, then random shapes.

The note's sentence is the walkthrough's toy example (``aiayn.walkthrough.example``): d_model
= 6, h = 2, the 8 words <s> </s> I love you 我 爱 你, source "I love you </s>", decoder input
"<s> 我 爱 你". Its tensors are handed to the learner in float32 (PyTorch's default), as they
would be in a notebook.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from aiayn.course.checker import Case
from aiayn.course.messages import say


@functools.cache
def note() -> dict[str, Any]:
    """The note's model, its ids and its trace, computed once per process (float64 model)."""
    from aiayn.model import trace
    from aiayn.walkthrough.example import Example, WalkthroughConfig

    ex = Example.build(WalkthroughConfig())
    with torch.no_grad():
        tr = trace(ex.model, ex.src, ex.tgt_in)
    return {"ex": ex, "model": ex.model, "trace": tr}


def f32(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.float32).clone()


def note_case(*args: Any) -> Case:
    return Case(tuple(args), {lang: say(lang, "note") for lang in ("en", "zh")})


def random_case(what: str, *args: Any) -> Case:
    return Case(tuple(args), {lang: say(lang, "random", what=what) for lang in ("en", "zh")})


def given_case(what: str, *args: Any) -> Case:
    return Case(tuple(args), {lang: say(lang, "given", what=what) for lang in ("en", "zh")})


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=g) * scale


def weights(model: Any, part: str, layer: int = 0) -> dict[str, Any]:
    """W_Q, W_K, W_V, W_O (float32) and h of an attention sub-layer of the note's model."""
    stack = model.decoder if part in ("self_attn", "cross_attn") else model.encoder
    mha = getattr(stack[layer], "self_attn" if part == "enc" else part)
    return {
        "W_Q": f32(mha.w_q),
        "W_K": f32(mha.w_k),
        "W_V": f32(mha.w_v),
        "W_O": f32(mha.w_o),
        "h": mha.n_heads,
    }
