# %% [markdown en]
# # 5. The output layer, the label-smoothed loss and the backward pass by hand
#
# The note's steps 13 and 14 and its loss; the paper's sections 3.4 and 5.4. From $Z_D$ to
# one number, and back to a gradient for every parameter.
# %% [markdown zh]
# # 5. 输出层、标签平滑损失与手写反向传播
#
# 对应笔记第 13、14 步和损失的计算，论文 3.4 节和 5.4 节。从 $Z_D$ 算到一个数，
# 再从这个数反推出每个参数的梯度。
# %%
import matplotlib.pyplot as plt
import numpy as np
import torch  # noqa: F401 (for your exercises)

from aiayn import trace
from aiayn.course import check, heatmap, note_example, use_cjk_font
from aiayn.loss import label_smoothed_loss as aiayn_loss
from aiayn.loss import smoothed_entropy
from aiayn.numpy_twin.model import loss_and_grads, params_from_torch

use_cjk_font()
ex = note_example()
model = ex.model
t = trace(model, ex.src, ex.tgt_in)
print("Z_D", tuple(t.Z_D.shape), " E", tuple(model.embedding.shape))
print("targets y:", ex.tgt_out_words)


# %% [markdown en]
# ## Step 13: $L = Z_D E^\top$
#
# The output layer is the embedding matrix again, transposed and *not* scaled (3.4): 6
# dimensions become 8 word scores. **Exercise.**
# %% [markdown zh]
# ## 第 13 步：$L = Z_D E^\top$
#
# 输出层还是那个词嵌入矩阵，只是转置了，而且*不*乘 $\sqrt{d_{model}}$（3.4 节）：
# 6 维变成 8 个词的分数。**练习**
# %% [exercise output_logits]
def output_logits(Z_D, E):
    """L = Z_D E^T, shape (B, T, V)."""
    raise NotImplementedError


check("output_logits", output_logits)
# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 3.2))
heatmap(axes[0], t.L[0], ex.tgt_in_words, ex.vocab, "L = Z_D Eᵀ (logits)")
heatmap(axes[1], t.P[0], ex.tgt_in_words, ex.vocab, "P = softmax(L), row by row")
plt.show()


# %% [markdown en]
# ## The loss: $p(y_t)$ is the probability of the *correct* word
#
# The note says $p(y_t)$ is the largest probability of the row; it is the probability the
# model gives to the correct next word $y_t$, whatever the model's favourite is (teacher
# forcing). The paper also smooths the labels ($\epsilon_{ls} = 0.1$, 5.4): the target
# distribution $q_t$ puts $1 - \epsilon$ on $y_t$ and $\epsilon / (V - 1)$ on each other word,
#
# $$\mathcal{L}_t = -\sum_{j} q_{tj} \log p_{tj}, \qquad
# \bar{\mathcal{L}} = \frac{1}{n} \sum_{t:\ y_t \ne \mathrm{pad}} \mathcal{L}_t$$
#
# Padding positions count for nothing: neither their $-\log p(y_t)$ nor their smoothing term.
# **Exercise.**
# %% [markdown zh]
# ## 损失：$p(y_t)$ 是*正确*词的概率
#
# 笔记里说 $p(y_t)$ 是这一行里最大的概率；其实它是模型给正确的下一个词 $y_t$ 的概率，
# 不管模型最看好的是哪个词（这就是 teacher forcing）。论文还做了标签平滑
# （$\epsilon_{ls} = 0.1$，5.4 节）：目标分布 $q_t$ 在 $y_t$ 上放 $1 - \epsilon$，
# 其余每个词放 $\epsilon / (V - 1)$，
#
# $$\mathcal{L}_t = -\sum_{j} q_{tj} \log p_{tj}, \qquad
# \bar{\mathcal{L}} = \frac{1}{n} \sum_{t:\ y_t \ne \mathrm{pad}} \mathcal{L}_t$$
#
# 填充位置完全不计入：它的 $-\log p(y_t)$ 和平滑项都不算。**练习**
# %% [exercise label_smoothed_loss]
def label_smoothed_loss(logits, target, eps, pad_id):
    """The mean of L_t over the positions whose target is not pad_id (a 0-d tensor)."""
    raise NotImplementedError


check("label_smoothed_loss", label_smoothed_loss)
# %%
target = ex.tgt_out  # (B, T): 我 爱 你 </s>
p_y = t.P[0].gather(-1, target[0, :, None]).squeeze(-1)  # (T,): p(y_t), the correct words
print("p(y_t)          ", p_y.detach().numpy().round(3))
print("largest p in row", t.P[0].max(-1).values.detach().numpy().round(3), "(not the loss)")
total, nll, n = aiayn_loss(t.L, target, 0.1, model.config.pad_id)
print(f"smoothed loss {total / n:.4f}, plain cross-entropy {nll / n:.4f}, n = {n} tokens")
print(f"the smoothed loss can never go below H(q) = {smoothed_entropy(8, 0.1):.4f}")


# %% [markdown en]
# ## Backward, by hand
#
# For one row, $\partial \mathcal{L}_t / \partial L_t = p_t - q_t$ (because $q_t$ sums to 1),
# divided by $n$ for the mean, and 0 on padding rows. **Exercise.**
# %% [markdown zh]
# ## 手写反向传播
#
# 对一行来说，$\partial \mathcal{L}_t / \partial L_t = p_t - q_t$（因为 $q_t$ 的和为 1），
# 求平均还要除以 $n$，填充行的梯度为 0。**练习**
# %% [exercise loss_grad]
def loss_grad(logits, target, eps, pad_id):
    """d(mean smoothed loss)/d(logits), shape (B, T, V)."""
    raise NotImplementedError


check("loss_grad", loss_grad)


# %% [markdown en]
# Inside attention the gradient goes back through a softmax. With $A = \mathrm{softmax}(S)$ by
# rows, $\partial A_j / \partial S_k = A_j (\delta_{jk} - A_k)$, so
# $dS = A \odot (dA - \sum_j dA_j A_j)$: every weight of a row depends on every score of that
# row. **Exercise.**
# %% [markdown zh]
# 在注意力内部，梯度要反向穿过一个 softmax。设 $A = \mathrm{softmax}(S)$（按行），
# 则 $\partial A_j / \partial S_k = A_j (\delta_{jk} - A_k)$，于是
# $dS = A \odot (dA - \sum_j dA_j A_j)$：一行里的每个权重都依赖这一行的每个分数。**练习**
# %% [exercise softmax_backward]
def softmax_backward(dA, A):
    """dS for A = softmax(S) over the last axis."""
    raise NotImplementedError


check("softmax_backward", softmax_backward)
# %% [markdown en]
# aiayn's NumPy twin writes the backward pass of *every* block by hand (embedding, attention,
# LayerNorm, FFN, output layer, loss). On the note's sentence it gives the same gradients as
# PyTorch's autograd, for every parameter the note lists: the embeddings, every $W_Q, W_K,
# W_V$, the FFN's weights, LayerNorm's $\gamma$ and $\beta$.
# %% [markdown zh]
# aiayn 的 NumPy 孪生实现把*每个*模块的反向传播都手写了一遍（词嵌入、注意力、层归一化、
# 前馈网络、输出层、损失）。在笔记的例句上，它算出的梯度和 PyTorch 自动求导完全一致，
# 涵盖笔记列出的所有参数：词嵌入、各个 $W_Q, W_K, W_V$、前馈网络的权重、
# 层归一化的 $\gamma$ 和 $\beta$。
# %%
model.zero_grad()
total, _, n = aiayn_loss(model(ex.src, ex.tgt_in), ex.tgt_out, 0.1, model.config.pad_id)
(total / n).backward()
params = params_from_torch(model)
loss, grads = loss_and_grads(params, model.config, ex.src.numpy(), ex.tgt_in.numpy(),
                             ex.tgt_out.numpy(), 0.1)  # fmt: skip
print(f"loss: autograd {float(total / n):.6f}, NumPy twin {loss:.6f}")
torch_grads = dict(model.named_parameters())
worst = max(np.abs(grads[k] - torch_grads[k].grad.numpy()).max() for k in grads)
print(f"{len(grads)} parameters, largest |twin - autograd| = {worst:.1e}")
for name in ("embedding", "encoder.0.self_attn.w_qkv", "decoder.0.norm3.weight"):
    print(f"  {name:28s} grad shape {grads[name].shape}")
model.zero_grad()
