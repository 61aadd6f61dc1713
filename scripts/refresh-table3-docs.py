"""Write the results sections of docs/table3.md and docs/zh/table3.md from the committed run.

    aiayn table3 --report-only --out benchmarks/results/table3   # the report, from the results
    .venv/bin/python scripts/refresh-table3-docs.py              # then the docs, from both

tests/test_table3.py checks that the docs say what the results file and the report say.
"""

from __future__ import annotations

from pathlib import Path

from aiayn.table3.report import docs_results

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "table3"
BEGIN, END = "<!-- results: scripts/refresh-table3-docs.py -->", "<!-- /results -->"


def main() -> None:
    for doc, lang in ((ROOT / "docs" / "table3.md", "en"), (ROOT / "docs/zh/table3.md", "zh")):
        text = doc.read_text(encoding="utf-8")
        start, end = text.index(BEGIN), text.index(END) + len(END)
        text = f"{text[:start]}{BEGIN}\n{docs_results(OUT, lang)}{END}{text[end:]}"
        doc.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
