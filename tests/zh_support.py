"""For the tests of BLEU with a Chinese target (test_evaluate.py, test_train_bleu.py): a tiny
English-Chinese corpus, prepared as `aiayn prepare --source files --lang-pair en-zh` does."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

SUBJECTS = [
    ("I", "我"),
    ("You", "你"),
    ("He", "他"),
    ("She", "她"),
    ("We", "我们"),
    ("They", "他们"),
]
VERBS = [("like", "喜欢"), ("want", "想要"), ("see", "看见"), ("buy", "买")]
OBJECTS = [("apples", "苹果"), ("tea", "茶"), ("books", "书"), ("flowers", "花"), ("cats", "猫")]
# 120 pairs such as "We buy tea." - "我们买茶。": Chinese, written without spaces between words.
PAIRS = [
    (f"{s} {v} {o}.", f"{zs}{zv}{zo}。")
    for s, zs in SUBJECTS
    for v, zv in VERBS
    for o, zo in OBJECTS
]


def prepare_en_zh(root: Path) -> Path:
    """ROOT/data: the pairs prepared (BPE 300, a tenth each for valid and test)."""
    from aiayn.cli import main

    root.mkdir(parents=True, exist_ok=True)
    tsv, data = root / "en-zh.tsv", root / "data"
    tsv.write_text("".join(f"{en}\t{zh}\n" for en, zh in PAIRS), encoding="utf-8")
    argv = ["prepare", "--source", "files", "--tsv", str(tsv), "--lang-pair", "en-zh"]
    argv += ["--vocab-size", "300", "--valid-share", "0.1", "--test-share", "0.1"]
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        assert main([*argv, "--out", str(data), "--no-progress"]) == 0, quiet.getvalue()
    return data
