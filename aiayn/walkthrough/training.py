"""The loss row by row, one backward pass, one optimizer step.  Sections 5.3 and 5.4.

The backward pass is proved twice over: PyTorch's autograd and the NumPy twin's hand-written
chain rule (``aiayn.numpy_twin``) must give the same gradient for every parameter; the
optimizer step is computed by hand from Adam's formulas and compared with ``torch.optim``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from aiayn import numpy_twin as ref
from aiayn.config import TrainConfig
from aiayn.loss import label_smoothed_loss
from aiayn.train.schedule import make_optimizer, noam_lr, set_lr
from aiayn.walkthrough.doc import Aside, Check, Formula, Group, Mat, Para, Section, Table

if TYPE_CHECKING:
    from aiayn.walkthrough.steps import Steps

_TRAIN = TrainConfig()  # the training's Adam: beta1, beta2, eps of 5.3
BETAS, ADAM_EPS = (_TRAIN.adam_beta1, _TRAIN.adam_beta2), _TRAIN.adam_eps


def smoothed_loss(logits: Tensor, target: Tensor, eps: float, pad_id: int) -> Tensor:
    """The training loss (``aiayn.loss``) as a mean over the non-pad tokens.  5.4."""
    total, _, n = label_smoothed_loss(logits, target, eps, pad_id)
    return total / n


def loss_section(st: Steps) -> Section:
    """The note's loss, L_t = -log p(y_t), and the paper's label-smoothed one, row by row."""
    ex, cfg = st.ex, st.ex.cfg
    p, logits = st.facts["p"], st.facts["logits"]  # (T, V)
    y = [ex.vocab.index(w) for w in ex.tgt_out_words]
    eps, pad, target = cfg.label_smoothing, st.model.config.pad_id, ex.tgt_out  # (1, T)
    plain, smooth = (  # (T,) each: the twin's loss per position, without and with smoothing
        ref.label_smoothed_forward(logits[None], target.numpy(), e, pad)[1]["rows"][0]
        for e in (0.0, eps)
    )
    best = p.argmax(axis=1)  # (T,)
    note_mean = float(-np.log(p.max(axis=1)).mean())
    rows = []
    for t, w in enumerate(ex.tgt_in_words):
        b = int(best[t])
        f3 = [f"{x:.3f}" for x in (p[t, y[t]], plain[t], smooth[t], p[t, b], -math.log(p[t, b]))]
        rows.append([str(t), w, ex.tgt_out_words[t], *f3[:3], ex.vocab[b], *f3[3:]])
    means = (f"{plain.mean():.3f}", f"{smooth.mean():.3f}", "", "", f"{note_mean:.3f}")
    rows.append(["", st.t("loss.mean"), "", "", *means])
    sec = Section("loss", st.t("loss.title"))
    logits_t = torch.from_numpy(logits)  # (T, V)
    sec.add(
        Formula(
            r"\mathcal{L}_t = -\log p(y_t),\qquad \bar{\mathcal{L}} = \frac{1}{n_D}"
            r"\sum_t \mathcal{L}_t"
        ),
        Formula(
            r"\mathcal{L}_t^{\text{ls}} = -\sum_v q_{t,v} \log p_{t,v},\quad q_{t,v} = "
            r"\begin{cases} 1 - \epsilon_{ls} & v = y_t \\ \epsilon_{ls} / (|V| - 1) & "
            r"\text{otherwise} \end{cases}"
        ),
        Para(st.t("loss.text", eps=f"{eps:g}", n=len(y))),
        Table(st.header("loss"), rows),
        st.prover.check(
            "loss",
            r"\bar{\mathcal{L}} = \text{" + st.t("loss.cross_entropy") + "}(L, y)",
            plain.mean(),
            torch.nn.functional.cross_entropy(logits_t, target[0]),
        ),
        st.prover.check(
            "loss",
            r"\bar{\mathcal{L}}^{\text{ls}} = \text{" + st.t("loss.training_loss") + "}",
            smooth.mean(),
            smoothed_loss(logits_t, target[0], eps, pad),
        ),
    )
    differ = [t for t in range(len(y)) if best[t] != y[t]]
    box = Aside(st.t("p.title"))
    if differ:
        t = differ[0]
        what = {"t": t, "w": ex.vocab[best[t]], "y": ex.tgt_out_words[t]}
        means = {"note": f"{note_mean:.3f}", "plain": f"{plain.mean():.3f}"}
        box.blocks.append(Para(st.t("p.text", **what, **means)))
    else:
        box.blocks.append(Para(st.t("p.same", note=f"{note_mean:.3f}")))
    box.blocks.append(Para(st.t("p.why")))
    sec.add(box)
    st.facts.update(plain=plain, smooth=smooth, y=y)
    return sec


_NAMES = {"w_o": "W^O", "w_1": "W_1", "b_1": "b_1", "w_2": "W_2", "b_2": "b_2"}
_NAMES.update(weight=r"\gamma", bias=r"\beta", embedding="E")


def _parts(name: str, g: np.ndarray, hk: int) -> list[tuple[str, np.ndarray]]:
    """A parameter's gradient -> [(its name in the note's symbols, the part)]: w_qkv in three."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf != "w_qkv":
        return [(_NAMES[leaf], g)]
    return [("W^Q", g[:, :hk]), ("W^K", g[:, hk : 2 * hk]), ("W^V", g[:, 2 * hk :])]


def _where(name: str, t: Any) -> str:
    """'encoder.0.self_attn.w_qkv' -> 'Encoder layer 1, self-attention' (in the language)."""
    if name == "embedding":
        return t("grad.embedding")
    parts = name.split(".")
    stack, layer, what = parts[0], int(parts[1]) + 1, parts[2]
    kind = what.rstrip("0123456789")
    return t(f"grad.{stack}", l=layer) + t(f"grad.{kind}", i=what[len(kind) :])


def backward_section(st: Steps) -> Section:
    """Autograd's gradients and the twin's hand-written ones, shown and proved equal."""
    ex, model, cfg = st.ex, st.model, st.ex.cfg
    pad = model.config.pad_id
    model.zero_grad()
    loss = smoothed_loss(model(ex.src, ex.tgt_in), ex.tgt_out, cfg.label_smoothing, pad)
    loss.backward()
    params = ref.params_from_torch(model)
    logits, cache = ref.forward(params, model.config, ex.src.numpy(), ex.tgt_in.numpy())
    twin_loss, c_loss = ref.label_smoothed_forward(
        logits, ex.tgt_out.numpy(), cfg.label_smoothing, pad
    )
    d_logits = ref.label_smoothed_backward(c_loss)  # (1, T, V)
    grads = ref.backward(d_logits, cache)
    sec = Section("backward", st.t("backward.title"))
    sec.add(
        Para(st.t("backward.text")),
        Formula(
            r"\frac{\partial \bar{\mathcal{L}}}{\partial L_t} = \frac{p_t - q_t}{n_D},\qquad "
            r"\frac{\partial \bar{\mathcal{L}}}{\partial Z_D} = \frac{\partial \bar{\mathcal{L}}}"
            r"{\partial L} E,\qquad \frac{\partial \bar{\mathcal{L}}}{\partial E} \mathrel{+}= "
            r"\left(\frac{\partial \bar{\mathcal{L}}}{\partial L}\right)^{\!\top} Z_D"
        ),
        Formula(
            r"dS = A \odot \left(dA - \operatorname{rowsum}(dA \odot A)\right),\qquad "
            r"dx = \frac{d\hat{x} - \operatorname{mean}(d\hat{x}) - \hat{x} \odot "
            r"\operatorname{mean}(d\hat{x} \odot \hat{x})}{\sqrt{\sigma^2 + \epsilon}}"
        ),
        Mat(r"\partial \bar{\mathcal{L}} / \partial L", d_logits[0], ex.tgt_in_words, ex.vocab),
        st.prover.check(
            "backward",
            r"\bar{\mathcal{L}}^{\text{ls}}\ \text{(twin)} = \text{(PyTorch)}",
            twin_loss,
            loss,
        ),
        Para(st.t("backward.notation")),
    )
    hk = model.config.n_heads * model.config.d_k
    summary: list[list[str]] = []
    modules: dict[str, list[tuple[str, Any]]] = {}
    for name, param in model.named_parameters():
        modules.setdefault(name.rsplit(".", 1)[0], []).append((name, param))
    for module, members in modules.items():
        here = _where(members[0][0], st.t)
        mats, checks = [], []
        for name, param in members:
            g_auto = param.grad.detach().double().numpy()
            for disp, g in _parts(name, g_auto, hk):
                rows = ex.vocab if name == "embedding" else [str(j) for j in range(len(g))]
                cols = [str(j) for j in range(g.shape[-1])]
                mats.append(Mat(rf"\partial {disp}", g, rows if g.ndim == 2 else None, cols))
                shown = disp.replace(r"\gamma", "γ").replace(r"\beta", "β")
                summary.append(
                    [here, shown, "×".join(map(str, g.shape)), f"{np.linalg.norm(g):.4f}"]
                )
            what = rf"\partial\ \texttt{{{name}}}:\ \text{{twin}} = \text{{autograd}}"
            checks.append(st.prover.check(f"backward: {name}", what, grads[name], g_auto, tol=1e-8))
        sec.add(Para(st.t("grad.E") if module == "embedding" else here))
        sec.add(mats[0] if len(mats) == 1 else Group(mats), *checks)
    sec.add(Table(st.header("grad"), summary))
    st.facts.update(
        loss=float(loss.detach()), grads={n: p.grad.clone() for n, p in model.named_parameters()}
    )
    return sec


def _step(theta: Tensor, g: Tensor, lr: float, optimizer: str) -> Tensor:
    """theta - lr m_hat / (sqrt(v_hat) + eps) at Adam's first step (5.3), or theta - lr g."""
    if optimizer != "adam":
        return theta - lr * g
    m = (1 - BETAS[0]) * g  # m_1 = beta1 m_0 + (1 - beta1) g, m_0 = 0
    v = (1 - BETAS[1]) * g * g  # v_1 = beta2 v_0 + (1 - beta2) g^2
    m_hat, v_hat = m / (1 - BETAS[0]), v / (1 - BETAS[1])  # bias correction, t = 1
    return theta - lr * m_hat / (v_hat.sqrt() + ADAM_EPS)


def update_section(st: Steps) -> Section:
    """One step of Adam (5.3) or SGD, by hand and by torch.optim; the loss before and after."""
    ex, model, cfg = st.ex, st.model, st.ex.cfg
    d, pad = model.config.d_model, model.config.pad_id
    lr = cfg.lr if cfg.lr is not None else noam_lr(cfg.lr_step, d, cfg.warmup)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    hand = {n: _step(theta, grads[n], lr, cfg.optimizer) for n, theta in before.items()}
    if cfg.optimizer == "adam":
        optimizer = make_optimizer(model.parameters(), _TRAIN)  # the training's own Adam
        set_lr(optimizer, lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    optimizer.step()
    sec = Section("update", st.t("update.title"))
    lr1 = noam_lr(1, d, cfg.warmup)
    which = st.t("update.lr_given" if cfg.lr is not None else "update.lr_step", step=cfg.lr_step)
    what = {"lr": f"{lr:.4g}", "lr1": f"{lr1:.3g}", "which": which, "warmup": cfg.warmup}
    sec.add(Para(st.t(f"update.{cfg.optimizer}", **what)))
    if cfg.optimizer == "adam":
        sec.add(
            Formula(
                r"m_1 = (1 - \beta_1) g,\quad v_1 = (1 - \beta_2) g^2,\quad \hat{m} = "
                r"\frac{m_1}{1 - \beta_1} = g,\quad \hat{v} = \frac{v_1}{1 - \beta_2} = g^2,"
                r"\quad \theta \leftarrow \theta - \text{lr} \frac{\hat{m}}{\sqrt{\hat{v}}"
                r" + \epsilon} \approx \theta - \text{lr}\, \operatorname{sign}(g)"
            )
        )
    else:
        sec.add(Formula(r"\theta \leftarrow \theta - \text{lr}\, g"))
    worst = 0.0
    for n, p in model.named_parameters():
        c = st.prover.check(f"update: {n}", n, hand[n], p.detach(), tol=1e-12)
        worst = max(worst, c.diff)
    sec.add(
        Check(r"\theta_{\text{new}} = \text{torch.optim}\ (\text{every parameter})", worst, 1e-12)
    )
    delta = (model.embedding.detach() - before["embedding"]).numpy()
    sec.add(Mat(r"\Delta E", delta, ex.vocab, [str(j) for j in range(d)]))
    with torch.no_grad():
        logits = model(ex.src, ex.tgt_in)  # (1, T, V)
    after = float(smoothed_loss(logits, ex.tgt_out, cfg.label_smoothing, pad))
    plain_after, c = ref.label_smoothed_forward(logits.numpy(), ex.tgt_out.numpy(), 0.0, pad)
    y, p_before, p_after = st.facts["y"], st.facts["p"], c["p"][0]  # p: (T, V) each
    rows = [
        [str(t), ex.tgt_out_words[t], f"{p_before[t, v]:.4f}", f"{p_after[t, v]:.4f}"]
        for t, v in enumerate(y)
    ]
    sec.add(Table(st.header("update"), rows))
    losses = (st.facts["loss"], after, st.facts["plain"].mean(), plain_after)
    what = dict(zip(("before", "after", "pb", "pa"), (f"{x:.4f}" for x in losses), strict=True))
    sec.add(Para(st.t("update.result", **what)))
    st.facts.update(loss_after=after)
    return sec
