"""Write the generated blocks of the docs from the committed results files, or check them.

    .venv/bin/python scripts/refresh-docs.py           # Table 3's report and plots, every block
    .venv/bin/python scripts/refresh-docs.py --blocks  # the blocks alone (Table 3's report kept)

The blocks: the results table of README.md and README.zh-CN.md (a row per recipe quoted: task,
budget, machine, result, command, results file; from recipes/results/, the shipped en-zh's
results and its experiment's final) and the results sections of docs/table3.md and
docs/zh/table3.md (from benchmarks/results/table3, after its report.md, report.html and plots
have been rewritten from its results.jsonl, as `aiayn table3 --report-only` does). Each sits
between
`<!-- generated: scripts/refresh-docs.py NAME -->` and `<!-- /generated -->`;
tests/test_readme.py regenerates them and compares.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE3 = ROOT / "benchmarks" / "results" / "table3"
RESULTS = ROOT / "recipes" / "results"
BEGIN, END = "<!-- generated: scripts/refresh-docs.py {} -->", "<!-- /generated -->"
PRETRAINED = ROOT / "aiayn" / "pretrained"
# The shipped models, in the table's order, each with the recipe that trains it again.
SHIPPED = {"en-zh": "tatoeba-en-zh", "en-de-multi30k": "en-de-multi30k"}
PUBLISHED_SMALL = 41.0  # Moses-tokenized, lowercased BLEU, 4 + 4 layers, d_model 128 (docs)
HEAD = {
    "en": "| task | budget | machine | result (test) | command | results file |",
    "zh": "| 任务 | 预算 | 机器 | 结果（测试集） | 命令 | 结果文件 |",
}


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _peaks(files: list[dict]) -> str:
    return " and ".join(f"{f['machine']['matmul_peak_gflops']:.0f}" for f in files)


# The words of the table in each language: {name} fields are filled in from the results files.
WORDS = {
    "en": {
        "demo": "`make demo`: {task}, {n:,} sentences",
        "multi30k": "Multi30k EN-DE test2016",
        "packaged": "the packaged EN-DE demo subset",
        "steps": "{steps:,} steps ({minutes} minutes)",
        "cpu": "2-core CPU, {peak} GFLOP/s",
        "threads": ", {threads} threads",
        "demo_result": "sacreBLEU **{bleu:.1f}**, chrF2 {chrf:.1f}",
        "m30k": "Multi30k EN-DE test2016, `{shape}`",
        "60": "60 minutes: {steps} updates",
        "conv": "to convergence: {steps} updates ({minutes:.0f} min)",
        "m30k_result": "sacreBLEU {bleu}{seeds}; Moses-tokenized lowercased {moses}",
        "seeds": " (seeds 1, 2)",
        "and": " and ",
        "list": ", ",
        "also": "{command} (and `--seed 2`)",
        "en-zh": "Tatoeba EN-ZH, {n:,} sentences (the shipped `en-zh`)",
        "en-de-multi30k": "Multi30k EN-DE test2016 (the shipped `en-de-multi30k`)",
        "shipped_budget": "{minutes:.0f} minutes: {steps:,} updates",
        "shipped_result": "sacreBLEU **{bleu:.1f}**{tok}, chrF2 {chrf:.1f}, beam 4",
        "tok_zh": " (zh tokenizer)",
        "paper": [
            "the paper: newstest2014 EN-DE (Table 2)",
            "12 hours (base), 3.5 days (big)",
            "8 P100",
            "27.3 (base), 28.4 (big), tokenized, compound-split",
        ],
        "note": "Multi30k decoded with beam {beam} and alpha {alpha:g}, chosen on valid (the "
        "paper's beam 4, alpha 0.6, and the command each results file records: "
        "[the experiment log](experiments/2026-12-multi30k-search/README.md)). The best text-only "
        "small Transformer on test2016 we know of: {published} BLEU, Moses-tokenized and "
        "lowercased; ours in that flavour: {small:.1f} (`small`), {mid:.1f} (`mid`).",
    },
    "zh": {
        "demo": "`make demo`：{task}，{n:,} 句",
        "multi30k": "Multi30k 英德 test2016",
        "packaged": "打包英德语料的演示子集",
        "steps": "{steps:,} 步（{minutes} 分钟）",
        "cpu": "双核 CPU，{peak} GFLOP/s",
        "threads": "，{threads} 个线程",
        "demo_result": "sacreBLEU **{bleu:.1f}**，chrF2 {chrf:.1f}",
        "m30k": "Multi30k 英德 test2016，`{shape}`",
        "60": "60 分钟：{steps} 步",
        "conv": "训练至收敛：{steps} 步（{minutes:.0f} 分钟）",
        "m30k_result": "sacreBLEU {bleu}{seeds}；Moses 分词并小写后 {moses}",
        "seeds": "（种子 1、2）",
        "and": " 和 ",
        "list": "、",
        "also": "{command}（以及 `--seed 2`）",
        "en-zh": "Tatoeba 英译中，{n:,} 句（自带的 `en-zh`）",
        "en-de-multi30k": "Multi30k 英德 test2016（自带的 `en-de-multi30k`）",
        "shipped_budget": "{minutes:.0f} 分钟：{steps:,} 步",
        "shipped_result": "sacreBLEU **{bleu:.1f}**{tok}，chrF2 {chrf:.1f}，束宽 4",
        "tok_zh": "（zh 分词）",
        "paper": [
            "论文：newstest2014 英德（表 2）",
            "12 小时（base），3.5 天（big）",
            "8 块 P100",
            "27.3（base），28.4（big），分词并拆分复合词",
        ],
        "note": "Multi30k 用束宽 {beam}、alpha {alpha:g} 解码，在验证集上选出（论文的束宽 4、"
        "alpha 0.6 的结果，以及每个结果文件记下的命令，见"
        "[实验记录](experiments/2026-12-multi30k-search/README.md)）。据我们所知，纯文本的小型 "
        "Transformer 在 test2016 上最好的结果是 {published} BLEU（Moses 分词并小写）；同一口径下"
        "我们的 `small` 为 {small:.1f}，`mid` 为 {mid:.1f}。",
    },
}
DEMOS = {
    "demo-multi30k.json": "`make demo`",
    "demo-packaged.json": "`aiayn demo --source packaged`",
}
# (recipe, its results files): the Multi30k recipes. The 60-minute and converged `small` runs
# were decoded again with the recipe's beam and alpha by the decode round (multi30k-decode.json).
MULTI30K = [
    ("multi30k-small", "small", ["multi30k-final-60min-dropout0.2-seed1.json",
                                 "multi30k-final-60min-dropout0.2-seed2.json"]),
    ("multi30k-converged", "small", ["multi30k-converged-dropout0.2.json"]),
    ("multi30k-mid", "mid", ["multi30k-converged-mid.json"]),
]  # fmt: skip
NOTE = r"in ([\d.]+) minutes on a machine with an fp32 matmul peak of (\S+) GFLOP/s on (\d+)"


def _demo_row(name: str, w: dict) -> list[str]:
    """A `make demo` run: its budget and machine are in its note."""
    r = _read(RESULTS / name)
    minutes, peak, threads = re.search(NOTE, r["demo"]["note"]).groups()
    task = w[r["demo"]["corpus"]]
    return [
        w["demo"].format(task=task, n=r["speed"]["sentences"]),
        w["steps"].format(steps=r["demo"]["steps"], minutes=minutes),
        w["cpu"].format(peak=peak) + w["threads"].format(threads=threads),
        w["demo_result"].format(bleu=r["sacrebleu"]["score"], chrf=r["chrf"]["score"]),
        DEMOS[name],
        f"`{name}`",
    ]


def _multi30k_row(recipe: str, shape: str, names: list[str], w: dict) -> list[str]:
    decode = _read(RESULTS / "multi30k-decode.json")["test"]
    files = [_read(RESULTS / n) for n in names]
    scored = [decode.get(n, f) for n, f in zip(names, files, strict=True)]
    command = f"`python recipes/run.py recipes/{recipe}.toml`"
    shown = [*names, *(["multi30k-decode.json"] if names[0] in decode else [])]
    figures = {
        "bleu": w["list"].join(f"**{s['sacrebleu']['score']:.1f}**" for s in scored),
        "moses": w["list"].join(f"{s['moses_bleu']['score']:.1f}" for s in scored),
        "seeds": w["seeds"] if len(files) > 1 else "",
    }
    steps = w["and"].join(f"{f['steps']:,}" for f in files)
    minutes = max(f["training_minutes"] for f in files)
    peaks = w["and"].join(f"{f['machine']['matmul_peak_gflops']:.0f}" for f in files)
    return [
        w["m30k"].format(shape=shape),
        w["60" if "budget_minutes" in files[0] else "conv"].format(steps=steps, minutes=minutes),
        w["cpu"].format(peak=peaks),
        w["m30k_result"].format(**figures),
        w["also"].format(command=command) if len(files) > 1 else command,
        w["list"].join(f"`{n}`" for n in shown),
    ]


def _shipped_row(name: str, recipe: str, w: dict) -> list[str]:
    """A shipped model: test figures of the shipped file from its results file, the training's
    updates, minutes and machine from the run record it names (chosen_by)."""
    results = _read(PRETRAINED / f"{name}.results.json")
    test, run = results["test"], _read(ROOT / results["chosen_by"])
    tok = w["tok_zh"] if "tok:zh" in test["signature"] else ""
    return [
        w[name].format(n=test["sentences"]),
        w["shipped_budget"].format(
            minutes=run["training_minutes"], steps=run.get("updates") or run["steps"]
        ),
        w["cpu"].format(peak=f"{run['machine']['matmul_peak_gflops']:.0f}"),
        w["shipped_result"].format(bleu=test["sacrebleu"], chrf=test["chrf"], tok=tok),
        f"`python recipes/run.py recipes/{recipe}.toml`",
        f"`aiayn/pretrained/{name}.results.json`",
    ]


def results_table(lang: str) -> str:
    """README's results table in LANG ("en" or "zh"), and what it is compared with."""
    w = WORDS[lang]
    rows = [_demo_row(name, w) for name in DEMOS]
    rows += [_multi30k_row(*recipe, w) for recipe in MULTI30K]
    rows += [_shipped_row(name, recipe, w) for name, recipe in SHIPPED.items()]
    rows += [[*w["paper"], "", ""]]
    lines = [HEAD[lang], "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    decode = _read(RESULTS / "multi30k-decode.json")
    note = w["note"].format(
        **decode["chosen"],
        published=PUBLISHED_SMALL,
        small=decode["test"]["multi30k-converged-dropout0.2.json"]["moses_bleu"]["score"],
        mid=_read(RESULTS / "multi30k-converged-mid.json")["moses_bleu"]["score"],
    )
    return "\n".join(lines) + "\n\n" + note + "\n"


def blocks() -> dict[Path, dict[str, str]]:
    """Every generated block: {file: {name: text}}."""
    from aiayn.table3.report import docs_results

    return {
        ROOT / "README.md": {"results": results_table("en")},
        ROOT / "README.zh-CN.md": {"results": results_table("zh")},
        ROOT / "docs" / "table3.md": {"table3": docs_results(TABLE3, "en")},
        ROOT / "docs" / "zh" / "table3.md": {"table3": docs_results(TABLE3, "zh")},
    }


def block(text: str, name: str) -> str:
    """The text between NAME's markers in TEXT."""
    begin = BEGIN.format(name) + "\n"
    start = text.index(begin) + len(begin)
    return text[start : text.index(END, start)]


def main(argv: list[str]) -> int:
    if "--blocks" not in argv:  # Table 3's report, HTML page and plots from its results
        from aiayn.table3.run import write_report

        write_report(TABLE3)
    for doc, wanted in blocks().items():
        text = doc.read_text(encoding="utf-8")
        for name, body in wanted.items():
            old = block(text, name)
            start = text.index(BEGIN.format(name) + "\n") + len(BEGIN.format(name)) + 1
            text = text[:start] + body + text[start + len(old) :]
        doc.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
