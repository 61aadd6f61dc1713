// aiayn explore: the page. Plain JavaScript, Canvas and SVG; no library, no network beyond
// this server. Every number drawn comes from the JSON API (/api/translate), which takes it
// from the library (aiayn.trace, the beam search's own record): the page computes nothing
// but colours, q.k = score * divisor for the tooltip of Eq. (1), and the experiments' summary
// of the weights (their mean entropy, to show how sharp the attention is).
"use strict";

const I18N = {
  en: {
    title: "aiayn explore", colon: ": ", semicolon: "; ", gap: " ",
    subtitle: "the Transformer on your own sentence, step by step",
    input: "Input", examples: "Its test sentences", source: "Source sentence",
    reference: "Reference translation (optional)", beam: "Beam size", alpha: "Length penalty α",
    translate: "Translate", busy: "working…", translation: "Translation",
    "need-text": "Type a sentence to translate first.",
    "ref-input": "Section 6.1 · X: (S,) source ids, S = source length with </s>",
    "card-model": "Model", "card-data": "Data", "card-training": "Training",
    "card-valid": "Validation", "card-arch": "Architecture",
    "kind-trained": "trained with aiayn", "kind-imported": "imported (aiayn import-hf)",
    "kind-shipped": "shipped with aiayn",
    steps: "{n} steps", averaged: "the average of {n} checkpoints",
    "steps-unknown": "steps not recorded", "not-trained-here": "not trained here:",
    "valid-ppl": "perplexity {ppl} at step {step}", "valid-none": "none recorded",
    "corpus-unknown": "not recorded", "try-own": "Try its own test sentences first: a model " +
      "translates best what resembles its training data.",
    "examples-shipped": "Example sentences",
    "try-shipped": "Start with its example sentences, then type your own: a model translates " +
      "best what resembles its training data.",
    "empty-first": "The model produced an empty translation: the beam search's best hypothesis " +
      "is </s> alone, the end of the sentence at once (p = {p}).",
    "empty-thin": "Every word is still unlikely to it, so stopping at once scores better than any " +
      "sentence.",
    "empty-spaces": "The model produced an empty translation: what it wrote decodes to nothing " +
      "but spaces.",
    "empty-steps": "After {n} training steps it has not learned to write yet: train longer.",
    "empty-steps-ppl": "After {n} training steps (valid perplexity {ppl}) it has not learned to " +
      "write yet: train longer.",
    "empty-unknown": "A trained model seldom does this: try one of its own test sentences, in the " +
      "language it translates from.",
    "empty-experiment": "The experiment did this (heads switched off or the erratum): compare with " +
      "the translation without it, below.",
    "empty-history": "(empty: it has not learned to write yet at this checkpoint)",
    tokens: "Tokens and embeddings",
    "ref-tokens": "Sections 3.4, 3.5 · X_E, PE: (S, D)",
    "source-pieces": "Source: BPE pieces and ids", "output-pieces": "Output: BPE pieces and ids",
    "x-e": "X_E = √d_model · E[ids] + PE", pe: "PE (sinusoids)",
    attention: "Attention, every layer and head",
    "ref-attention": "Section 3.2.1, Eq. (1); Section 3.2.3 masks · weights: (H, Lq, Lk)",
    "attention-help": "Hover a cell for Eq. (1) with its numbers; click a map to enlarge it.",
    encoder: "Encoder self-attention (S × S)",
    decoder_self: "Decoder masked self-attention (T × T; the masked upper triangle is hatched)",
    decoder_cross: "Encoder-decoder attention (T × S)",
    "encoder-short": "Encoder self-attention", "decoder_self-short": "Decoder self-attention",
    "decoder_cross-short": "Encoder-decoder attention",
    "layer-n": "layer {n}", "head-n": "head {n}", mean: "mean of heads",
    query: "query {n}", key: "key {n}", "softmax-weight": "softmax weight",
    output: "Output distribution", "ref-output": "Sections 3.4, 5.4 · P: (T, V)",
    position: "t", chosen: "chosen y_t", "p-chosen": "p(y_t)", top: "top tokens",
    "ref-token": "reference y_t", "p-ref": "p(y_t)", nll: "−log p(y_t)",
    "loss-sum": "loss (sum over the reference)", "loss-mean": "per token",
    "beam-title": "Beam search, step by step", "ref-beam": "Section 6.1 · K hypotheses a step",
    "step-n": "step {n}", "max-len": "max |Y|",
    hypothesis: "hypothesis", logprob: "log P(Y|X)", len: "|Y|", lp: "lp(Y)",
    score: "score", status: "status", live: "live", finished: "finished",
    "no slot": "pruned (no slot)", stopped: "stopped by the bound",
    extends: "extends", dropped: "pruned lines (no extension kept)",
    "finished-so-far": "finished so far, best score first",
    "bound-text": "bound = best live log P / lp(max |Y|)",
    threshold: "n-best finished score", "stop-yes": "→ no live hypothesis can win: stop",
    "stop-no": "→ go on", "stop-end": "→ no live hypothesis left: the search ends",
    history: "Training history", "ref-history": "Sections 3.2.1, 5.2 · one head, (Lq, Lk), " +
      "checkpoint by checkpoint",
    "history-none": "This model has no run with several checkpoints beside it.",
    checkpoint: "checkpoint", "history-head": "head shown",
    experiments: "Experiments", "off-default": "off by default", "instead-of": "instead of",
    "ref-experiments": "Section 3.2.2 · O_i: (Lq, d_v)",
    "ref-erratum": "Section 3.2.1, Eq. (1) · scores: (H, Lq, Lk)",
    "exp-enable": "Enable experiments",
    "exp-heads": "Switch heads off (their O_i set to zero before W^O):",
    erratum: "The note's erratum: scores divided by √d_model instead of √d_k (Section 3.2.1)",
    "exp-run": "Run the experiment", "exp-baseline": "without the experiment",
    "exp-with": "with the experiment", "exp-active": "Experiment active: the views above show it.",
    entropy: "mean attention entropy (nats; lower is sharper)",
    masked: "masked (−∞)", "mask-ok": "0 (may attend)",
    "lang-en": "English", "lang-de": "German", "lang-zh": "Chinese", "lang-fr": "French",
    "lang-ja": "Japanese", "lang-ko": "Korean", "lang-es": "Spanish", "lang-ru": "Russian",
    "lang-it": "Italian", "lang-pt": "Portuguese", "lang-nl": "Dutch",
  },
  zh: {
    title: "aiayn 模型探索", colon: "：", semicolon: "；", gap: "",
    subtitle: "输入你自己的句子，一步步看 Transformer 怎样翻译",
    input: "输入", examples: "测试集例句", source: "原文",
    reference: "参考译文（可选）", beam: "束宽", alpha: "长度惩罚 α",
    translate: "翻译", busy: "计算中…", translation: "译文",
    "need-text": "请先输入要翻译的句子。", refused: "服务器拒绝了这个请求（原文如下）：",
    "ref-input": "第 6.1 节 · X：(S,)，原文的词元编号；S 为原文长度（含 </s>）",
    "card-model": "模型", "card-data": "数据", "card-training": "训练",
    "card-valid": "验证集", "card-arch": "结构",
    "kind-trained": "用 aiayn 训练", "kind-imported": "外部导入（aiayn import-hf）",
    "kind-shipped": "aiayn 自带",
    steps: "{n} 步", averaged: "{n} 个检查点的平均",
    "steps-unknown": "训练步数未记录", "not-trained-here": "不是用 aiayn 训练的：",
    "valid-ppl": "第 {step} 步的困惑度 {ppl}", "valid-none": "没有记录",
    "corpus-unknown": "没有记录", "try-own": "建议先试测试集里的句子：和训练数据越像的句子，" +
      "模型翻得越好。",
    "examples-shipped": "示例句子",
    "try-shipped": "先试试示例句子，再输入你自己的句子：和训练数据越像的句子，模型翻得越好。",
    "empty-first": "模型给出的译文是空的：束搜索得分最高的假设只有一个句末符号 </s>，一开头就结束了（p = {p}）。",
    "empty-thin": "在它看来，每个词的概率都还很低，所以立刻结束比写出任何句子得分都高。",
    "empty-spaces": "模型给出的译文是空的：它输出的内容解码后只有空白。",
    "empty-steps": "它只训练了 {n} 步，还没学会写句子：请再多训练一些。",
    "empty-steps-ppl": "它只训练了 {n} 步（验证集困惑度 {ppl}），还没学会写句子：请再多训练一些。",
    "empty-unknown": "训练好的模型很少这样。请换一句测试集里的例句，并确认输入的是它能翻译的语言。",
    "empty-experiment": "这是实验造成的（关掉了注意力头，或用了笔记的笔误）：和下面“实验前”的译文比较一下。",
    "empty-history": "（空：到这个检查点，模型还没学会写句子）",
    tokens: "词元与嵌入",
    "ref-tokens": "第 3.4、3.5 节 · X_E、PE：(S, D)",
    "source-pieces": "原文：BPE 子词及编号", "output-pieces": "译文：BPE 子词及编号",
    "x-e": "X_E = √d_model · E[ids] + PE", pe: "PE（正弦位置编码）",
    attention: "注意力：每一层、每一个头",
    "ref-attention": "第 3.2.1 节公式 (1)；第 3.2.3 节的掩码 · 权重：(H, Lq, Lk)",
    "attention-help": "鼠标停在格子上，可以看到这一格代入公式 (1) 的各个数值；点击热图可以放大。",
    encoder: "编码器自注意力（S × S）",
    decoder_self: "解码器的掩码自注意力（T × T；被屏蔽的上三角画了斜线）",
    decoder_cross: "编码器-解码器注意力（T × S）",
    "encoder-short": "编码器自注意力", "decoder_self-short": "解码器自注意力",
    "decoder_cross-short": "编码器-解码器注意力",
    "layer-n": "第 {n} 层", "head-n": "头 {n}", mean: "各头平均",
    query: "查询 {n}", key: "键 {n}", "softmax-weight": "softmax 权重",
    output: "输出分布", "ref-output": "第 3.4、5.4 节 · P：(T, V)",
    position: "t", chosen: "选中的 y_t", "p-chosen": "p(y_t)", top: "概率最高的词元",
    "ref-token": "参考译文的 y_t", "p-ref": "p(y_t)", nll: "−log p(y_t)",
    "loss-sum": "损失（参考译文各词元之和）", "loss-mean": "平均每个词元",
    "beam-title": "束搜索：一步一步看", "ref-beam": "第 6.1 节 · 每步保留 K 个假设",
    "step-n": "第 {n} 步", "max-len": "最大 |Y|",
    hypothesis: "假设", logprob: "log P(Y|X)", len: "|Y|", lp: "lp(Y)",
    score: "得分", status: "状态", live: "留在束中", finished: "已结束",
    "no slot": "剪掉（束已满）", stopped: "因上界提前停止",
    extends: "父假设", dropped: "整条剪掉的假设（它的扩展一个也没留下）",
    "finished-so-far": "目前已结束的假设（按得分从高到低）",
    "bound-text": "上界 = 束中最好的 log P / lp(最大 |Y|)",
    threshold: "已结束假设中第 n 高的得分", "stop-yes": "→ 束中的假设都不可能再胜出：停止",
    "stop-no": "→ 继续", "stop-end": "→ 束中已没有假设：搜索结束",
    history: "训练过程", "ref-history": "第 3.2.1、5.2 节 · 同一个头的 (Lq, Lk)，逐个检查点",
    "history-none": "这个模型不在训练目录里，或目录里只有一个检查点，无法展示训练过程。",
    checkpoint: "检查点", "history-head": "所示的注意力头",
    experiments: "实验", "off-default": "默认关闭", "instead-of": "代替",
    "ref-experiments": "第 3.2.2 节 · O_i：(Lq, d_v)",
    "ref-erratum": "第 3.2.1 节公式 (1) · 分数：(H, Lq, Lk)",
    "exp-enable": "开启实验",
    "exp-heads": "关掉注意力头（在乘以 W^O 之前把它的 O_i 置零）：",
    erratum: "笔记里的笔误：分数除以 √d_model，而不是 √d_k（第 3.2.1 节）",
    "exp-run": "运行实验", "exp-baseline": "实验前",
    "exp-with": "实验后", "exp-active": "实验已生效：上面各部分显示的都是实验后的结果。",
    entropy: "注意力的平均熵（单位：奈特；越低越集中）",
    masked: "被屏蔽（−∞）", "mask-ok": "0（允许关注）",
    "corpus-packaged": "软件帮助文本（Debian 软件包里的 LibreOffice 帮助）",
    "corpus-multi30k": "Multi30k：日常图片的描述",
    "corpus-tatoeba": "Tatoeba：日常短句",
    "corpus-numbers": "用文字写出的数字",
    "corpus-copy": "人工合成的复制任务", "corpus-reverse": "人工合成的倒序任务",
    "corpus-wmt14": "WMT 2014 新闻与议会文本",
    "corpus-files": "自己准备的平行语料",
    "lang-en": "英语", "lang-de": "德语", "lang-zh": "中文", "lang-fr": "法语",
    "lang-ja": "日语", "lang-ko": "韩语", "lang-es": "西班牙语", "lang-ru": "俄语",
    "lang-it": "意大利语", "lang-pt": "葡萄牙语", "lang-nl": "荷兰语",
  },
};

const state = { lang: "en", info: null, result: null, baseline: null, off: new Set(),
  focus: ["decoder_cross", 0, 0], history: {} };

function t(key) { return (I18N[state.lang] && I18N[state.lang][key]) || I18N.en[key] || key; }
// A string with its {name} fields filled in: tf("layer-n", { n: 2 }) is "layer 2" or "第 2 层".
function tf(key, vars) { return t(key).replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m)); }
// Layers and heads are numbered from 1, as the study note numbers them (head 1, W_Q1); the
// API's arrays (and its heads_off) count from 0, like aiayn.trace: index l is layer l + 1.
function lab(key) { return t(key) + t("colon"); }  // "label: " or "标签："
function layerName(l) { return tf("layer-n", { n: l + 1 }); }
function headName(h) { return tf("head-n", { n: h + 1 }); }
function mapName(stack, l, h) { return `${stack}-${l + 1}-${h === "mean" ? h : h + 1}`; }
function $(id) { return document.getElementById(id); }
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}
function fmt(x, d = 4) { return x === null || x === undefined ? "−∞" : Number(x).toFixed(d); }
// Text that is data, not a label (sentences, BPE pieces, file names): never translated.
function data(text) { return el("span", { class: "data", translate: "no", text }); }

function applyLang(lang) {
  state.lang = lang;
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  document.title = t("title");
  document.querySelectorAll(".langs button").forEach((b) => {
    b.classList.toggle("active", b.dataset.lang === lang);
  });
  renderInfo();
  if (state.result) render(state.result);
}

// The server's refusals are one English line naming the field; the Chinese page says whose words
// they are.
function showError(message, ours = false) {
  const box = $("error");
  box.hidden = !message;
  const refused = I18N[state.lang].refused;
  box.textContent = !message ? "" : ours || !refused ? message : refused + message;
}

async function api(path, body) {
  const opts = body ? { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body) } : {};
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
  return data;
}

// The model the page shows, named: what it was trained on, for how long, how well it did on
// the validation set; or that it was imported or shipped. An empty translation from a model
// trained for 300 steps and one from a model trained for days mean different things.
function renderInfo() {
  const info = state.info;
  if (!info) return;
  const m = info.model;
  const box = $("model-info");
  box.replaceChildren();
  // A shipped model offers example sentences (its registry's), not its test split's.
  const shipped = info.kind === "shipped";
  const label = document.querySelector('label[for="example"]');
  label.dataset.i18n = shipped ? "examples-shipped" : "examples";
  label.textContent = t(label.dataset.i18n);
  const row = (label, ...items) => box.append(el("div", { class: "card-row" },
    el("span", { class: "card-key", text: label }), el("span", { class: "card-value" }, ...items)));
  row(t("card-model"), data(info.checkpoint_label), el("span", { class: "tag kind",
    "data-kind": info.kind, text: t("kind-" + info.kind) }));
  // A corpus of aiayn prepare is named in the page's language; any other description (a
  // shipped model's) is shown as written.
  const named = I18N[state.lang]["corpus-" + info.corpus] || info.corpus_description;
  const corpus = info.corpus === "unknown" ? el("span", { text: t("corpus-unknown") })
    : info.corpus in CORPUS_KEYS ? el("span", { text: named }) : data(info.corpus_description);
  const langs = info.languages ? info.languages.map((x) => t("lang-" + x)).join(" → ") : "";
  row(t("card-data"), corpus, ...(langs ? [el("span", { text: " · " + langs })] : []));
  const training = [];
  if (info.step !== null && info.step !== undefined) {
    training.push(el("span", { id: "model-steps", text: tf("steps", { n: info.step }) }));
    if (info.averaged > 1) training.push(el("span", { text: " · " + tf("averaged", { n: info.averaged }) }));
  } else if (info.kind === "imported") {
    training.push(el("span", { text: t("not-trained-here") + " " }), data(info.origin));
  } else {
    training.push(el("span", { text: t("steps-unknown") }));
  }
  row(t("card-training"), ...training);
  const v = info.valid;
  const valid = v ? tf("valid-ppl", { ppl: ppl(v.ppl), step: v.step }) +
    (v.bleu !== undefined ? ` · BLEU ${v.bleu.toFixed(1)}` : "") : t("valid-none");
  row(t("card-valid"), el("span", { id: "model-valid", text: valid }));
  row(t("card-arch"), el("span", { text: `d_model ${m.d_model} · h ${m.n_heads} · d_k ${m.d_k} · ` +
    `d_ff ${m.d_ff} · N ${m.n_layers} · V ${m.vocab_size}` }));
  if (info.examples.length) {
    box.append(el("p", { class: "note", text: t(shipped ? "try-shipped" : "try-own") }));
  }
}
const CORPUS_KEYS = { packaged: 1, multi30k: 1, tatoeba: 1, numbers: 1, copy: 1, reverse: 1, wmt14: 1, files: 1 };
function ppl(x) { return x === null || x === undefined ? "?" : Number(x).toFixed(x < 100 ? 2 : 0); }

// Why a translation is empty, in words: a model that has not learned to write yet (after N
// steps), an experiment that broke it, or something a trained model seldom does.
function emptyReason(result) {
  const out = result.output;
  const first = result.distribution[0];
  const parts = [out.ids.length === 1 && first ? tf("empty-first", { p: fmt(first.p_chosen, 2) })
    : t("empty-spaces")];
  if (out.ids.length === 1 && first && first.p_chosen < 0.5) parts.push(t("empty-thin"));
  const info = state.info;
  const s = result.settings;
  if (s.heads_off.length || s.erratum) parts.push(t("empty-experiment"));
  else if (info.step !== null && info.step !== undefined) {
    parts.push(info.valid ? tf("empty-steps-ppl", { n: info.step, ppl: ppl(info.valid.ppl) })
      : tf("empty-steps", { n: info.step }));
  } else parts.push(t("empty-unknown"));
  return parts.join(t("gap"));  // Chinese sentences follow each other without a space
}

function request(extra) {
  const body = { text: $("text").value, beam: Number($("beam").value),
    alpha: Number($("alpha").value) };
  const ref = $("reference").value.trim();
  if (ref) body.reference = ref;
  return Object.assign(body, extra || {});
}

async function translate() {
  showError("");
  if (!$("text").value.trim()) { showError(t("need-text"), true); return; }
  $("busy").hidden = false;
  try {
    const started = performance.now();
    const result = await api("api/translate", request());
    const got = performance.now();
    state.baseline = result;
    state.history = {};
    render(result);
    window.__lastRender = { fetchMs: got - started, renderMs: performance.now() - got };
    $("exp-result").textContent = "";
  } catch (e) {
    showError(e.message);
  } finally {
    $("busy").hidden = true;
  }
}

// --- drawing -------------------------------------------------------------------------------

function colour(v, lo, hi) {  // white -> dark blue for weights; blue-white-red for signed values
  if (lo < 0) {
    const m = Math.max(-lo, hi) || 1;
    const x = Math.max(-1, Math.min(1, v / m));
    const r = x > 0 ? 255 : Math.round(255 * (1 + x));
    const b = x < 0 ? 255 : Math.round(255 * (1 - x));
    const g = Math.round(255 * (1 - Math.abs(x)));
    return `rgb(${r},${g},${b})`;
  }
  const x = hi > lo ? (v - lo) / (hi - lo) : 0;
  return `rgb(${Math.round(255 - 225 * x)},${Math.round(255 - 175 * x)},${Math.round(255 - 90 * x)})`;
}

// A heatmap on a canvas: rows x cols cells, keep (optional) marks masked cells, hover(r, c)
// gives the tooltip text.
function heatmap(matrix, opts) {
  const rows = matrix.length, cols = rows ? matrix[0].length : 0;
  const cell = opts.cell || Math.max(3, Math.min(14, Math.floor((opts.size || 180) / Math.max(rows, cols, 1))));
  const cw = opts.cellW || cell;
  const canvas = el("canvas", { width: cols * cw, height: rows * cell, "data-rows": rows,
    "data-cols": cols, class: "heat" });
  const ctx = canvas.getContext("2d");
  let lo = Infinity, hi = -Infinity;
  for (const row of matrix) for (const v of row) { if (v < lo) lo = v; if (v > hi) hi = v; }
  if (opts.range) [lo, hi] = opts.range;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      if (opts.keep && !opts.keep[r][c]) {
        ctx.fillStyle = "#eee"; ctx.fillRect(c * cw, r * cell, cw, cell);
        ctx.strokeStyle = "#bbb"; ctx.beginPath();
        ctx.moveTo(c * cw, (r + 1) * cell); ctx.lineTo((c + 1) * cw, r * cell); ctx.stroke();
      } else {
        ctx.fillStyle = colour(matrix[r][c], lo, hi);
        ctx.fillRect(c * cw, r * cell, cw, cell);
      }
    }
  }
  if (opts.hover) {
    canvas.addEventListener("mousemove", (ev) => {
      const box = canvas.getBoundingClientRect();
      const c = Math.floor((ev.clientX - box.left) / (box.width / cols));
      const r = Math.floor((ev.clientY - box.top) / (box.height / rows));
      if (r >= 0 && r < rows && c >= 0 && c < cols) tip(ev, opts.hover(r, c)); else tip(null);
    });
    canvas.addEventListener("mouseleave", () => tip(null));
  }
  if (opts.click) canvas.addEventListener("click", opts.click);
  const wrap = el("div", { class: "map" });
  // Token labels beside the rows and under the columns, where a cell is tall enough to read
  // them (a long sentence keeps the tooltip's tokens only).
  const labelled = cell >= LABEL_MIN_CELL && cw >= LABEL_MIN_CELL;
  const rowLabels = labelled && opts.rowLabels, colLabels = labelled && opts.colLabels;
  if (rowLabels || colLabels) wrap.classList.add("labelled");
  if (opts.caption) wrap.append(el("div", { class: "caption", text: opts.caption }));
  const font = `font-size:${Math.max(8, Math.min(10, cell - 2))}px`;
  if (rowLabels) {
    const axis = el("div", { class: "axis-rows", style: font, translate: "no" });
    rowLabels.forEach((q) => axis.append(el("div", { text: q, style: `height:${cell}px;line-height:${cell}px` })));
    wrap.append(axis);
  }
  wrap.append(canvas);
  if (colLabels) {
    const axis = el("div", { class: "axis-cols", style: font, translate: "no" });
    colLabels.forEach((k) => axis.append(el("div", { text: k, style: `width:${cw}px` })));
    wrap.append(axis);
  }
  return wrap;
}
const LABEL_MIN_CELL = 8;  // px: smaller cells (sentences of over 22 tokens) are too small

function tip(ev, text) {
  const box = $("tooltip");
  if (!ev || !text) { box.hidden = true; return; }
  box.textContent = text;
  box.hidden = false;
  box.style.left = Math.min(ev.clientX + 14, window.innerWidth - 400) + "px";
  box.style.top = (ev.clientY + 14) + "px";
}

function axes(stack, result) {
  const src = result.source.pieces;
  const tgtIn = ["<s>", ...result.output.pieces.slice(0, -1)];
  if (stack === "encoder") return [src, src];
  if (stack === "decoder_self") return [tgtIn, tgtIn];
  return [tgtIn, src];
}

// Eq. (1) for one cell, with the library's numbers: score = q.k / divisor before the mask.
function eqText(result, stack, layer, head, r, c) {
  const a = result.attention[stack][layer];
  const [qs, ks] = axes(stack, result);
  const div = result.settings.divisor;
  const dk = state.info.model.d_k;
  const divName = result.settings.erratum ? `√d_model (√${state.info.model.d_model})` : `√d_k (√${dk})`;
  const score = a.scores[head][r][c];
  const keep = a.keep[r][c];
  return `${t(stack)}\n${layerName(layer)} · ${headName(head)}` +
    `\n${tf("query", { n: r + 1 })} "${qs[r]}"  →  ${tf("key", { n: c + 1 })} "${ks[c]}"` +
    `\nq·k = ${fmt(score * div)}` +
    `\nq·k / ${divName}  =  ${fmt(score)}` +
    `\nM = ${keep ? t("mask-ok") : t("masked")}` +
    `\n${t("softmax-weight")} = ${fmt(a.weights[head][r][c], 5)}`;
}

function renderPieces(result) {
  const box = $("pieces");
  box.replaceChildren();
  const row = (label, ids, pieces) => {
    const div = el("div", { class: "pieces" }, el("span", { text: label + t("colon").trimEnd() }));
    ids.forEach((id, i) => div.append(el("span", { class: "piece", translate: "no" }, pieces[i], el("small", { text: String(id) }))));
    return div;
  };
  box.append(row(t("source-pieces"), result.source.ids, result.source.pieces));
  box.append(row(t("output-pieces"), result.output.ids, result.output.pieces));
  const emb = $("embedding");
  emb.replaceChildren();
  const src = result.source.pieces;
  const hover = (name, m) => (r, c) => `${name}[${r}, ${c}] = ${fmt(m[r][c])}\n"${src[r]}"`;
  const D = result.embedding.X_E[0].length;
  const cellW = Math.max(1, Math.min(4, Math.floor(480 / D)));
  emb.append(heatmap(result.embedding.X_E, { cell: 10, cellW, caption: `${t("x-e")}  (${src.length}, ${D})`,
    hover: hover("X_E", result.embedding.X_E), range: null }));
  emb.append(heatmap(result.embedding.PE, { cell: 10, cellW, caption: `${t("pe")}  (${src.length}, ${D})`,
    hover: hover("PE", result.embedding.PE) }));
  emb.querySelectorAll("canvas")[0].id = "map-xe";
  emb.querySelectorAll("canvas")[1].id = "map-pe";
}

function renderAttention(result) {
  const box = $("attention");
  box.replaceChildren();
  for (const stack of ["encoder", "decoder_self", "decoder_cross"]) {
    const layers = result.attention[stack];
    const [qs, ks] = axes(stack, result);
    const sec = el("div", { class: "stack", id: "stack-" + stack },
      el("h3", { text: `${t(stack)} — (H, Lq, Lk) = (${layers[0].weights.length}, ${qs.length}, ${ks.length})` }));
    layers.forEach((a, l) => {
      const row = el("div", { class: "layer" }, el("div", { class: "layer-label", text: layerName(l) }));
      a.weights.forEach((w, h) => {
        const m = heatmap(w, { keep: a.keep, range: [0, 1], caption: headName(h),
          rowLabels: h === 0 ? qs : null, colLabels: ks,  // queries once a row, keys under each
          hover: (r, c) => eqText(result, stack, l, h, r, c),
          click: () => { state.focus = [stack, l, h]; renderFocus(result); renderHistory(result); } });
        m.querySelector("canvas").dataset.map = mapName(stack, l, h);
        row.append(m);
      });
      const mean = heatmap(a.mean, { keep: a.keep, range: [0, 1], caption: t("mean"), colLabels: ks,
        hover: (r, c) => `${t(stack)}\n${layerName(l)} · ${t("mean")}\n"${qs[r]}" → "${ks[c]}" = ${fmt(a.mean[r][c], 5)}` });
      mean.querySelector("canvas").dataset.map = mapName(stack, l, "mean");
      row.append(mean);
      sec.append(row);
    });
    box.append(sec);
  }
  renderFocus(result);
}

// One head enlarged, with its tokens on the axes (SVG).
function labelledMap(result, stack, layer, head, into) {
  into.replaceChildren();
  const a = result.attention[stack][layer];
  if (!a || head >= a.weights.length) return;
  const [qs, ks] = axes(stack, result);
  const cell = 22, left = 90, top = 80;
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("translate", "no");  // its labels are the sentence's tokens
  svg.setAttribute("width", left + ks.length * cell + 10);
  svg.setAttribute("height", top + qs.length * cell + 10);
  svg.dataset.rows = qs.length; svg.dataset.cols = ks.length;
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n); return n;
  };
  qs.forEach((q, r) => add("text", { x: left - 4, y: top + r * cell + 15, "text-anchor": "end" }, q));
  ks.forEach((k, c) => add("text", { x: 0, y: 0, transform: `translate(${left + c * cell + 15},${top - 4}) rotate(-60)` }, k));
  a.weights[head].forEach((row, r) => row.forEach((v, c) => {
    const masked = !a.keep[r][c];
    const rect = add("rect", { x: left + c * cell, y: top + r * cell, width: cell - 1, height: cell - 1,
      fill: masked ? "#eee" : colour(v, 0, 1) });
    if (masked) add("line", { x1: left + c * cell, y1: top + (r + 1) * cell - 1, x2: left + (c + 1) * cell - 1,
      y2: top + r * cell, stroke: "#bbb" });
    rect.addEventListener("mousemove", (ev) => tip(ev, eqText(result, stack, layer, head, r, c)));
    rect.addEventListener("mouseleave", () => tip(null));
  }));
  into.append(el("div", { class: "caption", text: `${t(stack)} · ${layerName(layer)} · ${headName(head)}` }), svg);
}

function renderFocus(result) {
  const [stack, l, h] = state.focus;
  labelledMap(result, stack, Math.min(l, result.attention[stack].length - 1), h, $("focus"));
}

function renderDistribution(result) {
  const box = $("distribution");
  box.replaceChildren();
  const ref = result.reference;
  const head = el("tr", {}, el("th", { text: t("position") }), el("th", { text: t("chosen") }),
    el("th", { text: t("p-chosen") }), el("th", { text: t("top") }));
  if (ref) ["ref-token", "p-ref", "nll"].forEach((k) => head.append(el("th", { text: t(k) })));
  const table = el("table", { id: "dist-table" }, head);
  const T = Math.max(result.distribution.length, ref ? ref.ids.length : 0);
  for (let i = 0; i < T; i++) {
    const d = result.distribution[i];
    const tr = el("tr", {}, el("td", { class: "num", text: String(i + 1) }));
    if (d) {
      tr.append(el("td", { class: "chosen", translate: "no", text: d.chosen_piece }), el("td", { class: "num", text: fmt(d.p_chosen) }));
      const top = el("td", { translate: "no" });
      d.top.forEach((x) => top.append(el("div", {}, el("span", { class: "bar", style: `width:${Math.round(80 * x.p)}px` }),
        el("span", { class: x.id === d.chosen ? "chosen" : "", text: `${x.piece}  ${fmt(x.p, 3)}` }))));
      tr.append(top);
    } else {
      tr.append(el("td"), el("td"), el("td"));
    }
    if (ref) {
      const has = i < ref.ids.length;
      tr.append(el("td", { translate: "no", text: has ? ref.pieces[i] : "" }), el("td", { class: "num", text: has ? fmt(ref.p[i]) : "" }),
        el("td", { class: "num", text: has ? fmt(ref.nll[i]) : "" }));
    }
    table.append(tr);
  }
  box.append(table);
  if (ref) {
    box.append(el("p", { id: "loss", text: `${lab("loss-sum")}${fmt(ref.loss_sum)} · ${lab("loss-mean")}${fmt(ref.loss_mean)}` }));
  }
}

function renderBeam(result) {
  const box = $("beam-steps");
  box.replaceChildren();
  const text = (pieces) => pieces.join(" ") || "∅";
  const finished = [];  // every finished hypothesis so far, from the record's earlier steps
  result.beam.forEach((s) => {
    const div = el("div", { class: "step", "data-t": s.t },
      el("h4", { text: `${tf("step-n", { n: s.t })} · |Y| = ${s.t} · ${t("max-len")} = ${s.max_len}` }));
    const table = el("table", { class: "beam" }, el("tr", {},
      ...["extends", "hypothesis", "logprob", "len", "lp", "score", "status"].map((k) => el("th", { text: t(k) }))));
    s.candidates.forEach((c) => {
      const parent = s.live_before[c.parent];
      table.append(el("tr", { class: c.status.replace(" ", "") },
        el("td", { translate: "no", text: text(parent.pieces) }), el("td", { translate: "no", text: text(c.pieces) }),
        el("td", { class: "num", text: fmt(c.logprob) }), el("td", { class: "num", text: String(s.t) }),
        el("td", { class: "num", text: fmt(c.lp) }), el("td", { class: "num", text: fmt(c.score) }),
        el("td", { text: t(c.status) })));
    });
    div.append(table);
    if (s.dropped.length) {
      div.append(el("p", { class: "bound" }, `${lab("dropped")}`,
        data(s.dropped.map((i) => text(s.live_before[i].pieces)).join(" | "))));
    }
    s.candidates.filter((c) => c.status === "finished").forEach((c) => finished.push(c));
    if (finished.length) {
      const best = [...finished].sort((x, y) => y.score - x.score);
      div.append(el("p", { class: "bound finished-so-far" }, `${lab("finished-so-far")}`,
        data(best.map((c) => `${text(c.pieces)} (${fmt(c.score)})`).join(" | "))));
    }
    const anyLive = s.candidates.some((c) => c.status === "live" || c.status === "stopped");
    const verdict = s.stop ? t("stop-yes") : anyLive ? t("stop-no") : t("stop-end");
    div.append(el("p", { class: "bound", text: `${t("bound-text")} = ${fmt(s.best_live)} / lp(${s.max_len}) = ${fmt(s.bound)}${t("semicolon")}` +
      `${t("threshold")} = ${fmt(s.threshold)} ${verdict}` }));
    box.append(div);
  });
}

async function renderHistory(result) {
  const box = $("history");
  box.replaceChildren();
  const names = state.info.checkpoints;
  if (names.length < 2) { box.append(el("p", { class: "note", text: t("history-none") })); return; }
  const [stack, l, h] = state.focus;
  const slider = el("input", { type: "range", min: 0, max: names.length - 1, step: 1, value: names.length - 1, id: "history-slider" });
  const label = el("span", { id: "history-name", translate: "no" });
  const out = el("p", { id: "history-translation" });
  const map = el("div", { id: "history-map" });
  box.append(el("div", { class: "history-controls" }, el("span", { text: t("checkpoint") }), slider, label,
    el("span", { class: "note", text: `${lab("history-head")}${t(stack)} · ${layerName(l)} · ${headName(h)}` })), out, map);
  const show = async () => {
    const name = names[Number(slider.value)];
    label.textContent = name;
    try {
      const key = name + "|" + JSON.stringify(request());
      if (!state.history[key]) state.history[key] = await api("api/translate", request({ checkpoint: name }));
      const r = state.history[key];
      out.replaceChildren(`${lab("translation")}`, data(r.output.text));
      if (r.output.empty) out.append(el("span", { class: "empty-history", text: " ∅ " + t("empty-history") }));
      labelledMap(r, stack, Math.min(l, r.attention[stack].length - 1), h, map);
    } catch (e) { showError(e.message); }
  };
  slider.addEventListener("input", show);
  await show();
}

function renderSwitches() {
  const box = $("head-switches");
  box.replaceChildren();
  const m = state.info.model;
  for (const stack of ["encoder", "decoder_self", "decoder_cross"]) {
    const layers = stack === "encoder" ? m.n_layers : m.decoder_layers;
    for (let l = 0; l < layers; l++) {
      const row = el("div", { class: "switches" }, el("span", { text: `${t(stack + "-short")} · ${layerName(l)}` }));
      for (let h = 0; h < m.n_heads; h++) {
        const key = mapName(stack, l, h);  // as labelled: layer l + 1, head h + 1
        const b = el("button", { type: "button", "data-head": key, text: headName(h) });
        b.classList.toggle("off", state.off.has(key));
        b.addEventListener("click", () => {
          if (state.off.has(key)) state.off.delete(key); else state.off.add(key);
          b.classList.toggle("off", state.off.has(key));
        });
        row.append(b);
      }
      box.append(row);
    }
  }
}

// Mean entropy (nats) of every attention row, over all stacks, layers and heads: lower is sharper.
function entropy(result) {
  let sum = 0, n = 0;
  for (const stack of Object.values(result.attention)) {
    for (const layer of stack) {
      for (const head of layer.weights) {
        for (const row of head) {
          let h = 0;
          for (const p of row) if (p > 0) h -= p * Math.log(p);
          sum += h; n += 1;
        }
      }
    }
  }
  return n ? sum / n : 0;
}

async function runExperiment() {
  showError("");
  // The page's names count from 1, the API's indices from 0.
  const heads = [...state.off].map((k) => { const [s, l, h] = k.split("-"); return [s, Number(l) - 1, Number(h) - 1]; });
  try {
    const result = await api("api/translate", request({ heads_off: heads, erratum: $("erratum").checked }));
    render(result);
    const base = state.baseline ? state.baseline.output.text : "";
    const sharp = state.baseline ? `  ·  ${lab("entropy")}${fmt(entropy(state.baseline), 3)} → ${fmt(entropy(result), 3)}` : "";
    $("exp-result").replaceChildren(`${lab("exp-baseline")}`, data(base || "∅"), `  ·  ${lab("exp-with")}`,
      data(result.output.text || "∅"), `${sharp}  ·  ${t("exp-active")}`);
    if (state.baseline) {
      $("exp-result").dataset.entropyBefore = String(entropy(state.baseline));
      $("exp-result").dataset.entropyAfter = String(entropy(result));
    }
  } catch (e) { showError(e.message); }
}

function render(result) {
  state.result = result;
  $("translation").textContent = result.output.text;
  const empty = $("empty-note");
  empty.hidden = !result.output.empty;
  empty.textContent = result.output.empty ? emptyReason(result) : "";
  renderPieces(result);
  renderAttention(result);
  renderDistribution(result);
  renderBeam(result);
  renderHistory(result);
  if (state.info) renderSwitches();
  document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
}

async function main() {
  const params = new URLSearchParams(location.search);
  state.info = await api("api/info");
  applyLang(params.get("lang") || state.info.lang || "en");
  const select = $("example");
  select.append(el("option", { value: "", text: "—" }));
  state.info.examples.forEach((ex, i) => select.append(el("option", { value: String(i), translate: "no", text: ex.source })));
  select.addEventListener("change", () => {
    const ex = state.info.examples[Number(select.value)];
    if (select.value !== "" && ex) { $("text").value = ex.source; $("reference").value = ex.reference; translate(); }
  });
  document.querySelectorAll(".langs button").forEach((b) => b.addEventListener("click", () => applyLang(b.dataset.lang)));
  $("translate").addEventListener("click", translate);
  $("beam").addEventListener("change", translate);
  $("alpha").addEventListener("input", () => { $("alpha-value").textContent = $("alpha").value; });
  $("alpha").addEventListener("change", translate);
  $("exp-on").addEventListener("change", () => {
    $("experiments").hidden = !$("exp-on").checked;
    if (!$("exp-on").checked && state.baseline) { render(state.baseline); $("exp-result").textContent = ""; }
  });
  $("exp-run").addEventListener("click", runExperiment);
  renderSwitches();
  if (state.info.examples.length) {  // the model's own test sentences first
    select.value = "0";
    $("text").value = state.info.examples[0].source;
    $("reference").value = state.info.examples[0].reference;
    await translate();
  }
  document.body.dataset.ready = "1";
}

main().catch((e) => showError(e.message));
