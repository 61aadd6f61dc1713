# %% [markdown en]
# # 4. The decoder: the causal mask and cross-attention
#
# The note's steps 6 to 12; the paper's sections 3.1 and 3.2.3. The decoder reads
# `<s> 我 爱 你` and must predict `我 爱 你 </s>`, one position ahead. Three sub-layers:
# masked self-attention, encoder-decoder (cross-) attention, the FFN, each in Add & Norm.
# %% [markdown zh]
# # 4. 解码器：因果掩码与交叉注意力
#
# 对应笔记第 6 到第 12 步，论文 3.1 节和 3.2.3 节。解码器读入 `<s> 我 爱 你`，
# 要预测错开一位的 `我 爱 你 </s>`。它有三个子层：带掩码的自注意力、编码器-解码器注意力
# （交叉注意力）和前馈网络，每个子层外面都有 Add & Norm。
# %%
import math  # noqa: F401 (math.sqrt, for your exercises)

import matplotlib.pyplot as plt
import torch

from aiayn import trace
from aiayn.attention import causal_mask as aiayn_causal_mask
from aiayn.course import check, heatmap, note_example, use_cjk_font

use_cjk_font()
ex = note_example()
model = ex.model
with torch.no_grad():
    t = trace(model, ex.src, ex.tgt_in)
dec = t.decoder[0]  # the decoder's layer 1
for key in ("X", "M_D_self", "H_D", "M_D_cross", "H_D_cross", "F_D", "Z_D"):
    print(f"{key:9s}", tuple(dec[key].shape))


# %% [markdown en]
# ## The causal mask
#
# Position $i$ may look at positions $j \le i$ only: when the model predicts "爱" it must not
# see "爱". aiayn writes masks as booleans, **True = may attend**. **Exercise.**
# %% [markdown zh]
# ## 因果掩码
#
# 位置 $i$ 只能看 $j \le i$ 的位置：模型预测“爱”的时候不能先看到“爱”。
# aiayn 的掩码是布尔张量，**True 表示可以看**。**练习**
# %% [exercise causal_mask]
def causal_mask(T):
    """(T, T) bool, True where query i may attend to key j (j <= i)."""
    raise NotImplementedError


check("causal_mask", causal_mask)


# %% [markdown en]
# The note writes the same mask as numbers added to the scores,
# $S_{masked} = S + M$, with
# $M = \begin{bmatrix} 0 & -\infty & -\infty \\ 0 & 0 & -\infty \\ 0 & 0 & 0 \end{bmatrix}$;
# after the softmax, $e^{-\infty} = 0$. **Exercise.** Build the note's $M$.
# %% [markdown zh]
# 笔记里把同一个掩码写成加到分数上的数：$S_{masked} = S + M$，其中
# $M = \begin{bmatrix} 0 & -\infty & -\infty \\ 0 & 0 & -\infty \\ 0 & 0 & 0 \end{bmatrix}$；
# softmax 之后 $e^{-\infty} = 0$。**练习** 构造笔记里的 $M$。
# %% [exercise note_mask]
def note_mask(T):
    """(T, T) float: 0 on and below the diagonal, -inf above it."""
    raise NotImplementedError


check("note_mask", note_mask)


# %% [markdown en]
# **Exercise.** Attention with a mask: masked scores become $-\infty$ *before* the softmax, so
# that each row still sums to 1 over the keys it may see. Return the output and the weights.
# %% [markdown zh]
# **练习** 带掩码的注意力：被遮住的分数要在 softmax *之前* 设为 $-\infty$，
# 这样每一行在能看到的键上加起来仍然是 1。返回输出和权重。
# %% [exercise masked_attention]
def masked_attention(Q, K, V, keep):
    """(O, A) with A = softmax(S masked to -inf where keep is False), O = A V."""
    raise NotImplementedError


check("masked_attention", masked_attention)
# %%
s = dec["self_attn"]
words = ex.tgt_in_words
fig, axes = plt.subplots(1, 3, figsize=(14, 3.2))
heatmap(axes[0], s["scores"][0, 0], words, words, "S_1")
heatmap(axes[1], s["scores_masked"][0, 0], words, words, "S_1 + M")
heatmap(axes[2], s["weights"][0, 0], words, words, "A_1 = softmax(S_1 + M)")
plt.show()
# %% [markdown en]
# The mask really hides the future: change the last target word and the outputs of the
# earlier positions do not move.
# %% [markdown zh]
# 掩码确实挡住了未来：把最后一个目标词换掉，前面各位置的输出纹丝不动。
# %%
other = ex.tgt_in.clone()
other[0, -1] = ex.vocab.index("I")  # <s> 我 爱 I instead of <s> 我 爱 你
with torch.no_grad():
    z1, z2 = t.Z_D, trace(model, ex.src, other).Z_D
print("positions 0-2 unchanged:", torch.allclose(z1[:, :3], z2[:, :3]))
print("position 3 changed:     ", not torch.allclose(z1[:, 3], z2[:, 3]))
print("aiayn's mask:\n", aiayn_causal_mask(4).int())


# %% [markdown en]
# ## Padding
#
# Sentences of different lengths share a batch by padding the short ones; no query may attend
# to a padding key (the note leaves this out). **Exercise.** The padding mask of shape
# (B, 1, 1, L), which broadcasts over heads and queries.
# %% [markdown zh]
# ## 填充
#
# 长短不一的句子放进同一个批次时，要把短句补齐；任何查询都不能去看填充位置的键
# （笔记没有讲这一点）。**练习** 写出形状为 (B, 1, 1, L) 的填充掩码，
# 它可以在头和查询两个维度上广播。
# %% [exercise padding_mask]
def padding_mask(ids, pad_id):
    """(B, 1, 1, L) bool, True where ids != pad_id."""
    raise NotImplementedError


check("padding_mask", padding_mask)


# %% [markdown en]
# ## Cross-attention
#
# $$Q = H_D W_Q^{cross}, \quad K = Z_E W_K^{cross}, \quad V = Z_E W_V^{cross}$$
#
# The queries come from the decoder (after its self-attention's Add & Norm, $H_D$), keys and
# values from the encoder's output $Z_E$. No causal mask here: the whole source is known.
# **Exercise.**
# %% [markdown zh]
# ## 交叉注意力
#
# $$Q = H_D W_Q^{cross}, \quad K = Z_E W_K^{cross}, \quad V = Z_E W_V^{cross}$$
#
# 查询来自解码器（自注意力的 Add & Norm 之后，即 $H_D$），键和值来自编码器的输出 $Z_E$。
# 这里不加因果掩码：整个源句都是已知的。**练习**
# %% [exercise cross_attention]
def cross_attention(H_D, Z_E, W_Q, W_K, W_V, W_O, h):
    """M_D^cross, shape (B, T, d_model)."""
    raise NotImplementedError


check("cross_attention", cross_attention)
# %% [markdown en]
# Each row: while predicting the next target word, where the decoder looks in the source.
# The model is untrained here, so the pattern means nothing yet (notebook 8 shows a trained
# one).
# %% [markdown zh]
# 每一行表示：在预测下一个目标词时，解码器在源句里看向哪里。
# 这里的模型还没训练，图案暂时没有意义（第 8 个笔记本会展示训练好的模型）。
# %%
c = dec["cross_attn"]
print("cross-attention weights", tuple(c["weights"].shape), "(B, H, T, S)")
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
for i in range(2):
    heatmap(axes[i], c["weights"][0, i], words, ex.src_words, f"head {i + 1}: A_D,{i + 1}^cross")
plt.show()
