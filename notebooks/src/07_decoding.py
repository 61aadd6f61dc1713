# %% [markdown en]
# # 7. Decoding: greedy, beam search with the length penalty, BLEU
#
# The paper's section 6.1: "beam search with a beam size of 4 and length penalty
# $\alpha = 0.6$ ... maximum output length ... input length + 50, but terminate early when
# possible". We decode with `en-zh`, the English-Chinese model shipped inside aiayn (no
# download).
# %% [markdown zh]
# # 7. 解码：贪心搜索、带长度惩罚的束搜索、BLEU
#
# 对应论文 6.1 节：“束宽为 4，长度惩罚 $\alpha = 0.6$……最大输出长度为输入长度 + 50，
# 能提前结束时就提前结束”。我们用 aiayn 自带的英译中模型 `en-zh` 来解码（无需下载）。
# %%
import math  # noqa: F401 (math.log, math.exp, for your exercises)
from collections import Counter  # noqa: F401 (for your BLEU)

import matplotlib.pyplot as plt
import torch  # noqa: F401 (for your exercises)

from aiayn import DecodeConfig
from aiayn.course import check, use_cjk_font
from aiayn.decode import length_penalty as aiayn_length_penalty
from aiayn.evaluate import sacre_bleu
from aiayn.pretrained import examples
from aiayn.translator import load_translator

use_cjk_font()
beam4 = load_translator("en-zh", DecodeConfig(beam=4, alpha=0.6), device="cpu")
greedy = load_translator("en-zh", DecodeConfig(beam=1), device="cpu")
tok = beam4.tokenizer
print(f"en-zh: {beam4.model.num_parameters():,} parameters, vocabulary {tok.vocab_size}")
# %% [markdown en]
# ## Greedy search
#
# At each step take the most probable next token, $y_t = \arg\max_v \log P(v \mid y_{<t}, X)$,
# until `</s>`.
# %% [markdown zh]
# ## 贪心搜索
#
# 每一步都取最可能的下一个词元，$y_t = \arg\max_v \log P(v \mid y_{<t}, X)$，直到 `</s>`。
# %%
for line in ("I love you.", "Let's go home."):
    (text, hyp), *_ = greedy.translate([line])[0]
    print(f"{line:16s} -> {text}   tokens {tok.tokens(hyp.tokens)}  log P = {hyp.logprob:.3f}")


# %% [markdown en]
# ## The length penalty
#
# A beam compares finished hypotheses of different lengths; every token adds a negative
# $\log P$, so a plain sum prefers short outputs. The paper (from GNMT) divides by
#
# $$lp(Y) = \left(\frac{5 + |Y|}{6}\right)^{\alpha}$$
#
# **Exercise.**
# %% [markdown zh]
# ## 长度惩罚
#
# 束搜索要比较长短不同的已完成假设；每多一个词元就多加一个负的 $\log P$，
# 直接相加会偏爱短句。论文沿用 GNMT 的做法，除以
#
# $$lp(Y) = \left(\frac{5 + |Y|}{6}\right)^{\alpha}$$
#
# **练习**
# %% [exercise length_penalty]
def length_penalty(length, alpha):
    """((5 + |Y|) / 6) ** alpha."""
    raise NotImplementedError


check("length_penalty", length_penalty)
# %%
lengths = list(range(1, 41))
fig, ax = plt.subplots(figsize=(6, 3))
for alpha in (0.0, 0.6, 1.0, 1.5):
    ax.plot(lengths, [aiayn_length_penalty(n, alpha) for n in lengths], label=f"α = {alpha}")
ax.set_xlabel("|Y| (tokens, </s> included)")
ax.set_ylabel("lp(Y)")
ax.legend()
plt.show()


# %% [markdown en]
# ## One beam step
#
# $K$ live hypotheses, each with its $\log P$ so far. Every one of them can be extended by any
# of the $V$ tokens: rank the $K \cdot V$ candidates by their total $\log P$ and keep the $K$
# best. A candidate ending with `</s>` is finished and scored $\log P / lp(|Y|)$; the others
# stay live and carry their plain $\log P$ to the next step (all live candidates have the
# same length, so the penalty would not change their order, but it must not pile up step after
# step). **Exercise.**
# %% [markdown zh]
# ## 束搜索的一步
#
# 有 $K$ 个存活的假设，各自带着此前累积的 $\log P$。每个假设都可以接上 $V$ 个词元中的任何一个：
# 把这 $K \cdot V$ 个候选按总的 $\log P$ 排序，留下最好的 $K$ 个。
# 以 `</s>` 结尾的候选就算完成，打分为 $\log P / lp(|Y|)$；其余的继续存活，
# 带着原始的 $\log P$ 进入下一步（存活候选长度相同，惩罚不影响它们的排序，
# 但惩罚不能一步一步累积下去）。**练习**
# %% [exercise beam_step]
def beam_step(logprob, logp, t, alpha):
    """(logprob, parent, token, score) of the K best of K x V extensions; </s> is id 2."""
    raise NotImplementedError


check("beam_step", beam_step)
# %% [markdown en]
# aiayn's beam search can record every step it takes. Here are the first steps of "I love
# you." with beam 4: each candidate, its parent, $\log P$, its score once it is finished, and
# what became of it.
# %% [markdown zh]
# aiayn 的束搜索可以把每一步都记录下来。下面是 "I love you." 在束宽 4 下的前几步：
# 每个候选、它的父假设、$\log P$、结束后的得分，以及它的去向。
# %%
steps = []
(hyp,) = beam4.translate_ids(beam4.encode(["I love you."]), record=steps)[0][:1]
for step in steps[0][:3]:
    print(f"|Y| = {step.t}:  bound {step.bound:.3f}, finished so far {step.finished_total}")
    for c in step.candidates:
        words = "".join(tok.tokens(c["tokens"]))
        score = f"{c['score']:7.3f}" if c["status"] == "finished" else "      -"  # live: log P
        print(f"    {words:12s} parent {c['parent']}  log P {c['logprob']:7.3f}  "
              f"score {score}  {c['status']}")  # fmt: skip
print("beam 4 ->", tok.decode(hyp.tokens), f"(score {hyp.score:.3f})")


# %% [markdown en]
# ## BLEU
#
# $$\mathrm{BLEU} = BP \cdot \exp\Big(\frac{1}{4}\sum_{n=1}^{4} \log p_n\Big), \qquad
# BP = \begin{cases} 1 & c > r \\ e^{1 - r/c} & c \le r \end{cases}$$
#
# $p_n$ is the $n$-gram precision of the whole corpus, each $n$-gram counted at most as often
# as in the reference ("clipped"); $c$ and $r$ are the output's and the reference's lengths.
# **Exercise.** Words are split at spaces.
# %% [markdown zh]
# ## BLEU
#
# $$\mathrm{BLEU} = BP \cdot \exp\Big(\frac{1}{4}\sum_{n=1}^{4} \log p_n\Big), \qquad
# BP = \begin{cases} 1 & c > r \\ e^{1 - r/c} & c \le r \end{cases}$$
#
# $p_n$ 是整个语料上的 $n$-gram 精确率，每个 $n$-gram 最多只按它在参考译文里出现的次数计
# （即“截断”）；$c$ 和 $r$ 分别是译文和参考译文的长度。**练习** 按空格切词。
# %% [exercise bleu]
def bleu(hyps, refs):
    """Corpus BLEU in 0..100 of lists of strings."""
    raise NotImplementedError


check("bleu", bleu)
# %% [markdown en]
# The shipped model's example sentences, scored with sacreBLEU and its Chinese tokenizer, as
# `aiayn evaluate` scores the test split (these three are far too few to mean anything).
# %% [markdown zh]
# 用 sacreBLEU 及其中文分词器给自带模型的示例句子打分，和 `aiayn evaluate` 给测试集打分的方式
# 相同（只有三句，分数本身说明不了什么）。
# %%
pairs = examples("en-zh")
sources = [p["source"] for p in pairs]
refs = [p["reference"] for p in pairs]
for name, translator in (("greedy", greedy), ("beam 4", beam4)):
    hyps = [n_best[0][0] for n_best in translator.translate(sources)]
    score, signature = sacre_bleu(hyps, refs, lang="zh")
    print(f"{name:7s} {hyps}  BLEU {score:.1f}")
print(signature)
