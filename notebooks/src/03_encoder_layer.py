# %% [markdown en]
# # 3. Residual, LayerNorm, the FFN: one encoder layer
#
# The note's steps 3 to 5; the paper's sections 3.1 and 3.3. Each sub-layer is wrapped the
# same way (post-LN, as the paper writes it):
#
# $$\mathrm{LayerNorm}(x + \mathrm{Dropout}(\mathrm{Sublayer}(x)))$$
#
# $$R_E = X_E + M_E, \quad H_E = \mathrm{LayerNorm}(R_E), \quad F_E = \mathrm{FFN}(H_E), \quad
# Z_E = \mathrm{LayerNorm}(H_E + F_E)$$
#
# (Dropout is off here: the model is in evaluation mode.)
# %% [markdown zh]
# # 3. 残差、层归一化、前馈网络：一个完整的编码器层
#
# 对应笔记第 3 到第 5 步，论文 3.1 节和 3.3 节。每个子层都用同样的方式包起来
# （论文的写法是 post-LN）：
#
# $$\mathrm{LayerNorm}(x + \mathrm{Dropout}(\mathrm{Sublayer}(x)))$$
#
# $$R_E = X_E + M_E, \quad H_E = \mathrm{LayerNorm}(R_E), \quad F_E = \mathrm{FFN}(H_E), \quad
# Z_E = \mathrm{LayerNorm}(H_E + F_E)$$
#
# （这里模型处于评估模式，不做 dropout。）
# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from aiayn import trace
from aiayn.course import check, heatmap, note_example, use_cjk_font
from aiayn.numpy_twin.blocks import layer_norm_forward

use_cjk_font()
ex = note_example()
model = ex.model
with torch.no_grad():
    t = trace(model, ex.src, ex.tgt_in)
rec = t.encoder[0]  # the encoder's layer 1, by the note's names
layer = model.encoder[0]
for key in ("X", "M_E", "R_E", "H_E", "F_E", "Z_E"):
    print(f"{key:4s}", tuple(rec[key].shape))


# %% [markdown en]
# ## LayerNorm, row by row
#
# $$\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta$$
#
# $\mu$ and $\sigma^2$ are the mean and the variance of one token's row, over its $d_{model}$
# features; rows do not mix. $\gamma$ and $\beta$ (one value per feature) are learned;
# $\epsilon$ is a small constant, not a parameter (the note says $\gamma$ and $\epsilon$ are
# trainable: it is $\gamma$ and $\beta$). **Exercise.** Write it, with the variance divided by
# $d_{model}$.
# %% [markdown zh]
# ## 层归一化：一行一行地做
#
# $$\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta$$
#
# $\mu$ 和 $\sigma^2$ 是某个词元那一行在 $d_{model}$ 个特征上的均值和方差，行与行之间互不干扰。
# $\gamma$ 和 $\beta$（每个特征一个值）是可训练参数；
# $\epsilon$ 只是一个很小的常数，不是参数（笔记里说 $\gamma$ 和 $\epsilon$ 可训练，
# 应为 $\gamma$ 和 $\beta$）。**练习** 写出 LayerNorm，方差要除以 $d_{model}$。
# %% [exercise layer_norm]
def layer_norm(x, gamma, beta, eps):
    """LN over the last axis; x (..., d_model), gamma and beta (d_model,)."""
    raise NotImplementedError


check("layer_norm", layer_norm)
# %% [markdown en]
# After the normalisation (before $\gamma$ and $\beta$), every row of $R_E$ has mean 0 and
# variance 1: the picture shows each row brought to the same scale.
# %% [markdown zh]
# 归一化之后（乘 $\gamma$、加 $\beta$ 之前），$R_E$ 的每一行均值为 0、方差为 1：
# 从图上能看到每一行都被拉到了同样的尺度。
# %%
R = rec["R_E"][0]  # (S, D)
xhat = (R - R.mean(-1, keepdim=True)) / torch.sqrt(R.var(-1, unbiased=False, keepdim=True) + 1e-5)
fig, axes = plt.subplots(1, 3, figsize=(14, 3))
heatmap(axes[0], R, ex.src_words, title="R_E = X_E + M_E")
heatmap(axes[1], xhat, ex.src_words, title="(R_E - μ) / √(σ² + ε)")
heatmap(axes[2], rec["H_E"][0], ex.src_words, title="H_E = γ ⊙ ... + β")
plt.show()
print(
    "row means",
    xhat.mean(-1).numpy().round(6),
    " row variances",
    xhat.var(-1, unbiased=False).numpy().round(4),
)
y, _ = layer_norm_forward(
    R.numpy(), layer.norm1.weight.detach().numpy(), layer.norm1.bias.detach().numpy(), 1e-5
)
print("NumPy twin LN(R_E) == H_E:", np.allclose(y, rec["H_E"][0].numpy()))


# %% [markdown en]
# ## The position-wise feed-forward network
#
# $$\mathrm{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2$$
#
# The same two layers for every position (section 3.3): $W_1$ is $d_{model} \times d_{ff}$,
# $W_2$ is $d_{ff} \times d_{model}$; here $d_{ff} = 12$ (the paper: 2048 = $4 d_{model}$).
# **Exercise.**
# %% [markdown zh]
# ## 逐位置的前馈网络
#
# $$\mathrm{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2$$
#
# 每个位置用同样的两层（3.3 节）：$W_1$ 是 $d_{model} \times d_{ff}$，
# $W_2$ 是 $d_{ff} \times d_{model}$；这里 $d_{ff} = 12$（论文里是 2048 = $4 d_{model}$）。
# **练习**
# %% [exercise feed_forward]
def feed_forward(x, W_1, b_1, W_2, b_2):
    """FFN(x), shape (B, L, d_model)."""
    raise NotImplementedError


check("feed_forward", feed_forward)


# %% [markdown en]
# **Exercise.** The "Add & Norm" that wraps each sub-layer: given the sub-layer's output,
# return $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$ with $\epsilon = 10^{-5}$ and no
# dropout.
# %% [markdown zh]
# **练习** 包在每个子层外面的 “Add & Norm”：已知子层的输出，返回
# $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$，$\epsilon = 10^{-5}$，不做 dropout。
# %% [exercise add_and_norm]
def add_and_norm(x, sublayer, gamma, beta):
    """LayerNorm(x + sublayer), eps = 1e-5."""
    raise NotImplementedError


check("add_and_norm", add_and_norm)
# %% [markdown en]
# ## The whole layer
#
# One encoder layer by hand, from aiayn's own pieces, equals the trace's $Z_E$: the
# encoder's reading of each token, one row per token.
# %% [markdown zh]
# ## 整个编码器层
#
# 用 aiayn 自己的零件手工拼出一个编码器层，结果等于 trace 里的 $Z_E$：
# 编码器对每个词元的最终理解，每个词元一行。
# %%
with torch.no_grad():
    X = rec["X"]
    M = layer.self_attn(X)  # multi-head self-attention: M_E
    H = layer.norm1(X + M)  # add & norm: H_E
    Fx = layer.ffn(H)  # feed forward: F_E
    Z = layer.norm2(H + Fx)  # add & norm: Z_E
print("by hand == trace Z_E:", torch.allclose(Z, rec["Z_E"]))
fig, ax = plt.subplots(figsize=(5, 3))
heatmap(ax, Z[0], ex.src_words, title="Z_E (S × d_model)")
plt.show()
