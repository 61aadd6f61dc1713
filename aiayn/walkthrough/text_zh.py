"""The walkthrough's prose in Chinese, the note's language (``--lang zh``).

The keys and placeholders are those of ``text_en`` (a ``.cols`` key: a table's header, its
cells separated by " | "); the terms are the note's own.
"""

TEXT: dict[str, str] = {
    "doc.title": "Transformer 逐步演算：按笔记走一遍",
    "layer": "（第 {l} 层，共 {n} 层）",
    # 例子
    "intro.title": "笔记里的例子",
    "intro.text": (
        "这份演算按照学习笔记《Transformer 精简笔记》的顺序和符号，把它的小例子从头到尾算一遍。每"
        "一步都自己证明自己：用纯 NumPy 根据模型自己的参数和上一步的结果，把这一步的公式再手算一"
        "遍，再和 PyTorch 模型实际算出的中间结果（aiayn.trace）逐项比较。只要有一处对不上，演算就"
        "报错停止；下面每一行 ✓ 就是一次这样的比较，后面写着找到的最大差值。"
    ),
    "intro.settings": (
        "这里展示的模型：按下列设置随机初始化的 aiayn Transformer，不是训练好的翻译模型（训练好的或"
        "导入的模型，例如经 aiayn import-hf 转换的 OPUS-MT，可在 aiayn explore 中打开）。"
        "设置：d_model = {d}，h = {h} 个头，d_k = d_v = d_model / h = {dk}，d_ff = {dff}，编码器"
        "和解码器各 N = {n} 层，随机种子 {seed}，float64。Dropout 关闭：这是一次确定的前向计算（"
        "训练时 dropout 作用在哪里，见第 3 步和最后一节）。矩阵保留 {dec} 位小数。和笔记、论文一"
        "样，向量都是行向量（写作 X W，而不是 W x）。"
    ),
    "intro.pair": (
        "源句“{src}”：编码器读入 {enc}（n = {n} 个 token，以 </s> 结尾）。目标句“{tgt}”：解码器读"
        "入右移一位的 {dec}，并在每个位置预测下一个词：{out}。"
    ),
    "intro.vocab": (
        "词表就是笔记里的“8 个词”（用默认句子时）：<s>、</s> 加上两句话里出现的所有词，|V| = {v}"
        "。只有一对句子，用不着填充，所以没有单独的 <pad>；模型的 pad_id 用的是 {pad} 的编号，它"
        "既不出现在源句里，也不在要预测的词里，因此不会因为它屏蔽或跳过任何东西。"
    ),
    "intro.cols": "编号 | 词",
    "intro.rows": (
        "E 的每一行是一个词的 d_model 个数（训练开始前是随机的）。它被用了三次（3.4 节）：源句的"
        "词、目标句的词（两者都乘以 √d_model = {sqrtd}），以及转置后作为第 13 步的输出层。"
    ),
    # 第 1-14 步
    "s1.title": "第 1 步　Encoder：Input Embedding 和位置编码",
    "s1.text": (
        "E_src 是源句 {n} 个 token 在 E 中对应的行。论文把它们乘以 √d_model = {sqrtd}（3.4 节），"
        "再加上位置编码 PE，PE 的每个数都在 −1 和 1 之间：没有 PE，模型就分不出“I love you”和“you"
        " love I”。笔记说“等会儿再来解释”的那部分，在后面的“位置编码：补上笔记欠的解释”一节。这里"
        "的 PE 按公式直接算出，再和模型里的和比较。"
    ),
    "s2.title": "第 2 步　Encoder：Multi-Head Self-Attention",
    "s2.text": (
        "每个头 i 用自己的 W_Qi、W_Ki、W_Vi（d_model × d_k）对每个 token 的行向量内部做线性组合，"
        "这时 token 之间还不杂交。然后 S_i = Q_i K_iᵀ / √d_k 给每个查询行和每个键行的匹配程度打分"
        "，softmax 把每一行分数变成和为 1 的权重，O_i = A_i V_i 让每个 token 得到值向量的加权平均"
        "：token 之间正是在这里交换信息。模型把所有头的 W^Q 存在一个 d_model × h·d_k 的矩阵里，第"
        " i 个头是其中第 i·d_k 到 (i+1)·d_k − 1 列（W^K、W^V 同理）。"
    ),
    "head": "第 {i} 个头（W^Q、W^K、W^V 的第 {lo}…{hi} 列）：",
    "sep": "、",  # between the items of a list (heads 1, 2)
    "heads.hidden": (
        "第 {heads} 个头：没有显示（用 --heads 选择），但同样逐项证明过（另有 {n} 项检查，计入小"
        "结）。"
    ),
    "concat": "把各个头的输出并排拼起来，再乘以 W^O：",
    "s3.title": "第 3 步　Encoder：Add & Norm",
    "s3.text": (
        "R_E = X_E + M_E 就是残差：图中从 attention 前面跳过来的那条箭头。这次计算里 dropout 是关"
        "闭的；训练时论文会在相加之前把 M_E 中 10% 的元素置零（其余乘以 1/0.9）。然后 LayerNorm "
        "对每一行（每个 token）单独处理：减去这一行的均值 μ，除以 √(σ² + ε)（σ² 是这一行的方差，ε"
        " = {eps}），再用 γ 缩放、用 β 平移。行与行之间互不干扰。"
    ),
    "s4.title": "第 4 步　Encoder：Feed Forward",
    "ffn.text": (
        "同一个两层网络分别作用在每一行上（“逐位置”，3.3 节）：d_model = {d} → d_ff = {dff} → d_m"
        "odel。ReLU 把负数变成 0（这里 {nh} 个隐藏单元中有 {z} 个）。"
    ),
    "s5.title": "第 5 步　Encoder：第二个 Add & Norm",
    "s5.text": (
        "Z_E 的每一行是编码器对一个源 token 的最终理解（这里是第 {l} 层，共 {n} 层；论文叠了 N = "
        "6 层，每一层都从上一层的 Z_E 开始）。最后一层的 Z_E 就是第 9 步里每个解码器层的交叉注意"
        "力要读的“记忆”。"
    ),
    "s6.title": "第 6 步　Decoder：Output Embedding 和位置编码",
    "s6.text": (
        "和第 1 步一样，只是换成解码器的输入：目标句右移一位（3.2.3 节），于是位置 t 上放的是它要"
        "预测的那个词的前一个词。用的是同一个 E（共享，3.4 节）和同一组位置 0 … {n}−1 的 PE。"
    ),
    "s7.title": "第 7 步　Decoder：Masked Multi-Head Self-Attention",
    "s7.text": (
        "和第 2 步一样，但解码器训练时一次看到整句目标，所以位置 t 不能看它后面的位置，那里放着它"
        "正要学着预测的词。Mask 矩阵 M 在对角线以上加 −∞；softmax 之后 e^(−∞) = 0，这些权重恰好为"
        " 0，每一行的和仍然是 1。"
    ),
    "s8.title": "第 8 步　Decoder：Add & Norm",
    "s9.title": "第 9 步　Encoder-Decoder Cross-Attention",
    "s9.text": (
        "Q 来自解码器（H_D，即笔记里的 X_D′：第 8 步之后的解码器表示），K、V 来自编码器的输出 Z_E"
        "。每个目标位置都可以看所有源词，所以这里没有因果 mask（只有源句里的填充才需要屏蔽，这里"
        "没有）。每个 A_i 是一张 n_D × n_E 的图：第 t 行表示位置 t 在读哪些源词。论文里 N 个解码"
        "器层读的都是同一个、最后的 Z_E。"
    ),
    "s10.title": "第 10 步　Decoder：Add & Norm",
    "s10.text": "笔记把这个结果又叫作 H_D；这里记作 H_D^(2)，以便和第 8 步的区分。",
    "s11.title": "第 11 步　Decoder：Feed Forward",
    "s12.title": "第 12 步　Decoder：再来一个 Add & Norm",
    "s12.text": (
        "Z_D 每一行对应一个输出位置（第 {l} 层，共 {n} 层）。按论文的 N = 6，这应是第六个解码器层"
        "的输出；后面不再接额外的 LayerNorm（post-LN，3.1 节）。"
    ),
    "s13.title": "第 13 步　Linear：从 d_model 维变成每个词一个分数",
    "s13.text": (
        "输出层复用 E，不乘缩放因子（3.4 节）：在 L = Z_D Eᵀ 里，位置 t 上词 v 的分数就是 Z_D 第 "
        "t 行和 v 的词向量的点积。{d} 个数变成 |V| = {v} 个分数，词表里每个词占一列。"
    ),
    "s14.title": "第 14 步　Softmax",
    "s14.text": (
        "每一行变成词表上的一个概率分布，输出的每个位置就能选词了。模型还没有训练，所以它的选择是"
        "随意的，每一行都接近均匀分布（1/|V| = {u}）。"
    ),
    "s14.cols": "t | 输入 | 概率最大的词 | 它的概率 | 正确的下一个词",
    # 笔记与论文
    "scale.title": "笔记与论文：除以 √d_k，不是 √d_model",
    "scale.text": (
        "笔记第 2 步把分数除以 √d_model = √{d} = {sd}；论文（公式 1，以及笔记自己的第 7 步）除以 "
        "√d_k = √{dk} = {sdk}。在这里，这会让每个分数缩小 {r} 倍（即 √h，h = {h}），softmax 也更"
        "平：每一行都向均匀分布靠拢，而均匀分布的熵是 ln {n} = {u}。下表对每个头给出各行最大权重"
        "的平均值和各行熵的平均值（单位：nat）。"
    ),
    "scale.cols": "头 | 最大权重（√d_k） | 最大权重（√d_model） | 熵（√d_k） | 熵（√d_model）",
    "scale.why": (
        "为什么是 √d_k：如果 q 和 k 的各分量独立、均值为 0、方差为 1，那么 q·k 是 d_k 项之和，方"
        "差为 d_k；除以 √d_k 后方差回到 1，与头的大小无关（3.2.1 节，脚注 4）。分数太大，softmax "
        "会进入梯度极小的区域；除得太多（√d_model），每个头都几乎均匀地分配注意力，h 越大越明显（"
        "base 模型里会小 √8 ≈ 2.83 倍）。"
    ),
    "wo.title": "笔记与论文：输出投影 W^O",
    "wo.text": (
        "笔记把各个头“直接拼起来”。论文还要把拼接结果乘以 W^O ∈ ℝ^(h·d_v × d_model)（3.2.2 节），"
        "每个注意力层因此多出 d_model · h·d_v = {p} 个参数。由于 h·d_v = d_model，两种写法的形状"
        "都对，所以漏掉 W^O 很难察觉。没有它，输出的第 j 列只能来自某一个头（d_v = {dv} 列里含 j "
        "的那个头），每个头永远只能写进残差流里固定的几个特征；有了 W^O，每个输出特征都能综合所有"
        "的头。下面是两种写法下第 3 步的残差相加各自得到的结果："
    ),
    "ln.title": "笔记与论文：可训练的是 γ 和 β，ε 不是",
    "ln.text": (
        "笔记说 γ 和 ε 是可训练参数。实际上可训练的是 γ（缩放）和 β（平移），两个都是 d_model = {"
        "d} 维的向量；ε = {eps} 是一个固定的常数，只是在某一行几乎不变时保证除法安全。它在这里几"
        "乎没有影响：把 ε 换成 0 计算这个 LayerNorm，结果最多相差 {dd}。下面的反向传播里 γ 和 β "
        "都会得到梯度。"
    ),
    # 损失
    "loss.title": "计算损失",
    "loss.cross_entropy": "交叉熵",
    "loss.training_loss": "训练时用的损失",
    "loss.text": (
        "在每个位置 t，正确的下一个词 y_t 是已知的（teacher forcing：解码器拿到的是真实的前文），"
        "p(y_t) 是模型给这个词的概率，也就是 P 中这一行、这个词那一列的值。论文训练时并不只用 −lo"
        "g p(y_t)：它做了标签平滑，ε_ls = {eps}（5.4 节），正确的词得到 1 − ε_ls，其余 |V| − 1 个"
        "词平分 ε_ls；这样“会损害困惑度，因为模型学得更不确定，但能提高准确率和 BLEU”。填充位置不"
        "计入：平均只在真实的目标 token 上取（这里 {n} 行都是真实的 token）。"
    ),
    "loss.mean": "平均",
    "loss.cols": (
        "t | 输入 | y_t | p(y_t) | −log p(y_t) | 平滑后的 L_t | argmax | max p | −log max p"
    ),
    "p.title": "笔记与论文：p(y_t) 是正确词的概率",
    "p.text": (
        "笔记把 p(y_t) 理解为这一行里最大的那个概率（表的最后两列）。按这种理解，平均损失会是 {no"
        "te}，而不是 {plain}。在位置 {t}，概率最大的是“{w}”，但要预测的词是“{y}”：不管模型眼下偏"
        "向哪个词，损失都必须去查正确词那一列。"
    ),
    "p.same": (
        "笔记把 p(y_t) 理解为这一行里最大的那个概率（表的最后两列）。在这个例子里，每个位置概率最"
        "大的词恰好都是正确的词，所以两种理解都得到 {note}；一般情况下两者不同。"
    ),
    "p.why": (
        "只有正确词的概率才能说明模型错得有多远。−log max p 只要模型对某个词有把握就会很小，不管"
        "这个词对不对；它的梯度只会把本来就领先的那个词推得更高。"
    ),
    # 反向传播
    "backward.title": "反向传播",
    "backward.text": (
        "一次反向传播算出平均平滑损失对每个参数的梯度。模型里由 PyTorch 的 autograd 完成；NumPy 孪"
        "生实现（aiayn.numpy_twin）则逐个模块手写链式法则（推导见 docs/zh/math.md）。下面每个梯度都"
        "被证明两遍：手写的等于 autograd 的。链条从 logits 开始，那里的梯度就是 (p − q)/n_D，然后经"
        "过输出层和解码器，经由交叉注意力进入编码器，最后到达 E。"
    ),
    "backward.notation": (
        "∂X 表示 ∂L̄/∂X，是和 X 形状相同的矩阵：每个元素增大时损失上升得有多快。下面的参数就是笔"
        "记列出的：Embedding、所有的 W_Q、W_K、W_V（所有头并排，和模型的存法一样）、W^O、FFN 的权"
        "重和偏置，以及每个 LayerNorm 的 γ 和 β。"
    ),
    "grad.embedding": "Embedding",
    "grad.E": (
        "共享的词嵌入矩阵 E（每行一个词）。它的梯度来自三处：输出层（每个词都通过自己的分数得到梯"
        "度）、目标句的查表和源句的查表（× √d_model）。"
    ),
    "grad.encoder": "编码器第 {l} 层",
    "grad.decoder": "解码器第 {l} 层",
    "grad.self_attn": "，自注意力",
    "grad.cross_attn": "，交叉注意力",
    "grad.ffn": "，前馈网络",
    "grad.norm": "，LayerNorm {i}",
    "grad.cols": "位置 | 参数 | 形状 | ‖梯度‖",
    # 优化一步
    "update.title": "优化一步",
    "update.adam": (
        "论文用 Adam 训练（β1 = 0.9，β2 = 0.98，ε = 10⁻⁹），学习率在前 warmup = {warmup} 步线性增"
        "长，之后按 step^(−1/2) 衰减（5.3 节，公式 3）。真实训练的第一步用的是 lrate(1) = {lr1}，"
        "小到一步之内什么也看不出来；{which}：lr = {lr}。第一步时 Adam 的偏差修正使 m̂ = g、v̂ = "
        "g²，所以每个梯度不为零的参数都沿梯度符号的反方向移动几乎正好 lr，不管梯度有多小。"
    ),
    "update.sgd": (
        "为了看得清楚，这里用最普通的梯度下降（论文用的是 Adam；去掉 --optimizer sgd 即可看到）："
        "每个参数沿梯度反方向移动，步长 lr = {lr}（{which}）。"
    ),
    "update.lr_given": "这里用的是 --lr 给定的学习率",
    "update.lr_step": "这里用公式 3 在第 {step} 步的值（峰值在 step = warmup）",
    "update.cols": "t | y_t | 更新前 p(y_t) | 更新后 p(y_t)",
    "update.result": (
        "平滑损失从 {before} 降到 {after}（普通的 −log p(y_t) 平均值从 {pb} 变为 {pa}）。上面的 Δ"
        "E 是共享词嵌入矩阵的变化。"
    ),
    # 位置编码
    "pos.title": "位置编码：补上笔记欠的解释",
    "pos.order": (
        "为什么需要位置：注意力把输入当作一个集合。没有 PE 时，打乱源句的词只会同样地打乱编码器输"
        "出的行，别的什么都不变（下面在这个模型的编码器层上验证，把词循环移动一位）。加上 PE 之后"
        "，同样的打乱会改变输出（这里最多变化 {moved}）：顺序变得可见了。"
    ),
    "pos.cols": "i | 维度 | ω_i | 波长 λ_i | λ_i / 2π",
    "pos.wavelengths": (
        "每一对维度 (2i, 2i+1) 以自己的频率 ω_i 旋转。波长构成一个几何级数：从 2π（第 0 对：每 6."
        "28 个位置转一圈）到 10000·2π，后者是 2i/d_model 趋近 1 时的极限：d_model = {d} 时最慢的"
        "一对是 λ = {last}·2π，d_model = 512 时约为 {l512}·2π。快的维度区分相邻的位置；慢的维度在"
        "一句话里几乎不变，用来区分句首和句尾，就像钟表的时针和秒针。"
    ),
    "pos.fig": "d_model = {d} 的 PE：从左到右是位置，从上到下是维度；红色为正，蓝色为负。",
    "pos.why": (
        "为什么要 sin 和 cos 成对：(sin ω_i·pos, cos ω_i·pos) 是单位圆上角度为 ω_i·pos 的一个点。"
        "再往后走 k 个位置，这个点就转过角度 ω_i·k，与 pos 无关。旋转是线性变换，所以 PE(pos + k)"
        " = R_k PE(pos)，其中 R_k 是分块对角矩阵，每一对维度一个 2×2 旋转，只依赖 k。只用 sin 就"
        "不行：sin(ω(pos + k)) 不能由 sin(ω·pos) 单独决定，还需要 cos。这正是论文的理由（3.5 节）"
        "：“对任意固定的偏移 k，PE_pos+k 都可以表示为 PE_pos 的线性函数”，这应当让模型容易按相对"
        "位置分配注意力。"
    ),
    "pos.rotation": "这个 d_model 下的 R_1，以及把 PE(2) 旋转一步得到的 PE(3)：",
    "pos.consequences": (
        "由此得到两个结论，都在模型自己的位置表上验证：每个 PE(pos) 的长度相同，‖PE(pos)‖² = {hal"
        "f}（每一对都是单位向量）；点积 PE(p)·PE(p + k) = Σ_i cos(ω_i·k) 只取决于距离 k，与 p 无"
        "关。"
    ),
    "pos.dots.cols": "k | Σ_i cos(ω_i k) | 对 p 的最大偏差",
    # 笔记与论文的差别
    "diff.title": "笔记和论文不一样的地方",
    "diff.intro": (
        "这份笔记是认真的第一遍整理，其中的疏漏也是初学时最常见的。本项目实现的是论文；笔记说法不"
        "同的地方，这里给出论文的版本。第 1 到 4 条已经在对应的步骤旁边用数字展示过。"
    ),
    "diff.cols": "# | 论文",
    "diff.item1": "第 2 步除以 √d_model；论文（以及笔记的第 7 步）除以 √d_k（3.2.1 节）。",
    "diff.item2": "第 2 步把各个头直接拼起来；论文还要乘以 W^O（3.2.2 节）。",
    "diff.item3": "第 3 步：可训练的参数是 γ 和 β；ε 是常数。",
    "diff.item4": (
        "损失：p(y_t) 是正确的下一个词的概率，不是这一行最大的概率；论文还做了标签平滑（ε_ls = 0."
        "1，5.4 节）。"
    ),
    "diff.item5": "笔记只展示了一层；论文的编码器和解码器各叠了 N = 6 个相同结构的层（3.1 节）。",
    "diff.item6": (
        "Dropout（P_drop = 0.1）作用在每个子层的输出上（残差相加之前），以及两个栈里词嵌入加位置"
        "编码的和上（5.4 节），不只是第 3 步。"
    ),
    "diff.item7": (
        "填充 mask、训练的学习率计划（Adam 与 warm-up，5.3 节）和推理（beam search，6.1 节）补全"
        "了论文的流程。"
    ),
    "diff.layers": (
        "N：这份演算用 N = {n}（除非给了 --n-layers，就是笔记里的一层），共 {p} 个参数；同样的小"
        "模型取 N = 6 时有 {p6} 个。每一层有自己的权重，每个解码器层的交叉注意力读的都是编码器最"
        "后的输出。"
    ),
    "diff.dropout": (
        "Dropout：训练时 P_drop = 0.1，在这个模型里会作用于 {here} 处（两处词嵌入之和、每个编码器"
        "层 2 处、每个解码器层 3 处），N = 6 时是 {six} 处。这里把它关掉，是为了让每个数都能复现"
        "。"
    ),
    "diff.padding": (
        "填充：长短不同的句子放进同一个 batch 时，短句要补齐；填充 mask（3.2.3 节）把填充位置从每"
        "个注意力的键里去掉，所以结果与填充无关。验证：在源句后面补两个填充 token（{pad}），得到"
        "的 logits 与单独这一对句子完全相同；keep 行和交叉注意力权重（第 1 个头）里被填充的列都是"
        " 0。"
    ),
    "diff.schedule": (
        "学习率计划（5.3 节，公式 3）：Adam 取 β1 = 0.9、β2 = 0.98、ε = 10⁻⁹，学习率在 4000 步 wa"
        "rm-up 内线性上升，然后按 step^(−1/2) 衰减；这个 d_model 和 base 模型分别是："
    ),
    "diff.beam": (
        "推理（6.1 节）：训练好的模型一次翻译一个 token；论文保留最好的 4 个部分译文（beam search"
        "，beam 大小 4），用长度惩罚 α = 0.6 排序，最长到输入长度 + 50 个 token（见 `aiayn transl"
        "ate`）。"
    ),
    "summary.title": "小结",
    "summary.text": (
        "全部 {n} 项检查通过：笔记的每一步手算结果都等于模型算出的结果；手写的反向传播等于 autogr"
        "ad；优化一步等于 torch.optim。最大的绝对差值是 {diff}（与容差之比最大为 {ratio}）。"
    ),
    # 训练好的模型（--checkpoint）
    "trained.doc.title": "Transformer 逐步演算：在训练好的模型上按笔记走一遍",
    "trained.title": "句子和模型",
    "trained.text": (
        "这份演算按照学习笔记《Transformer 精简笔记》的顺序和符号逐步计算，但用的不是笔记里的小例"
        "子，而是一个训练好的模型翻译一句真实的句子。每一步都自己证明自己：用纯 NumPy 根据模型自己"
        "的参数和上一步的结果，把这一步的公式再手算一遍，再和 PyTorch 模型实际算出的中间结果（aiay"
        "n.trace）逐项比较。只要有一处对不上，演算就报错停止；下面每一行 ✓ 就是一次这样的比较，后"
        "面写着找到的最大差值。"
    ),
    "trained.model": (
        "模型：{path}。d_model = {d}，h = {h} 个头，d_k = d_v = {dk}，d_ff = {dff}，编码器 N = {n}"
        " 层、解码器 {nd} 层，两种语言共用一个 BPE 词表，|V| = {v} 个 token，共 {p} 个参数。权重复"
        "制成 float64，dropout 关闭：这是一次确定的前向计算，每个数都可以核对。"
    ),
    "trained.source": (
        "源句“{src}”：模型自己的分词器把它切成 {n} 个 BPE 片段（▁ 表示片段前面有一个空格），编码"
        "器读入这些片段，最后加上 </s>。它们就是编码器各个矩阵的行："
    ),
    "trained.pieces.cols": "位置 | 片段 | 编号",
    "trained.translation": (
        "模型自己的译文，和 aiayn translate 的找法相同（{search}）：“{tgt}”。这里把它当作目标句：解"
        "码器读入右移一位、以 <s> 开头的译文（用模型自己的输出做 teacher forcing），在每个位置 t "
        "要预测的 y_t 就是译文接下来的那个 token。它们就是解码器各个矩阵的行："
    ),
    "trained.s1.text": (
        "E_src 是源句 {n} 个 token 在 E 中对应的行。论文把它们乘以 √d_model = {sqrtd}（3.4 节），"
        "再加上位置编码 PE，PE 的每个数都在 −1 和 1 之间：没有 PE，模型就分不出“I love you”和“you"
        " love I”。笔记说“等会儿再来解释”的那部分，见小例子的演算（aiayn walkthrough）里“位置编码"
        "：补上笔记欠的解释”一节。这里的 PE 按公式直接算出，再和模型里的和比较。"
    ),
    "trained.ln.text": (
        "笔记说 γ 和 ε 是可训练参数。实际上可训练的是 γ（缩放）和 β（平移），两个都是 d_model = {"
        "d} 维的向量，这个模型的每个 LayerNorm 都有训练得到的一组；ε = {eps} 是一个固定的常数，只"
        "是在某一行几乎不变时保证除法安全。它在这里几乎没有影响：把 ε 换成 0 计算这个 LayerNorm，"
        "结果最多相差 {dd}。"
    ),
    "trained.greedy": "贪心搜索",
    "trained.beam": "beam search，beam 大小 {k}，长度惩罚 α = {alpha}，见 6.1 节",
    "trained.target.cols": "t | 解码器读入 | y_t | y_t 的编号",
    "trained.shown": (
        "显示的内容：每个矩阵只显示前 {rows} 行、前 {cols} 列，其余部分用 … 和 ⋮ 表示（用 --rows、"
        "--cols 调整）；每个注意力只显示第 {heads} 个头（共 {h} 个，和笔记一样从 1 开始编号，用 -"
        "-heads 选择）；词表只显示译文里出现的 token 所在的列，以及每个位置概率最大的 {top} 个 tok"
        "en。每一行 ✓ 比较的仍然是完整的矩阵，所有的头都包括在内。笔记的小例子，连同反向传播、优化"
        "一步和位置编码的解释，请运行不带 --checkpoint 的 aiayn walkthrough。"
    ),
    "s13.columns": (
        "|V| = {v} 列中，下面的 L 和 P 只显示译文里出现的 token 所在的列；检查比较的是全部的列。"
    ),
    "s14.top": (
        "每一行是全部 |V| = {v} 个 token 上的概率分布。下表对每个位置列出译文接下来的那个 token、"
        "它的概率，以及概率最大的 {k} 个 token。贪心搜索每一步都取概率最大的那个；beam search 保"
        "留整句最好的译文，所以在某些位置可能接上别的 token。"
    ),
    "s14.top.cols": "t | 输入 | y_t | p(y_t) | 概率最大的 token 及其概率",
    "trained.summary.text": (
        "全部 {n} 项检查通过：笔记的每一步，用训练好的模型的参数手算，结果都等于模型算出的结果，每"
        "一层、每个头都是如此。最大的绝对差值是 {diff}（与容差之比最大为 {ratio}）。"
    ),
}
