# %% [markdown en]
# # 2. Scaled dot-product attention and multi-head attention
#
# The note's step 2; the paper's sections 3.2.1 and 3.2.2. Every head $i$ projects the same
# input $X$ with its own matrices:
#
# $$Q_i = X W_{Q_i},\ K_i = X W_{K_i} \in \mathbb{R}^{n \times d_k}, \quad V_i = X W_{V_i}
# \in \mathbb{R}^{n \times d_v}, \qquad O_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}
# {\sqrt{d_k}}\right) V_i$$
#
# With $d_{model} = 6$ and $h = 2$: $d_k = d_v = d_{model} / h = 3$.
# %% [markdown zh]
# # 2. 缩放点积注意力与多头注意力
#
# 对应笔记第 2 步，论文 3.2.1 节和 3.2.2 节。每个头 $i$ 用自己的矩阵对同一个输入 $X$ 做投影：
#
# $$Q_i = X W_{Q_i},\ K_i = X W_{K_i} \in \mathbb{R}^{n \times d_k}, \quad V_i = X W_{V_i}
# \in \mathbb{R}^{n \times d_v}, \qquad O_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}
# {\sqrt{d_k}}\right) V_i$$
#
# 这里 $d_{model} = 6$，$h = 2$，所以 $d_k = d_v = d_{model} / h = 3$。
# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from aiayn import trace
from aiayn.course import check, heatmap, note_example, use_cjk_font
from aiayn.numpy_twin.attention import attention_forward

use_cjk_font()
ex = note_example()
model = ex.model
with torch.no_grad():
    t = trace(model, ex.src, ex.tgt_in)
a = t.encoder[0]["attn"]  # the encoder's self-attention, layer 1
mha = model.encoder[0].self_attn
print("W_Q (all heads)", tuple(mha.w_q.shape), " head i: columns 3i .. 3i+2")
for name in ("Q", "K", "V"):
    print(name, tuple(a[name].shape), "(B, H, S, d_k)")


# %% [markdown en]
# ## The scores $S_i = Q_i K_i^\top / \sqrt{d_k}$
#
# Row $j$ of $S_i$ says how well query $j$ matches each key. **Exercise.** Compute the scores
# for every batch and head at once: `Q` and `K` have shape (B, H, L, $d_k$).
# %% [markdown zh]
# ## 分数 $S_i = Q_i K_i^\top / \sqrt{d_k}$
#
# $S_i$ 的第 $j$ 行表示第 $j$ 个查询和每个键的匹配程度。
# **练习** 一次算出所有批次、所有头的分数：`Q` 和 `K` 的形状是 (B, H, L, $d_k$)。
# %% [exercise attention_scores]
def attention_scores(Q, K):
    """S = Q K^T / sqrt(d_k), shape (B, H, Lq, Lk)."""
    raise NotImplementedError


check("attention_scores", attention_scores)


# %% [markdown en]
# **Exercise.** The softmax of each row, $A_{jk} = e^{S_{jk}} / \sum_{k'} e^{S_{jk'}}$.
# Subtract each row's maximum first: the result is the same, and `exp` cannot overflow.
# %% [markdown zh]
# **练习** 对每一行做 softmax：$A_{jk} = e^{S_{jk}} / \sum_{k'} e^{S_{jk'}}$。
# 先让每行减去该行的最大值：结果不变，`exp` 也不会溢出。
# %% [exercise softmax_rows]
def softmax_rows(S):
    """softmax over the last axis, same shape as S."""
    raise NotImplementedError


check("softmax_rows", softmax_rows)
# %% [markdown en]
# The two heads of the note's sentence: each row is a distribution over the four source
# tokens (it sums to 1).
# %% [markdown zh]
# 笔记例句上的两个头：每一行都是在 4 个源语言词元上的概率分布（和为 1）。
# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
heatmap(axes[0], a["scores"][0, 0], ex.src_words, ex.src_words, "S_1 = Q_1 K_1ᵀ / √d_k")
heatmap(axes[1], a["weights"][0, 0], ex.src_words, ex.src_words, "A_1 = softmax(S_1)")
heatmap(axes[2], a["weights"][0, 1], ex.src_words, ex.src_words, "A_2 = softmax(S_2)")
plt.show()
print("rows of A sum to", a["weights"].sum(-1).flatten().tolist())
# %% [markdown en]
# ## Why $\sqrt{d_k}$, not $\sqrt{d_{model}}$
#
# The note divides by $\sqrt{d_{model}}$ in step 2 (and by $\sqrt{d_k}$ in step 7): the paper
# says $\sqrt{d_k}$. If the entries of $q$ and $k$ have mean 0 and variance 1, then
# $q \cdot k = \sum_{m=1}^{d_k} q_m k_m$ has variance $d_k$: the larger $d_k$, the larger the
# scores, and the softmax saturates (one weight near 1, tiny gradients). Dividing by
# $\sqrt{d_k}$ brings the variance back to 1.
# %% [markdown zh]
# ## 为什么除以 $\sqrt{d_k}$ 而不是 $\sqrt{d_{model}}$
#
# 笔记第 2 步除的是 $\sqrt{d_{model}}$（第 7 步又写成了 $\sqrt{d_k}$），论文用的是 $\sqrt{d_k}$。
# 假设 $q$ 和 $k$ 的各分量均值为 0、方差为 1，那么
# $q \cdot k = \sum_{m=1}^{d_k} q_m k_m$ 的方差是 $d_k$：$d_k$ 越大，分数越大，
# softmax 就越接近 one-hot（一个权重接近 1，梯度很小）。
# 除以 $\sqrt{d_k}$ 正好把方差拉回 1。
# %%
g = torch.Generator().manual_seed(0)
for d_k in (3, 64, 512):
    q, k = torch.randn(2000, d_k, generator=g), torch.randn(2000, 10, d_k, generator=g)
    s = (k @ q[:, :, None]).squeeze(-1)  # (2000, 10): 10 scores per query
    top = s.softmax(-1).max(-1).values.mean()
    top_scaled = (s / math.sqrt(d_k)).softmax(-1).max(-1).values.mean()
    print(
        f"d_k = {d_k:3d}: var(q·k) = {s.var():6.1f}, largest weight {top:.2f}; "
        f"divided by √d_k: var {(s / math.sqrt(d_k)).var():.2f}, largest weight {top_scaled:.2f}"
    )


# %% [markdown en]
# ## Many heads in one tensor
#
# aiayn keeps all heads' $W_Q$ in one $d_{model} \times h d_k$ matrix: head $i$ owns columns
# $i d_k$ to $(i+1) d_k - 1$. So $X W_Q$ has shape (B, L, $d_{model}$), to be cut into
# $h$ heads. **Exercise.** Reshape (B, L, $d_{model}$) into (B, H, L, $d_k$).
# %% [markdown zh]
# ## 把多个头放在一个张量里
#
# aiayn 把所有头的 $W_Q$ 放在一个 $d_{model} \times h d_k$ 的矩阵里：
# 第 $i$ 个头占第 $i d_k$ 到 $(i+1) d_k - 1$ 列。因此 $X W_Q$ 的形状是
# (B, L, $d_{model}$)，需要切成 $h$ 个头。
# **练习** 把 (B, L, $d_{model}$) 变形为 (B, H, L, $d_k$)。
# %% [exercise split_heads]
def split_heads(X, h):
    """(B, L, d_model) -> (B, H, L, d_k), head i taking columns i d_k .. (i + 1) d_k - 1."""
    raise NotImplementedError


check("split_heads", split_heads)


# %% [markdown en]
# ## Multi-head attention and $W^O$
#
# The note concatenates the heads "directly". The paper multiplies the concatenation by one
# more matrix (3.2.2), which mixes what the heads found:
#
# $$M_E = \mathrm{MultiHead}(X) = \mathrm{Concat}(O_1, \ldots, O_h)\, W^O, \qquad
# W^O \in \mathbb{R}^{h d_v \times d_{model}}$$
#
# **Exercise.** Put it together (your functions above may help).
# %% [markdown zh]
# ## 多头注意力与 $W^O$
#
# 笔记里把各头的输出“直接拼起来”。论文在拼接之后还要再乘一个矩阵（3.2.2 节），
# 把各头找到的信息混合起来：
#
# $$M_E = \mathrm{MultiHead}(X) = \mathrm{Concat}(O_1, \ldots, O_h)\, W^O, \qquad
# W^O \in \mathbb{R}^{h d_v \times d_{model}}$$
#
# **练习** 把前面的几步组合起来（可以调用上面写好的函数）。
# %% [exercise multi_head_attention]
def multi_head_attention(X, W_Q, W_K, W_V, W_O, h):
    """M = Concat(head_1..head_h) W^O, shape (B, L, d_model)."""
    raise NotImplementedError


check("multi_head_attention", multi_head_attention)
# %% [markdown en]
# The same numbers three ways: the trace's $M_E$, Concat $\cdot\, W^O$ by hand, and the NumPy
# twin (aiayn's attention written again in NumPy, with its backward pass by hand).
# %% [markdown zh]
# 同一组数用三种方法算：trace 记录的 $M_E$、手算的 Concat $\cdot\, W^O$，
# 以及 NumPy 孪生实现（用 NumPy 把 aiayn 的注意力重写一遍，反向传播也是手写的）。
# %%
concat = a["O"].transpose(1, 2).reshape(1, 4, 6)  # (B, S, H d_k)
print("Concat(O_1, O_2) W^O == M_E:", torch.allclose(concat @ mha.w_o, a["M"]))
O_twin, _ = attention_forward(a["Q"].numpy(), a["K"].numpy(), a["V"].numpy())
print("NumPy twin O == trace O:   ", np.allclose(O_twin, a["O"].numpy()))
print("M_E", tuple(a["M"].shape), "(B, S, d_model)")
