"""The explanation of positional encoding that the note promised.  Section 3.5.

Why positions must be added at all (attention without them is blind to order: checked), the
wavelengths 2 pi .. 10000 * 2 pi, why a sine AND a cosine, and PE(pos + k) = R_k PE(pos) with
R_k block-diagonal 2 x 2 rotations: each with numbers, each checked.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from aiayn import numpy_twin as ref
from aiayn.numpy_twin.model import encoder_layer_forward
from aiayn.walkthrough.doc import Figure, Formula, Group, Mat, Para, Section, Table

if TYPE_CHECKING:
    from aiayn.walkthrough.steps import Steps


def frequencies(d_model: int) -> np.ndarray:
    """omega_i = 1 / 10000^(2i / d_model), i = 0 .. d_model/2 - 1.  Section 3.5."""
    return 1.0 / 10000.0 ** (np.arange(0, d_model, 2) / d_model)  # (D/2,)


def rotation(k: int, d_model: int) -> np.ndarray:
    """R_k: one 2x2 block [[cos w k, sin w k], [-sin w k, cos w k]] per pair (sin, cos).

    PE(pos + k) = R_k PE(pos) for every pos, by sin(a + b) = sin a cos b + cos a sin b and
    cos(a + b) = cos a cos b - sin a sin b with a = w pos, b = w k.

    >>> pe = ref.positions(8, 4)
    >>> bool(np.allclose(rotation(3, 4) @ pe[2], pe[5]))
    True
    """
    r = np.zeros((d_model, d_model))  # (D, D)
    for i, w in enumerate(frequencies(d_model)):
        c, s = math.cos(w * k), math.sin(w * k)
        r[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return r


_D = r"d_{\text{model}}"


def section(st: Steps) -> Section:
    d, model = st.d, st.model
    sec = Section("positions", st.t("pos.title"))
    # Without positions, attention cannot see order: permuting the words permutes the outputs.
    params, cfg = ref.params_from_torch(model), model.config
    ids = st.ex.src.numpy()  # (1, S)
    n = ids.shape[1]
    perm = np.roll(np.arange(n), 1)
    x = params["embedding"][ids] * math.sqrt(d)  # (1, S, D): no PE
    pe = ref.positions(n, d)  # (S, D)
    keep = np.ones((1, 1, 1, n), dtype=bool)

    def enc(x: np.ndarray) -> np.ndarray:
        return encoder_layer_forward(params, 0, cfg, x, keep)[0]  # (1, S, D)

    moved = float(np.abs(enc(x[:, perm] + pe) - enc(x + pe)[:, perm]).max())
    what = r"\text{Enc}(\pi X) = \pi\, \text{Enc}(X)\ \text{without PE}"
    sec.add(
        Para(st.t("pos.order", moved=f"{moved:.3f}")),
        st.prover.check("positions", what, enc(x[:, perm]), enc(x)[:, perm]),
    )
    # The wavelengths.
    w = frequencies(d)
    rows = [
        [str(i), f"{2 * i}, {2 * i + 1}", f"{f:.6g}", f"{2 * math.pi / f:.4g}", f"{1 / f:.4g}"]
        for i, f in enumerate(w)
    ]
    last512 = 10000 ** (510 / 512)
    sec.add(
        Formula(
            r"\omega_i = \frac{1}{10000^{2i/d_{\text{model}}}},\qquad \lambda_i = "
            r"\frac{2\pi}{\omega_i} = 2\pi \cdot 10000^{2i/d_{\text{model}}}"
        ),
        Table(st.header("pos"), rows),
        Para(st.t("pos.wavelengths", d=d, last=f"{1 / w[-1]:.4g}", l512=f"{last512:.0f}")),
        Figure(ref.positions(64, d).T, st.t("pos.fig", d=d), "pos", "i"),
        Figure(ref.positions(100, 64).T, st.t("pos.fig", d=64), "pos", "i"),
    )
    # Why sine and cosine: the rotation.
    r1 = rotation(1, d)
    table = ref.positions(40, d)  # (40, D)
    model_pe = model.positions(40).detach().double().numpy()  # (40, D): what the model adds
    worst = 0.0
    for k in range(1, 5):
        rk = rotation(k, d)
        worst = max(worst, float(np.abs(model_pe[: 40 - k] @ rk.T - model_pe[k:]).max()))
    cols = [str(j) for j in range(d)]
    sec.add(
        Para(st.t("pos.why")),
        Formula(
            r"\begin{pmatrix} \sin \omega_i (p + k) \\ \cos \omega_i (p + k) \end{pmatrix} = "
            r"\begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\ -\sin \omega_i k & "
            r"\cos \omega_i k \end{pmatrix} \begin{pmatrix} \sin \omega_i p \\ "
            r"\cos \omega_i p \end{pmatrix}"
        ),
        Para(st.t("pos.rotation")),
        Mat("R_1", r1, cols, cols),
        Group(
            [
                Mat(r"PE(2)", table[2], None, cols),
                Mat(r"R_1\, PE(2)", r1 @ table[2], None, cols),
                Mat(r"PE(3)", table[3], None, cols),
            ]
        ),
        st.prover.check("positions", r"PE(p + k) = R_k\, PE(p),\ p < 36,\ k = 1..4", worst, 0.0),
    )
    # Consequences: constant norm; the dot product depends only on the distance.
    norms, norm = (model_pe**2).sum(axis=1), r"\lVert PE(p)\rVert^2"  # (40,)
    dots = []
    for k in range(5):
        theory = float(np.cos(w * k).sum())
        got = (model_pe[: 40 - k] * model_pe[k:]).sum(axis=1)  # (40 - k,)
        dots.append([str(k), f"{theory:.4f}", f"{float(np.abs(got - theory).max()):.1e}"])
        st.prover.check("positions", rf"PE(p) \cdot PE(p + {k})", got, np.full_like(got, theory))
    sec.add(
        Para(st.t("pos.consequences", half=d // 2)),
        Formula(
            r"\lVert PE(p)\rVert^2 = \frac{d_{\text{model}}}{2},\qquad PE(p) \cdot "
            r"PE(p + k) = \sum_i \cos(\omega_i k)"
        ),
        st.prover.check("positions", rf"{norm} = {_D} / 2", norms, np.full_like(norms, d / 2)),
        Table(st.header("pos.dots"), dots),
    )
    return sec
