// aiayn explore: the page. Plain JavaScript, Canvas and SVG; no library, no network beyond
// this server. Every number drawn comes from the JSON API (/api/translate), which takes it
// from the library (aiayn.trace, the beam search's own record): the page computes nothing
// but colours, q.k = score * divisor for the tooltip of Eq. (1), and the experiments' summary
// of the weights (their mean entropy, to show how sharp the attention is).
"use strict";

const I18N = {
  en: {
    title: "aiayn explore",
    subtitle: "the trained Transformer on your own sentence",
    input: "Input", examples: "Test sentences of the run", source: "Source sentence",
    reference: "Reference translation (optional)", beam: "Beam size", alpha: "Length penalty α",
    translate: "Translate", busy: "working…", translation: "Translation",
    "ref-input": "Section 6.1 · X: (S,) source ids, S = source length with </s>",
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
    layer: "layer", head: "head", mean: "mean of heads",
    output: "Output distribution", "ref-output": "Sections 3.4, 5.4 · P: (T, V)",
    position: "t", chosen: "chosen y_t", "p-chosen": "p(y_t)", top: "top tokens",
    "ref-token": "reference y_t", "p-ref": "p(y_t)", nll: "−log p(y_t)",
    "loss-sum": "loss (sum over the reference)", "loss-mean": "per token",
    "beam-title": "Beam search, step by step", "ref-beam": "Section 6.1 · K hypotheses a step",
    step: "step", hypothesis: "hypothesis", logprob: "log P(Y|X)", len: "|Y|", lp: "lp(Y)",
    score: "score", status: "status", live: "live", finished: "finished",
    "no slot": "pruned (no slot)", stopped: "stopped by the bound",
    extends: "extends", dropped: "pruned lines (no extension kept)",
    "finished-so-far": "finished so far, best score first",
    "bound-text": "bound = best live log P / lp(max |Y|)",
    threshold: "n-best finished score", "stop-yes": "→ no live hypothesis can win: stop",
    "stop-no": "→ go on", "stop-end": "→ no live hypothesis left: the search ends",
    history: "Training history", "ref-history": "Sections 3.2.1, 5.2 · (Lq, Lk)",
    "history-none": "This model has no run with several checkpoints beside it.",
    checkpoint: "checkpoint", "history-head": "head shown",
    experiments: "Experiments", "off-default": "off by default",
    "ref-experiments": "Section 3.2.2 · O_i: (Lq, d_v)",
    "ref-erratum": "Section 3.2.1, Eq. (1) · scores: (H, Lq, Lk)",
    "exp-enable": "Enable experiments",
    "exp-heads": "Switch heads off (their O_i set to zero before W^O):",
    erratum: "The note's erratum: scores divided by √d_model instead of √d_k (Section 3.2.1)",
    "exp-run": "Run the experiment", "exp-baseline": "without the experiment",
    "exp-with": "with the experiment", "exp-active": "Experiment active: the views above show it.",
    entropy: "mean attention entropy (nats; lower is sharper)",
    "trained-on": "This model was trained on", "try-own": "try its own test sentences first.",
    "model-line": "model", "from-run": "run",
    "focus-help": "click a map above to enlarge it here",
    masked: "masked (−∞)", "mask-ok": "0 (may attend)",
  },
  zh: {
    title: "aiayn 探索器",
    subtitle: "训练好的 Transformer，用你自己的句子",
    input: "输入", examples: "本次运行的测试句子", source: "源句子",
    reference: "参考译文（可选）", beam: "束宽", alpha: "长度惩罚 α",
    translate: "翻译", busy: "计算中…", translation: "译文",
    "ref-input": "第 6.1 节 · X：(S,) 源词元编号，S = 含 </s> 的源长度",
    tokens: "词元与嵌入",
    "ref-tokens": "第 3.4、3.5 节 · X_E、PE：(S, D)",
    "source-pieces": "源句：BPE 片段与编号", "output-pieces": "输出：BPE 片段与编号",
    "x-e": "X_E = √d_model · E[ids] + PE", pe: "PE（正弦位置编码）",
    attention: "注意力：每一层、每一个头",
    "ref-attention": "第 3.2.1 节公式 (1)；第 3.2.3 节掩码 · 权重：(H, Lq, Lk)",
    "attention-help": "鼠标悬停在格子上可看到该格的公式 (1) 数值；点击热图可放大。",
    encoder: "编码器自注意力（S × S）",
    decoder_self: "解码器掩码自注意力（T × T；被掩盖的上三角画有斜线）",
    decoder_cross: "编码器-解码器注意力（T × S）",
    layer: "层", head: "头", mean: "各头平均",
    output: "输出分布", "ref-output": "第 3.4、5.4 节 · P：(T, V)",
    position: "t", chosen: "选中的 y_t", "p-chosen": "p(y_t)", top: "概率最高的词元",
    "ref-token": "参考 y_t", "p-ref": "p(y_t)", nll: "−log p(y_t)",
    "loss-sum": "损失（对参考译文求和）", "loss-mean": "每词元",
    "beam-title": "束搜索，逐步展示", "ref-beam": "第 6.1 节 · 每步 K 个假设",
    step: "步", hypothesis: "假设", logprob: "log P(Y|X)", len: "|Y|", lp: "lp(Y)",
    score: "得分", status: "状态", live: "保留", finished: "已完成",
    "no slot": "剪枝（无空位）", stopped: "因上界而停止",
    extends: "扩展自", dropped: "被剪枝的分支（没有扩展被保留）",
    "finished-so-far": "目前已完成的假设（按得分从高到低）",
    "bound-text": "上界 = 最佳保留 log P / lp(最大 |Y|)",
    threshold: "第 n 佳已完成得分", "stop-yes": "→ 没有保留假设能胜出：停止",
    "stop-no": "→ 继续", "stop-end": "→ 没有保留的假设：搜索结束",
    history: "训练历程", "ref-history": "第 3.2.1、5.2 节 · (Lq, Lk)",
    "history-none": "此模型旁没有含多个检查点的运行目录。",
    checkpoint: "检查点", "history-head": "显示的头",
    experiments: "实验", "off-default": "默认关闭",
    "ref-experiments": "第 3.2.2 节 · O_i：(Lq, d_v)",
    "ref-erratum": "第 3.2.1 节公式 (1) · 分数：(H, Lq, Lk)",
    "exp-enable": "启用实验",
    "exp-heads": "关闭注意力头（在乘 W^O 之前把其 O_i 置零）：",
    erratum: "学习笔记的勘误：分数除以 √d_model 而不是 √d_k（第 3.2.1 节）",
    "exp-run": "运行实验", "exp-baseline": "不做实验",
    "exp-with": "做实验", "exp-active": "实验生效中：上面各视图显示的是实验结果。",
    entropy: "注意力的平均熵（奈特；越低越集中）",
    "corpus-packaged": "软件帮助文本（来自 Debian 软件包的 LibreOffice 帮助），英德",
    "corpus-multi30k": "Multi30k：日常图片描述，英德",
    "corpus-numbers": "用文字写出的数字",
    "corpus-copy": "合成的复制任务", "corpus-reverse": "合成的倒序任务",
    "corpus-wmt14": "WMT 2014 新闻与议会文本",
    "corpus-files": "交给 aiayn prepare 的平行文本文件",
    "trained-on": "此模型的训练数据是", "try-own": "请先试试它自己的测试句子。",
    "model-line": "模型", "from-run": "运行目录",
    "focus-help": "点击上面的热图，在这里放大",
    masked: "被掩盖（−∞）", "mask-ok": "0（可以关注）",
  },
};

const state = { lang: "en", info: null, result: null, baseline: null, off: new Set(),
  focus: ["decoder_cross", 0, 0], history: {} };

function t(key) { return (I18N[state.lang] && I18N[state.lang][key]) || I18N.en[key] || key; }
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

function applyLang(lang) {
  state.lang = lang;
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  document.querySelectorAll(".langs button").forEach((b) => {
    b.classList.toggle("active", b.dataset.lang === lang);
  });
  renderInfo();
  if (state.result) render(state.result);
}

function showError(message) {
  const box = $("error");
  box.hidden = !message;
  box.textContent = message || "";
}

async function api(path, body) {
  const opts = body ? { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body) } : {};
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
  return data;
}

function renderInfo() {
  const info = state.info;
  if (!info) return;
  const m = info.model;
  const key = "corpus-" + info.corpus;
  const corpus = (I18N[state.lang] && I18N[state.lang][key]) || info.corpus_description;
  $("model-info").textContent = `${t("trained-on")}: ${corpus} — ` +
    `${t("try-own")} ${t("model-line")}: d_model ${m.d_model}, h ${m.n_heads}, d_k ${m.d_k}, ` +
    `N ${m.n_layers}, V ${m.vocab_size} · ${info.checkpoint_label} (${info.origin})`;
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
    const axis = el("div", { class: "axis-rows", style: font });
    rowLabels.forEach((q) => axis.append(el("div", { text: q, style: `height:${cell}px;line-height:${cell}px` })));
    wrap.append(axis);
  }
  wrap.append(canvas);
  if (colLabels) {
    const axis = el("div", { class: "axis-cols", style: font });
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
  return `${t(stack)}\n${t("layer")} ${layer} · ${t("head")} ${head}` +
    `\nquery ${r} "${qs[r]}"  →  key ${c} "${ks[c]}"` +
    `\nq·k = ${fmt(score * div)}` +
    `\nq·k / ${divName}  =  ${fmt(score)}` +
    `\nM = ${keep ? t("mask-ok") : t("masked")}` +
    `\nsoftmax weight = ${fmt(a.weights[head][r][c], 5)}`;
}

function renderPieces(result) {
  const box = $("pieces");
  box.replaceChildren();
  const row = (label, ids, pieces) => {
    const div = el("div", { class: "pieces" }, el("span", { text: label + ":" }));
    ids.forEach((id, i) => div.append(el("span", { class: "piece" }, pieces[i], el("small", { text: String(id) }))));
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
      const row = el("div", { class: "layer" }, el("div", { class: "layer-label", text: `${t("layer")} ${l}` }));
      a.weights.forEach((w, h) => {
        const m = heatmap(w, { keep: a.keep, range: [0, 1], caption: `${t("head")} ${h}`,
          rowLabels: h === 0 ? qs : null, colLabels: ks,  // queries once a row, keys under each
          hover: (r, c) => eqText(result, stack, l, h, r, c),
          click: () => { state.focus = [stack, l, h]; renderFocus(result); renderHistory(result); } });
        m.querySelector("canvas").dataset.map = `${stack}-${l}-${h}`;
        row.append(m);
      });
      const mean = heatmap(a.mean, { keep: a.keep, range: [0, 1], caption: t("mean"), colLabels: ks,
        hover: (r, c) => `${t(stack)} ${t("layer")} ${l}: ${t("mean")}\n"${qs[r]}" → "${ks[c]}" = ${fmt(a.mean[r][c], 5)}` });
      mean.querySelector("canvas").dataset.map = `${stack}-${l}-mean`;
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
  into.append(el("div", { class: "caption", text: `${t(stack)} · ${t("layer")} ${layer} · ${t("head")} ${head}` }), svg);
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
      tr.append(el("td", { class: "chosen", text: d.chosen_piece }), el("td", { class: "num", text: fmt(d.p_chosen) }));
      const top = el("td");
      d.top.forEach((x) => top.append(el("div", {}, el("span", { class: "bar", style: `width:${Math.round(80 * x.p)}px` }),
        el("span", { class: x.id === d.chosen ? "chosen" : "", text: `${x.piece}  ${fmt(x.p, 3)}` }))));
      tr.append(top);
    } else {
      tr.append(el("td"), el("td"), el("td"));
    }
    if (ref) {
      const has = i < ref.ids.length;
      tr.append(el("td", { text: has ? ref.pieces[i] : "" }), el("td", { class: "num", text: has ? fmt(ref.p[i]) : "" }),
        el("td", { class: "num", text: has ? fmt(ref.nll[i]) : "" }));
    }
    table.append(tr);
  }
  box.append(table);
  if (ref) {
    box.append(el("p", { id: "loss", text: `${t("loss-sum")}: ${fmt(ref.loss_sum)} · ${t("loss-mean")}: ${fmt(ref.loss_mean)}` }));
  }
}

function renderBeam(result) {
  const box = $("beam-steps");
  box.replaceChildren();
  const text = (pieces) => pieces.join(" ") || "∅";
  const finished = [];  // every finished hypothesis so far, from the record's earlier steps
  result.beam.forEach((s) => {
    const div = el("div", { class: "step", "data-t": s.t },
      el("h4", { text: `${t("step")} ${s.t} · |Y| = ${s.t} · max |Y| = ${s.max_len}` }));
    const table = el("table", { class: "beam" }, el("tr", {},
      ...["extends", "hypothesis", "logprob", "len", "lp", "score", "status"].map((k) => el("th", { text: t(k) }))));
    s.candidates.forEach((c) => {
      const parent = s.live_before[c.parent];
      table.append(el("tr", { class: c.status.replace(" ", "") },
        el("td", { text: text(parent.pieces) }), el("td", { text: text(c.pieces) }),
        el("td", { class: "num", text: fmt(c.logprob) }), el("td", { class: "num", text: String(s.t) }),
        el("td", { class: "num", text: fmt(c.lp) }), el("td", { class: "num", text: fmt(c.score) }),
        el("td", { text: t(c.status) })));
    });
    div.append(table);
    if (s.dropped.length) {
      div.append(el("p", { class: "bound", text: `${t("dropped")}: ` + s.dropped.map((i) => text(s.live_before[i].pieces)).join(" | ") }));
    }
    s.candidates.filter((c) => c.status === "finished").forEach((c) => finished.push(c));
    if (finished.length) {
      const best = [...finished].sort((x, y) => y.score - x.score);
      div.append(el("p", { class: "bound finished-so-far", text: `${t("finished-so-far")}: ` +
        best.map((c) => `${text(c.pieces)} (${fmt(c.score)})`).join(" | ") }));
    }
    const anyLive = s.candidates.some((c) => c.status === "live" || c.status === "stopped");
    const verdict = s.stop ? t("stop-yes") : anyLive ? t("stop-no") : t("stop-end");
    div.append(el("p", { class: "bound", text: `${t("bound-text")} = ${fmt(s.best_live)} / lp(${s.max_len}) = ${fmt(s.bound)}; ` +
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
  const label = el("span", { id: "history-name" });
  const out = el("p", { id: "history-translation" });
  const map = el("div", { id: "history-map" });
  box.append(el("div", { class: "history-controls" }, el("span", { text: t("checkpoint") }), slider, label,
    el("span", { class: "note", text: `${t("history-head")}: ${t(stack)} · ${t("layer")} ${l} · ${t("head")} ${h}` })), out, map);
  const show = async () => {
    const name = names[Number(slider.value)];
    label.textContent = name;
    try {
      const key = name + "|" + JSON.stringify(request());
      if (!state.history[key]) state.history[key] = await api("api/translate", request({ checkpoint: name }));
      const r = state.history[key];
      out.textContent = `${t("translation")}: ${r.output.text}`;
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
      const row = el("div", { class: "switches" }, el("span", { text: `${t(stack).split(" (")[0].split("（")[0]} · ${t("layer")} ${l}` }));
      for (let h = 0; h < m.n_heads; h++) {
        const key = `${stack}-${l}-${h}`;
        const b = el("button", { type: "button", "data-head": key, text: `${t("head")} ${h}` });
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
  const heads = [...state.off].map((k) => { const [s, l, h] = k.split("-"); return [s, Number(l), Number(h)]; });
  try {
    const result = await api("api/translate", request({ heads_off: heads, erratum: $("erratum").checked }));
    render(result);
    const base = state.baseline ? state.baseline.output.text : "";
    const sharp = state.baseline ? `  ·  ${t("entropy")}: ${fmt(entropy(state.baseline), 3)} → ${fmt(entropy(result), 3)}` : "";
    $("exp-result").textContent = `${t("exp-baseline")}: ${base}  ·  ${t("exp-with")}: ${result.output.text}${sharp}  ·  ${t("exp-active")}`;
    if (state.baseline) {
      $("exp-result").dataset.entropyBefore = String(entropy(state.baseline));
      $("exp-result").dataset.entropyAfter = String(entropy(result));
    }
  } catch (e) { showError(e.message); }
}

function render(result) {
  state.result = result;
  $("translation").textContent = result.output.text;
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
  state.info.examples.forEach((ex, i) => select.append(el("option", { value: String(i), text: ex.source })));
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
