# %% [markdown en]
# # 1. Tokens, embeddings and positions
#
# The study note's steps 1 and 6; the paper's sections 3.4 and 3.5. We follow the note's toy
# example all the way: $d_{model} = 6$, $h = 2$ heads, and 8 words, `<s> </s> I love you 我 爱 你`.
#
# Each exercise cell asks you to write one formula. Run it: `check(...)` compares your function
# with aiayn's own on the note's sentence and on random shapes, and tells you what is wrong.
# %% [markdown zh]
# # 1. 词元、词嵌入与位置编码
#
# 对应笔记的第 1 步和第 6 步，论文的 3.4 节和 3.5 节。整套课程一直沿用笔记里的小例子：
# $d_{model} = 6$，$h = 2$ 个头，词表只有 8 个词：`<s> </s> I love you 我 爱 你`。
#
# 每个练习格子请你写出一个公式。运行它，`check(...)` 会在笔记的例句和随机形状上，
# 把你的函数和 aiayn 自己的实现逐一比对，错了会告诉你错在哪里。
# %%
import math

import matplotlib.pyplot as plt
import torch

from aiayn import trace
from aiayn.course import check, heatmap, note_example, use_cjk_font
from aiayn.model import sinusoidal_positions
from aiayn.walkthrough.positions import rotation

use_cjk_font()
ex = note_example()  # the note's toy model: d_model = 6, h = 2, one layer on each side
model = ex.model
print("vocabulary:", ex.vocab)
print("src    =", ex.src_words, ex.src.tolist())  # (B, S) = (1, 4)
print("tgt_in =", ex.tgt_in_words, ex.tgt_in.tolist())  # (B, T) = (1, 4)
# %% [markdown en]
# ## The embedding matrix $E$
#
# One matrix $E \in \mathbb{R}^{V \times d_{model}}$ serves three times (3.4): the source
# embedding, the target embedding and, transposed, the output layer of step 13. A token id
# picks a row.
# %% [markdown zh]
# ## 词嵌入矩阵 $E$
#
# 一个矩阵 $E \in \mathbb{R}^{V \times d_{model}}$ 身兼三职（3.4 节）：
# 源语言词嵌入、目标语言词嵌入，以及第 13 步转置后的输出层。
# 一个词的 id 就是取出 $E$ 的某一行。
# %%
E = model.embedding.detach()  # (V, D) = (8, 6)
fig, ax = plt.subplots(figsize=(5, 3.5))
heatmap(ax, E, rows=ex.vocab, cols=[f"d{j}" for j in range(6)], title="E  (V × d_model)")
plt.show()


# %% [markdown en]
# ## The positional encoding
#
# Attention by itself cannot tell "I love you" from "you love I": it sees a set of vectors.
# The paper adds a fixed code of each position:
#
# $$PE_{(pos, 2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
# PE_{(pos, 2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)$$
#
# **Exercise.** Write it. Even dimensions $2i$ take the sine, odd dimensions $2i+1$ the cosine
# of the same angle.
# %% [markdown zh]
# ## 位置编码
#
# 注意力本身分不清 "I love you" 和 "you love I"：它看到的只是一组向量。
# 论文给每个位置加上一个固定的编码：
#
# $$PE_{(pos, 2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
# PE_{(pos, 2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)$$
#
# **练习** 把它写出来。偶数维 $2i$ 取正弦，奇数维 $2i+1$ 取同一角度的余弦。
# %% [exercise positional_encoding]
def positional_encoding(n_positions, d_model):
    """PE, shape (n_positions, d_model)."""
    raise NotImplementedError


check("positional_encoding", positional_encoding)
# %% [markdown en]
# Each pair of dimensions $(2i, 2i+1)$ is a point turning on a circle, at its own speed: the
# wavelengths grow from $2\pi$ (the first pair) to $10000 \cdot 2\pi$. The first columns change
# fast, the last ones hardly at all.
# %% [markdown zh]
# 每一对维度 $(2i, 2i+1)$ 都是圆周上转动的一个点，各自有各自的速度：波长从 $2\pi$（第一对）
# 一直增长到 $10000 \cdot 2\pi$。所以靠前的列变化很快，靠后的列几乎不动。
# %%
pe = sinusoidal_positions(50, 64)  # (L, D): aiayn's own
fig, ax = plt.subplots(figsize=(8, 3))
image = ax.imshow(pe.T, cmap="RdBu", aspect="auto")
ax.set_xlabel("pos")
ax.set_ylabel("dimension")
ax.set_title("PE (50 positions × d_model = 64)")
fig.colorbar(image)
plt.show()
print("the note's PE (4 positions, d_model = 6):")
print(sinusoidal_positions(4, 6).numpy().round(3))


# %% [markdown en]
# ## Why sine *and* cosine: $PE_{pos+k} = R_k \, PE_{pos}$
#
# The note promised to explain the positional encoding "later". Here it is. With
# $\omega_i = 1/10000^{2i/d_{model}}$ and $a = \omega_i \cdot pos$, $b = \omega_i k$:
# $\sin(a+b) = \sin a \cos b + \cos a \sin b$ and $\cos(a+b) = \cos a \cos b - \sin a \sin b$.
# So moving $k$ positions is one fixed linear map $R_k$, the same for every $pos$: a
# $2 \times 2$ rotation per pair. A linear layer can learn to "look $k$ words back".
#
# **Exercise.** Build $R_k$: one block $\begin{pmatrix}\cos \omega_i k & \sin \omega_i k \\
# -\sin \omega_i k & \cos \omega_i k\end{pmatrix}$ per pair of dimensions.
# %% [markdown zh]
# ## 为什么要同时用正弦和余弦：$PE_{pos+k} = R_k \, PE_{pos}$
#
# 笔记里说位置编码“等会儿再来解释”，这里补上。记 $\omega_i = 1/10000^{2i/d_{model}}$，
# $a = \omega_i \cdot pos$，$b = \omega_i k$，由和角公式
# $\sin(a+b) = \sin a \cos b + \cos a \sin b$，$\cos(a+b) = \cos a \cos b - \sin a \sin b$。
# 于是往后挪 $k$ 个位置，就是乘上一个固定的线性变换 $R_k$，与 $pos$ 无关：每一对维度上一个
# $2 \times 2$ 的旋转。线性层因此很容易学会“往前看 $k$ 个词”。
#
# **练习** 构造 $R_k$：每对维度一个块 $\begin{pmatrix}\cos \omega_i k & \sin \omega_i k \\
# -\sin \omega_i k & \cos \omega_i k\end{pmatrix}$。
# %% [exercise pe_rotation]
def pe_rotation(k, d_model):
    """R_k, shape (d_model, d_model), with PE[pos + k] = R_k @ PE[pos]."""
    raise NotImplementedError


check("pe_rotation", pe_rotation)
# %%
table = sinusoidal_positions(20, 6, dtype=torch.float64)  # (L, D)
R3 = torch.from_numpy(rotation(3, 6))  # (D, D): aiayn's own R_k
print("PE[pos + 3] == R_3 @ PE[pos] for every pos:", torch.allclose(table[3:], table[:-3] @ R3.T))


# %% [markdown en]
# ## The encoder's input $X_E$
#
# $$X_E = \sqrt{d_{model}}\, E_{src} + PE, \qquad X_D = \sqrt{d_{model}}\, E_{target} + PE$$
#
# **Exercise.** Look up the rows of $E$, multiply by $\sqrt{d_{model}}$, add the positions
# (your `positional_encoding` from above may help).
# %% [markdown zh]
# ## 编码器的输入 $X_E$
#
# $$X_E = \sqrt{d_{model}}\, E_{src} + PE, \qquad X_D = \sqrt{d_{model}}\, E_{target} + PE$$
#
# **练习** 取出 $E$ 的相应行，乘以 $\sqrt{d_{model}}$，再加上位置编码（可以用上面写好的
# `positional_encoding`）。
# %% [exercise input_embedding]
def input_embedding(ids, E):
    """X = sqrt(d_model) * E[ids] + PE, shape (B, L, d_model); ids (B, L), E (V, d_model)."""
    raise NotImplementedError


check("input_embedding", input_embedding)
# %% [markdown en]
# `aiayn.trace` runs the model once and keeps every quantity under the note's name. Here are
# $X_E$ and $X_D$ of the note's sentence.
# %% [markdown zh]
# `aiayn.trace` 把模型跑一遍，并以笔记里的名字保存每个中间量。下面是笔记例句的 $X_E$ 和 $X_D$。
# %%
t = trace(model, ex.src, ex.tgt_in)
print("X_E", tuple(t.X_E.shape), " X_D", tuple(t.X_D.shape))  # (B, S, D), (B, T, D)
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
heatmap(axes[0], t.X_E[0], rows=ex.src_words, title="X_E = √d_model E_src + PE")
heatmap(axes[1], t.X_D[0], rows=ex.tgt_in_words, title="X_D = √d_model E_target + PE")
plt.show()
# %% [markdown en]
# ## Why $\sqrt{d_{model}}$
#
# aiayn draws $E$ with standard deviation $d_{model}^{-1/2}$, so a row has length about 1,
# while every row of $PE$ has length $\sqrt{d_{model}/2}$. Without the factor, the positions
# would drown the words; with it, both have the same size. (The paper gives no reason; this is
# the usual reading.)
# %% [markdown zh]
# ## 为什么乘 $\sqrt{d_{model}}$
#
# aiayn 初始化 $E$ 时用的标准差是 $d_{model}^{-1/2}$，所以每一行的长度约为 1；而 $PE$ 每一行的长度
# 是 $\sqrt{d_{model}/2}$。不乘这个因子，位置信息就会盖过词义；乘了以后两者大小相当。
# （论文没有说明原因，这是通常的解释。）
# %%
d = 512
E_big = torch.randn(1000, d) * d**-0.5  # as Transformer initialises E
print(f"|E row|            ≈ {E_big.norm(dim=1).mean():.2f}")
print(f"|√d_model E row|   ≈ {(math.sqrt(d) * E_big).norm(dim=1).mean():.2f}")
print(f"|PE row|           = {sinusoidal_positions(10, d).norm(dim=1)[0]:.2f}")
