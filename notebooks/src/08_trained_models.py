# %% [markdown en]
# # 8. The trained models: "I love you." through every layer, heads, ablation, Table 3
#
# Everything so far ran on the note's untrained toy. Now the same quantities on `en-zh`, the
# English-Chinese model shipped inside aiayn: $d_{model} = 128$, $h = 4$, 4 + 4 layers,
# trained 55 minutes on 2 CPU cores on Tatoeba's everyday sentences. Then the paper's Table 3,
# read from aiayn's own results.
# %% [markdown zh]
# # 8. 训练好的模型：“I love you.” 穿过每一层，注意力头，消融，表 3
#
# 前面用的都是笔记里没训练过的小模型。现在换成 aiayn 自带的英译中模型 `en-zh`：
# $d_{model} = 128$，$h = 4$，编码器、解码器各 4 层，在 2 个 CPU 核上用 Tatoeba 的日常句子
# 训练了 55 分钟。最后读一读 aiayn 自己复现的论文表 3。
# %%
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from aiayn import load_pretrained, trace
from aiayn.course import check, heatmap, use_cjk_font
from aiayn.data import Tokenizer
from aiayn.data.specials import BOS, EOS
from aiayn.pretrained import names, results
from aiayn.translator import load_translator

use_cjk_font()
model, meta = load_pretrained("en-zh")  # the model and its metadata (tokenizer inside)
model.eval()
tok = Tokenizer.from_str(meta["tokenizer"])
print("shipped models:", names())
print(model.config.d_model, "d_model,", model.config.n_heads, "heads,", model.config.n_layers,
      "layers,", f"{model.num_parameters():,} parameters")  # fmt: skip
# %% [markdown en]
# ## "I love you." through every layer
#
# Translate it, then run `trace` on the source and the translation (teacher forcing): every
# quantity of the note, now $128$ wide and 4 layers deep.
# %% [markdown zh]
# ## “I love you.” 穿过每一层
#
# 先翻译，再把源句和译文一起交给 `trace`（teacher forcing）：笔记里的每个量都在，
# 只是现在有 128 维宽、4 层深。
# %%
translator = load_translator("en-zh", device="cpu")
(text, hyp), *_ = translator.translate(["I love you."])[0]
src_ids = [*tok.encode("I love you."), EOS]
out_ids = hyp.tokens  # ends with </s>
src = torch.tensor([src_ids])  # (1, S)
tgt_in = torch.tensor([[BOS, *out_ids[:-1]]])  # (1, T)
src_words, out_words = tok.tokens(src_ids), tok.tokens(out_ids)
print("I love you. ->", text, "  source tokens", src_words, "  output tokens", out_words)
with torch.no_grad():
    t = trace(model, src, tgt_in)
print(
    f"X_E {tuple(t.X_E.shape)}  Z_E {tuple(t.Z_E.shape)}  X_D {tuple(t.X_D.shape)}  "
    f"Z_D {tuple(t.Z_D.shape)}  L {tuple(t.L.shape)}"
)
for i, (e, d) in enumerate(zip(t.encoder, t.decoder, strict=True)):
    print(
        f"layer {i + 1}: |Z_E| per token {e['Z_E'][0].norm(dim=-1).numpy().round(1)}, "
        f"decoder cross-attention {tuple(d['cross_attn']['weights'].shape)}"
    )
p_y = t.P[0].gather(-1, torch.tensor(out_ids)[:, None]).squeeze(-1)
print("p(y_t) of each output token:", p_y.numpy().round(3))
# %% [markdown en]
# ## The heads
#
# Cross-attention of the last decoder layer, one panel per head: row $t$ is where the decoder
# looks in the source while it writes output token $t$.
# %% [markdown zh]
# ## 各个注意力头
#
# 解码器最后一层的交叉注意力，每个头一幅图：第 $t$ 行表示解码器在写第 $t$ 个输出词元时，
# 在源句里看向哪里。
# %%
last = t.decoder[-1]["cross_attn"]["weights"][0]  # (H, T, S)
fig, axes = plt.subplots(1, model.config.n_heads, figsize=(16, 3.2))
for i, ax in enumerate(axes):
    heatmap(ax, last[i], out_words, src_words, f"decoder layer 4, head {i + 1}")
plt.show()


# %% [markdown en]
# ## Ablation: switch one head off
#
# Head $i$'s output $O_i$ meets $W^O$ only through rows $i d_k$ to $(i+1) d_k - 1$ (the
# concatenation puts it there). Zeroing those rows removes the head. **Exercise.**
# %% [markdown zh]
# ## 消融：关掉一个头
#
# 第 $i$ 个头的输出 $O_i$ 只和 $W^O$ 的第 $i d_k$ 到 $(i+1) d_k - 1$ 行相乘（拼接把它放在那里）。
# 把这几行清零，就等于去掉了这个头。**练习**
# %% [exercise ablate_head]
def ablate_head(W_O, head, h):
    """A copy of W_O with the rows of head `head` (0-based) set to 0."""
    raise NotImplementedError


check("ablate_head", ablate_head)


# %% [markdown en]
# How much does $\log P(\text{我爱你。} \mid \text{I love you.})$ drop when one head of the
# decoder's cross-attention is switched off? (aiayn's own way of zeroing, the rows of $W^O$.)
# %% [markdown zh]
# 关掉解码器交叉注意力中的某一个头，$\log P(\text{我爱你。} \mid \text{I love you.})$
# 会下降多少？（用 aiayn 自己的方式清零：$W^O$ 的相应行。）
# %%
def log_p(m):
    with torch.no_grad():
        logits = m(src, tgt_in)  # (1, T, V)
    return float(logits.log_softmax(-1)[0].gather(-1, torch.tensor(out_ids)[:, None]).sum())


base = log_p(model)
H, d_k = model.config.n_heads, model.config.d_model // model.config.n_heads
drop = torch.zeros(model.config.n_layers, H)
for layer, block in enumerate(model.decoder):
    w_o = block.cross_attn.w_o
    for head in range(H):
        saved = w_o.data[head * d_k : (head + 1) * d_k].clone()
        w_o.data[head * d_k : (head + 1) * d_k] = 0.0
        drop[layer, head] = base - log_p(model)
        w_o.data[head * d_k : (head + 1) * d_k] = saved
print(
    f"log P(translation) = {base:.3f}; with every head: unchanged after restoring "
    f"({log_p(model):.3f})"
)
fig, ax = plt.subplots(figsize=(5, 3.2))
heatmap(ax, drop, [f"layer {i + 1}" for i in range(4)], [f"head {i + 1}" for i in range(H)],
        "drop of log P without the head")  # fmt: skip
plt.show()
# %% [markdown en]
# If aiayn ships the English-German model of Multi30k too, it translates here; with only
# `en-zh` this cell says so.
# %% [markdown zh]
# 如果 aiayn 还带了 Multi30k 的英译德模型，这里会用它翻译一句；只有 `en-zh` 时会如实说明。
# %%
if "en-de-multi30k" in names():
    de = load_translator("en-de-multi30k", device="cpu")
    print(
        "A dog runs through the grass. ->", de.translate(["A dog runs through the grass."])[0][0][0]
    )
else:
    print("shipped here:", names(), "(no en-de-multi30k in this aiayn)")


# %% [markdown en]
# ## Perplexity
#
# $$PPL = \exp\Big(\frac{1}{N}\sum_t -\log p(y_t)\Big)$$
#
# over the $N$ target tokens (`</s>` counted, padding not). The paper's Table 3 reports the
# perplexity per word-piece on the development set. **Exercise.**
# %% [markdown zh]
# ## 困惑度
#
# $$PPL = \exp\Big(\frac{1}{N}\sum_t -\log p(y_t)\Big)$$
#
# 在 $N$ 个目标词元上计算（`</s>` 计入，填充不计）。论文表 3 报告的是开发集上按子词计的困惑度。
# **练习**
# %% [exercise perplexity]
def perplexity(nll_sum, tokens):
    """exp(nll_sum / tokens)."""
    raise NotImplementedError


check("perplexity", perplexity)
# %%
print(f"PPL of 我爱你。 given I love you.: {math.exp(-base / len(out_ids)):.2f}")
r = results("en-zh")
print(
    f"en-zh on its test split: sacreBLEU {r['test']['sacrebleu']}, "
    f"valid perplexity {r['valid']['perplexity']}"
)
# %% [markdown en]
# ## One row of Table 3: the number of heads
#
# Table 3's row (A) varies $h$ with $h \cdot d_k$ fixed. aiayn reran every row at CPU scale
# (`aiayn table3`, Multi30k, 1000 steps, two seeds; docs/table3.md); its results file is
# `benchmarks/results/table3/results.jsonl` in the repository.
# %% [markdown zh]
# ## 表 3 的一行：头的个数
#
# 表 3 的 (A) 行在 $h \cdot d_k$ 不变的前提下改变 $h$。aiayn 在 CPU 规模上把表 3 的每一行
# 都重跑了一遍（`aiayn table3`，Multi30k，1000 步，两个随机种子，见 docs/table3.md），
# 结果文件是仓库里的 `benchmarks/results/table3/results.jsonl`。
# %%
RESULTS = "benchmarks/results/table3/results.jsonl"  # in the repository, above this notebook
path = next(p / RESULTS for p in [Path.cwd(), *Path.cwd().parents] if (p / RESULTS).is_file())
records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
row = [x for x in records if x["row"] in ("A", "base")]
by_h: dict[int, list[dict]] = {}
for x in row:
    by_h.setdefault(x["values"]["h"], []).append(x)
print(" h   d_k   dev PPL (seeds)      dev BLEU (seeds)")
for h in sorted(by_h):
    runs = by_h[h]
    ppl = " ".join(f"{x['dev_ppl']:5.2f}" for x in runs)
    bleu = " ".join(f"{x['dev_bleu']:5.2f}" for x in runs)
    print(f"{h:2d}  {runs[0]['values']['d_k']:4d}   {ppl:18s}   {bleu}")
fig, ax = plt.subplots(figsize=(5, 3))
hs = sorted(by_h)
ax.plot(hs, [sum(x["dev_ppl"] for x in by_h[h]) / len(by_h[h]) for h in hs], "o-")
ax.set_xscale("log", base=2)
ax.set_xlabel("h (heads), h · d_k = 128")
ax.set_ylabel("dev perplexity (mean of seeds)")
plt.show()
