# %% [markdown en]
# # 6. Training for real: Eq. (3), teacher forcing, a small model learns
#
# The paper's sections 5.3 and 5.4. Adam with $\beta_1 = 0.9$, $\beta_2 = 0.98$,
# $\epsilon = 10^{-9}$, the learning rate of Eq. (3), label smoothing 0.1, dropout 0.1. We train
# a small Transformer on a task it can learn in well under a minute on a laptop CPU: reverse a
# sequence of numbers.
# %% [markdown zh]
# # 6. 真正训练一次：式 (3)、teacher forcing，看一个小模型学会任务
#
# 对应论文 5.3 节和 5.4 节：Adam（$\beta_1 = 0.9$，$\beta_2 = 0.98$，$\epsilon = 10^{-9}$），
# 式 (3) 的学习率，标签平滑 0.1，dropout 0.1。
# 我们训练一个小 Transformer 做一个在笔记本电脑 CPU 上一分钟内就能学会的任务：把一串数字倒过来。
# %%
import math
import os
import time

import matplotlib.pyplot as plt
import torch

from aiayn import ModelConfig, TrainConfig, Transformer
from aiayn.course import check, use_cjk_font
from aiayn.data.batch import collate
from aiayn.data.synthetic import synthetic_pairs
from aiayn.decode import greedy_search, max_lengths, model_step_fn
from aiayn.train.schedule import make_optimizer, noam_lr, set_lr

use_cjk_font()
_ = torch.manual_seed(0)  # the same initial weights and batches on every run


# %% [markdown en]
# ## The learning rate, Eq. (3)
#
# $$lrate = d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup\_steps^{-1.5})$$
#
# It rises linearly for $warmup\_steps$ steps, then falls as $1/\sqrt{step}$. Steps count
# from 1. **Exercise.**
# %% [markdown zh]
# ## 学习率：式 (3)
#
# $$lrate = d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup\_steps^{-1.5})$$
#
# 前 $warmup\_steps$ 步线性上升，之后按 $1/\sqrt{step}$ 下降。步数从 1 开始数。**练习**
# %% [exercise lrate]
def lrate(step, d_model, warmup):
    """Eq. (3), a float."""
    raise NotImplementedError


check("lrate", lrate)
# %%
steps = range(1, 20001)
fig, ax = plt.subplots(figsize=(7, 3))
for d_model, warmup in ((512, 4000), (512, 8000), (1024, 4000)):
    ax.plot(steps, [noam_lr(s, d_model, warmup) for s in steps],
            label=f"d_model={d_model}, warmup={warmup}")  # fmt: skip
ax.set_xlabel("step")
ax.set_ylabel("lrate")
ax.legend()
plt.show()
print(f"the paper's base model peaks at step 4000 with lrate = {noam_lr(4000, 512, 4000):.2e}")


# %% [markdown en]
# ## Teacher forcing: the decoder's input is the target shifted right
#
# The decoder reads `<s> y_1 .. y_n` and is trained to output `y_1 .. y_n </s>` at the same
# positions, all at once (the causal mask keeps each position from seeing its answer).
# aiayn's specials: `<pad>` = 0, `<s>` = 1, `</s>` = 2. **Exercise.** From `tgt_out` (padded
# with 0 after `</s>`), build `tgt_in`.
# %% [markdown zh]
# ## Teacher forcing：解码器的输入是右移一位的目标
#
# 解码器读入 `<s> y_1 .. y_n`，在相同的位置上被训练输出 `y_1 .. y_n </s>`，
# 所有位置一次算完（因果掩码保证每个位置看不到自己的答案）。
# aiayn 的特殊词元：`<pad>` = 0，`<s>` = 1，`</s>` = 2。
# **练习** 由 `tgt_out`（`</s>` 之后用 0 补齐）构造 `tgt_in`。
# %% [exercise decoder_input]
def decoder_input(tgt_out):
    """<s> y_1 .. y_n <pad>.., the same shape as tgt_out."""
    raise NotImplementedError


check("decoder_input", decoder_input)
# %%
batch = collate([([5, 6, 7], [7, 6, 5]), ([8, 9], [9, 8])])  # aiayn frames a batch
print("src    ", batch.src.tolist())
print("tgt_in ", batch.tgt_in.tolist())
print("tgt_out", batch.tgt_out.tolist())
# %% [markdown en]
# ## The training loop
#
# Everything on one screen: a batch, the label-smoothed loss summed over its target tokens,
# divided by their number, backward, the rate of Eq. (3), one Adam step. With `STEPS` = 400,
# about nine unseen sequences in ten come out exactly right (600 steps: more); the cell prints
# its own time. `make test` runs 100 steps (the environment variable `AIAYN_COURSE_STEPS`), only to
# check that the notebook runs.
# %% [markdown zh]
# ## 训练循环
#
# 全部写在一屏之内：取一个批次，对目标词元求标签平滑损失之和，除以词元数，反向传播，
# 按式 (3) 设学习率，走一步 Adam。`STEPS` = 400 时，没见过的序列大约十个里有九个能完全倒对
# （600 步时更多）；这个格子会打印自己用了多少时间。`make test` 只为确认笔记本能跑通，
# 通过环境变量 `AIAYN_COURSE_STEPS` 只跑 100 步。
# %%
V, BATCH = 20, 64  # ids 4..19 are the "words"; 0-3 are the specials
STEPS = int(os.environ.get("AIAYN_COURSE_STEPS", 400))  # the test suite runs 100
cfg = ModelConfig(vocab_size=V, d_model=64, n_heads=4, d_ff=128, n_layers=2, dropout=0.1)
train_cfg = TrainConfig(warmup=200, label_smoothing=0.1)  # Adam 0.9, 0.98, 1e-9: the paper's
model = Transformer(cfg)
optimizer = make_optimizer(model.parameters(), train_cfg)
pairs = synthetic_pairs("reverse", STEPS * BATCH, vocab_size=V, min_len=3, max_len=8, seed=0)
print(f"{model.num_parameters():,} parameters; first pair: {pairs[0]}")

history = {"step": [], "loss": [], "nll": [], "lr": []}
start = time.perf_counter()
model.train()
for step in range(1, STEPS + 1):
    b = collate(pairs[(step - 1) * BATCH : step * BATCH])
    smoothed, nll, n = model(b.src, b.tgt_in, target=b.tgt_out, label_smoothing=0.1)
    lr = noam_lr(step, cfg.d_model, train_cfg.warmup)
    set_lr(optimizer, lr)
    optimizer.zero_grad()
    (smoothed / n).backward()
    optimizer.step()
    for key, value in (("step", step), ("loss", smoothed.item() / n),
                       ("nll", nll.item() / n), ("lr", lr)):  # fmt: skip
        history[key].append(value)
print(
    f"{STEPS} steps in {time.perf_counter() - start:.0f} s; "
    f"last loss {history['loss'][-1]:.3f}, NLL {history['nll'][-1]:.3f}"
)
# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3))
axes[0].plot(history["step"], history["loss"], label="label-smoothed loss")
axes[0].plot(history["step"], history["nll"], label="NLL = -log p(y_t)")
axes[0].set_xlabel("step")
axes[0].set_yscale("log")
axes[0].legend()
axes[1].plot(history["step"], history["lr"])
axes[1].set_xlabel("step")
axes[1].set_ylabel("lrate, Eq. (3)")
plt.show()
# %% [markdown en]
# The smoothed loss cannot reach 0: its floor is the entropy of $q$. The NLL can. Now the
# trained model reverses sequences it has never seen (greedy decoding, notebook 7 explains):
# %% [markdown zh]
# 平滑后的损失降不到 0：它的下限是 $q$ 的熵；NLL 则可以趋近 0。
# 现在让训练好的模型去倒转从没见过的序列（贪心解码，第 7 个笔记本会讲）：
# %%
model.eval()
test = synthetic_pairs("reverse", 200, vocab_size=V, min_len=3, max_len=8, seed=1)
src = collate(test).src
found = greedy_search(model_step_fn(model, src), max_lengths(src))
right = sum(h[0].tokens[:-1] == y for h, (_, y) in zip(found, test, strict=True))
for (x, y), h in list(zip(test, found, strict=True))[:3]:
    print(x, "->", h[0].tokens[:-1], "(expected", y, ")")
print(f"exactly right: {right} of {len(test)} unseen sequences")
print(f"perplexity of the last batch: {math.exp(history['nll'][-1]):.3f}")
