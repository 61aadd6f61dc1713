"""What the checker says, in English and Chinese: its sentences and the known mistakes' names.

Each answer is one or two sentences: what differs (the shape expected, the first entry that
differs, on which input), then, where the checker recognises it, the known mistake by name.
"""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "ok": "✓ {name} is right: it equals aiayn's own on all {n} inputs tried.",
        "todo": "✗ {name} is not written yet: replace `raise NotImplementedError` with {hint}.",
        "not_callable": "✗ {name}: expected your function, got an object of type {got}; pass "
        'the function itself, e.g. check("{name}", {name}).',
        "unknown": "✗ There is no exercise named {name!r}; the exercises are: {names}.",
        "raised": "✗ {name} raised {what}{at} {where}.",
        "at_line": " at line {line} of your code",
        "timeout": "✗ {name} was still running after {limit} s {where}, so it was stopped; "
        "look for a loop that never ends, or compute with whole tensors.",
        "wrong_type_tensor": "✗ {name} returned an object of type {got}; expected a "
        "torch.Tensor of shape {shape}.",
        "wrong_type_number": "✗ {name} returned an object of type {got}; expected a number.",
        "not_tuple": "✗ {name} returned an object of type {got}; expected a tuple of {n} tensors "
        "of shapes "
        "{shapes} {where}.",
        "part": " (value {i} of the tuple)",
        "shape": "✗ {name}{part} has shape {got}, expected {want} {where}.",
        "nan": "✗ {name}{part} has NaN at index {idx} {where}, where aiayn has {want}.",
        "value": "✗ {name}{part}: the entry at {idx} is {got}, expected {want} {where}.",
        "known": "Known mistake: {what}.",
        "note": "on the note's sentence (I love you </s>, d_model = 6, h = 2)",
        "random": "on random inputs ({what})",
        "given": "for {what}",
        "internal": "✗ The checker could not check {name} ({what}); please report it.",
    },
    "zh": {
        "ok": "✓ {name} 写对了：试过的 {n} 组输入上都与 aiayn 自己的实现一致。",
        "todo": "✗ {name} 还没写：把 `raise NotImplementedError` 换成你的代码，算出 {hint}。",
        "not_callable": "✗ {name}：这里要传入你写的函数，收到的却是 {got}；"
        '请传函数本身，例如 check("{name}", {name})。',
        "unknown": "✗ 没有名为 {name!r} 的练习；现有的练习是：{names}。",
        "raised": "✗ {name} {where}抛出了 {what}{at}。",
        "at_line": "（出错位置：你的代码第 {line} 行）",
        "timeout": "✗ {name} {where}运行了 {limit} 秒仍未结束，已被中止；"
        "看看有没有停不下来的循环，或者改用整块张量运算。",
        "wrong_type_tensor": "✗ {name} 返回的是 {got}；应当返回形状为 {shape} 的 torch.Tensor。",
        "wrong_type_number": "✗ {name} 返回的是 {got}；应当返回一个数。",
        "not_tuple": "✗ {name} 返回的是 {got}；{where}应当返回 {n} 个张量组成的元组，"
        "形状依次为 {shapes}。",
        "part": "（元组的第 {i} 个值）",
        "shape": "✗ {name}{part} {where}，输出的形状是 {got}，应为 {want}。",
        "nan": "✗ {name}{part} {where}，下标 {idx} 处出现了 NaN，而 aiayn 在那里算出 {want}。",
        "value": "✗ {name}{part} {where}，下标 {idx} 处的值是 {got}，应为 {want}。",
        "known": "这是常见错误：{what}。",
        "note": "在笔记的例句上（I love you </s>，d_model = 6，h = 2）",
        "random": "在随机输入上（{what}）",
        "given": "当输入为 {what} 时",
        "internal": "✗ 检查器没能检查 {name}（{what}）；请报告这个问题。",
    },
}

# The known mistakes, by key: what the learner did, in a few words, and why it is wrong.
MISTAKES: dict[str, dict[str, str]] = {
    "sqrt_d_model": {
        "en": "dividing by sqrt(d_model) instead of sqrt(d_k) (the slip in the note's step 2); "
        "each head scales by its own d_k = d_model / h",
        "zh": "除以了 sqrt(d_model) 而不是 sqrt(d_k)（笔记第 2 步的笔误）；"
        "每个头按自己的 d_k = d_model / h 缩放",
    },
    "no_scale": {
        "en": "the scores are not divided by sqrt(d_k)",
        "zh": "分数没有除以 sqrt(d_k)",
    },
    "scale_d_k": {
        "en": "dividing by d_k instead of sqrt(d_k)",
        "zh": "除以了 d_k，而不是 sqrt(d_k)",
    },
    "mask_after_softmax": {
        "en": "the mask is applied after the softmax, so the kept weights of a row no longer "
        "sum to 1; set the masked scores to -inf before the softmax",
        "zh": "在 softmax 之后才加掩码，每行剩下的权重加起来不再是 1；"
        "应当在 softmax 之前把被遮住的分数设为 -inf",
    },
    "mask_inverted": {
        "en": 'the mask is inverted: True means "may attend", so hide where it is False',
        "zh": "掩码用反了：True 表示“可以看”，要遮住的是 False 的位置",
    },
    "softmax_axis": {
        "en": "the softmax runs over the wrong axis (each column instead of each row, dim=-1)",
        "zh": "softmax 沿错了维度（按列而不是按行，应为 dim=-1）",
    },
    "softmax_overflow": {
        "en": "exp overflows on large scores; subtract each row's maximum before exp",
        "zh": "分数较大时 exp 溢出了；先让每行减去该行的最大值再取 exp",
    },
    "no_transpose": {
        "en": "reshaped straight to (B, H, L, d_k) without the transpose, which mixes tokens "
        "between heads; view as (B, L, H, d_k), then transpose(1, 2)",
        "zh": "直接 reshape 成 (B, H, L, d_k) 而没有转置，把不同 token 的数混进了同一个头；"
        "应先 view 成 (B, L, H, d_k)，再 transpose(1, 2)",
    },
    "no_w_o": {
        "en": "the heads are concatenated but not multiplied by W^O (the note's step 2 stops at "
        "Concat; the paper goes on: Concat(head_1..head_h) W^O)",
        "zh": "拼接各头之后没有乘 W^O（笔记第 2 步停在了 Concat；"
        "论文还要再乘一次：Concat(head_1..head_h) W^O）",
    },
    "one_head": {
        "en": "the heads are not split: one attention over all d_model columns",
        "zh": "没有分头：在全部 d_model 列上只做了一次注意力",
    },
    "pe_swapped": {
        "en": "sin and cos are swapped: even dimensions 2i take sin, odd ones 2i+1 take cos",
        "zh": "sin 和 cos 放反了：偶数维 2i 用 sin，奇数维 2i+1 用 cos",
    },
    "pe_not_interleaved": {
        "en": "sin and cos are not interleaved: [sin | cos] side by side is tensor2tensor's "
        "layout; the paper puts sin in the even and cos in the odd dimensions",
        "zh": "sin 和 cos 没有交错排列：左半 sin、右半 cos 是 tensor2tensor 的排法；"
        "论文是偶数维放 sin、奇数维放 cos",
    },
    "pe_exponent_i": {
        "en": "the exponent uses i instead of 2i: the frequency of pair i is "
        "1 / 10000^(2i/d_model)",
        "zh": "指数里用了 i 而不是 2i：第 i 对的频率是 1 / 10000^(2i/d_model)",
    },
    "not_scaled": {
        "en": "the embeddings are not multiplied by sqrt(d_model) (3.4) before the positions "
        "are added",
        "zh": "词向量在加位置编码之前没有乘 sqrt(d_model)（论文 3.4 节）",
    },
    "no_positions": {
        "en": "the positional encoding is not added",
        "zh": "没有加上位置编码",
    },
    "rotation_backwards": {
        "en": "the rotation turns the wrong way (that is R_{-k}, the transpose); check the sign "
        "of the sin terms against sin(a + b) = sin a cos b + cos a sin b",
        "zh": "旋转方向反了（这是 R_{-k}，即转置）；"
        "对照 sin(a + b) = sin a cos b + cos a sin b 检查 sin 项的符号",
    },
    "layernorm_axis": {
        "en": "LayerNorm normalises over the wrong axis: each token's row over its d_model "
        "features (dim=-1), not each feature over the tokens",
        "zh": "LayerNorm 沿错了维度：应对每个 token 的那一行、在 d_model 个特征上归一化"
        "（dim=-1），而不是对每个特征跨 token 归一化",
    },
    "unbiased_var": {
        "en": "the variance is the unbiased one (divided by d_model - 1, torch.var's default); "
        "LayerNorm divides by d_model (unbiased=False)",
        "zh": "用了无偏方差（除以 d_model - 1，这是 torch.var 的默认值）；"
        "LayerNorm 除以 d_model（unbiased=False）",
    },
    "eps_outside": {
        "en": "eps is added outside the square root; it goes inside: sqrt(sigma^2 + eps)",
        "zh": "eps 加在了根号外面；应在根号里面：sqrt(sigma^2 + eps)",
    },
    "no_relu": {
        "en": "the ReLU is missing: FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
        "zh": "漏了 ReLU：FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
    },
    "relu_outside": {
        "en": "a ReLU is applied to the output too; only the hidden layer has one",
        "zh": "输出上也套了 ReLU；只有隐藏层才有",
    },
    "pre_ln": {
        "en": "this is pre-LN, x + Sublayer(LayerNorm(x)) or x + LayerNorm(...); the paper is "
        "post-LN: LayerNorm(x + Sublayer(x))",
        "zh": "这是 pre-LN 的写法（先归一化再相加）；论文是 post-LN：LayerNorm(x + Sublayer(x))",
    },
    "no_residual": {
        "en": "the residual is missing: LayerNorm(x + Sublayer(x)) adds the input back",
        "zh": "漏了残差：LayerNorm(x + Sublayer(x)) 要把输入加回来",
    },
    "causal_hides_diagonal": {
        "en": "the causal mask hides the diagonal too; position i may attend to itself "
        "(j <= i), only the future j > i is hidden",
        "zh": "因果掩码把对角线也遮住了；位置 i 可以看自己（j <= i），只遮住未来 j > i",
    },
    "causal_upside_down": {
        "en": "the mask is upside down: True must stand on and below the diagonal "
        "(may attend), the future above it is hidden",
        "zh": "掩码上下颠倒了：对角线及其下方为 True（可以看），上方的未来位置才遮住",
    },
    "padding_inverted": {
        "en": "the padding mask is inverted: True on the real tokens, False on padding",
        "zh": "填充掩码反了：真实 token 处为 True，填充处为 False",
    },
    "padding_shape": {
        "en": "the mask has shape (B, L); give it shape (B, 1, 1, L) so that it broadcasts over "
        "heads and queries",
        "zh": "掩码形状是 (B, L)；要写成 (B, 1, 1, L)，才能在头和查询两个维度上广播",
    },
    "cross_swapped": {
        "en": "queries and keys are swapped: Q comes from the decoder, K and V from the "
        "encoder's output Z_E",
        "zh": "Q 和 K、V 的来源弄反了：Q 来自解码器，K 和 V 来自编码器的输出 Z_E",
    },
    "cross_causal": {
        "en": "a causal mask on the cross-attention; every decoder position may read the "
        "whole source, so only padding is masked there",
        "zh": "交叉注意力上加了因果掩码；解码器的每个位置都能看整句源语言，这里只遮填充",
    },
    "logits_scaled": {
        "en": "the output layer multiplies by sqrt(d_model) too; only the embeddings are "
        "scaled, the logits are Z_D E^T",
        "zh": "输出层也乘了 sqrt(d_model)；只有词嵌入要缩放，logits 就是 Z_D E^T",
    },
    "logits_softmax": {
        "en": "this is the softmax of the logits (step 14); the logits L = Z_D E^T come before it",
        "zh": "这是 logits 的 softmax（第 14 步）；logits L = Z_D E^T 在它之前",
    },
    "smoothing_on_padding": {
        "en": "smoothing mass is put on padding: the rows whose target is <pad> must not count, "
        "neither their NLL nor their smoothing term",
        "zh": "把平滑的概率质量放到了填充位置上：目标为 <pad> 的行不计入损失，"
        "负对数似然和平滑项都不算",
    },
    "eps_over_v": {
        "en": "eps is spread over all V tokens (another convention); here q puts 1 - eps on "
        "y_t and eps / (V - 1) on each other token",
        "zh": "把 eps 平摊到了全部 V 个词上（另一种约定）；这里 q 在 y_t 上放 1 - eps，"
        "其余每个词放 eps / (V - 1)",
    },
    "argmax_not_target": {
        "en": "p(y_t) is the largest probability of the row (the note's slip); it is the "
        "probability given to the correct token y_t",
        "zh": "把 p(y_t) 取成了这一行最大的概率（笔记里的笔误）；它应是正确词 y_t 的概率",
    },
    "grad_sign": {
        "en": "the sign is flipped: dL/dlogits = p - q, not q - p",
        "zh": "符号反了：dL/dlogits = p - q，而不是 q - p",
    },
    "grad_not_mean": {
        "en": "not divided by the number of counted tokens n: the loss is a mean",
        "zh": "没有除以计入的 token 数 n：损失是平均值",
    },
    "grad_one_hot": {
        "en": "q is the one-hot target; with label smoothing it is 1 - eps on y_t and "
        "eps / (V - 1) elsewhere",
        "zh": "q 用成了 one-hot；加了标签平滑之后，q 在 y_t 上是 1 - eps，其余是 eps / (V - 1)",
    },
    "jacobian_diagonal": {
        "en": "only the diagonal of the softmax's Jacobian is used (dA * A * (1 - A)); every "
        "weight of a row depends on every score: dS = A * (dA - sum(dA * A))",
        "zh": "只用了 softmax 雅可比矩阵的对角线（dA * A * (1 - A)）；一行里每个权重都依赖"
        "每个分数：dS = A * (dA - sum(dA * A))",
    },
    "lr_no_d_model": {
        "en": "the factor d_model^-0.5 of Eq. (3) is missing",
        "zh": "漏了式 (3) 里的 d_model^-0.5 因子",
    },
    "lr_max": {
        "en": "max instead of min in Eq. (3): the rate is the smaller of the warm-up ramp "
        "and the decay",
        "zh": "式 (3) 里用了 max 而不是 min：学习率取预热直线与衰减曲线中较小的那个",
    },
    "not_shifted": {
        "en": "the decoder input is not shifted right: it starts with <s> and drops the last "
        "token, so position t sees only y_1..y_{t-1}",
        "zh": "解码器输入没有右移：应以 <s> 开头、去掉最后一个词，使位置 t 只看到 y_1..y_{t-1}",
    },
    "eos_in_input": {
        "en": "</s> is left in the decoder input where the target has padding; the input is "
        "<s> y_1 .. y_n, padded like the target",
        "zh": "目标是填充的位置上，解码器输入里留下了 </s>；输入是 <s> y_1 .. y_n，和目标一样补齐",
    },
    "lp_fairseq": {
        "en": "this is |Y|^alpha (fairseq's penalty); the paper's, from GNMT, is "
        "((5 + |Y|) / 6)^alpha",
        "zh": "这是 |Y|^alpha（fairseq 的惩罚）；论文沿用 GNMT 的 ((5 + |Y|) / 6)^alpha",
    },
    "lp_on_unfinished": {
        "en": "the length penalty is applied to unfinished hypotheses; a live hypothesis "
        "carries its plain log-probability to the next step, only one that ends with </s> "
        "is scored logprob / lp(|Y|)",
        "zh": "对还没结束的假设也用了长度惩罚；存活的假设带着原始的对数概率进入下一步，"
        "只有以 </s> 结束的假设才打分为 logprob / lp(|Y|)",
    },
    "beam_step_only": {
        "en": "candidates are ranked by this step's log-probability alone; add the "
        "hypothesis' log-probability so far",
        "zh": "只按这一步的对数概率给候选排序；要加上该假设此前累积的对数概率",
    },
    "bleu_unclipped": {
        "en": "the n-gram counts are not clipped by the reference's counts",
        "zh": "n-gram 的匹配数没有按参考译文里的次数截断",
    },
    "bleu_no_bp": {
        "en": "the brevity penalty is missing: exp(1 - r / c) when the output is shorter",
        "zh": "漏了简短惩罚：译文比参考短时要乘 exp(1 - r / c)",
    },
    "ppl_of_sum": {
        "en": "exp of the summed NLL; perplexity is exp of the mean NLL per token",
        "zh": "对 NLL 的总和取了 exp；困惑度是每个 token 平均 NLL 的 exp",
    },
    "ppl_base_2": {
        "en": "2 to the power of the NLL; aiayn's NLL is in nats, so perplexity is exp",
        "zh": "用了 2 的幂；aiayn 的 NLL 以 nat 为单位，困惑度用 exp",
    },
    "ablate_columns": {
        "en": "columns of W^O are zeroed; head i owns rows i d_k .. (i + 1) d_k - 1 of W^O",
        "zh": "清零的是 W^O 的列；第 i 个头对应 W^O 的第 i d_k 到 (i + 1) d_k - 1 行",
    },
}


def say(lang: str, key: str, **values: object) -> str:
    """The text KEY in LANG ("en" or "zh"), a known mistake's name included, filled in."""
    if key in MISTAKES:
        return MISTAKES[key][lang]
    return TEXTS[lang][key].format(**values)
