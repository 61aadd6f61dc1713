"""aiayn prepare --max-words, --min-words (a subset, in every split, counted) and --lowercase."""

import json
from pathlib import Path

from aiayn.cli import main
from aiayn.data.store import load_prepared

SHORT = [(f"the cat number {i}", f"die Katze Nummer {i}") for i in range(300)]
LONG = [
    (f"the very long sentence number {i} goes on", f"der sehr lange Satz Nummer {i} geht weiter")
    for i in range(100)
]


def test_max_words_keeps_only_short_pairs_in_every_split(tmp_path: Path) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{e}\t{d}\n" for e, d in SHORT + LONG), encoding="utf-8")
    out = tmp_path / "short"
    args = ["prepare", "--no-progress", "--source", "files", "--tsv", str(tsv)]
    assert main([*args, "--out", str(out), "--vocab-size", "300", "--max-words", "4"]) == 0
    data = load_prepared(out)
    kept = 0
    for split in ("train", "valid", "test"):
        sources, targets = data.texts(split)
        kept += len(sources)
        pairs = zip(sources, targets, strict=True)
        assert all(len(s.split()) <= 4 and len(t.split()) <= 4 for s, t in pairs)
    assert kept == len(SHORT)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dropped"]["over_max_words"] == len(LONG)  # dropped, never silently


def test_max_words_negative_is_a_clear_error(tmp_path: Path, capsys) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("a\tb\n", encoding="utf-8")
    args = ["prepare", "--source", "files", "--tsv", str(tsv), "--out", str(tmp_path / "o")]
    assert main([*args, "--max-words", "-1"]) == 2
    assert "--max-words" in capsys.readouterr().err


def test_min_words_drops_short_pairs_and_counts_them(tmp_path: Path) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{e}\t{d}\n" for e, d in SHORT + LONG), encoding="utf-8")
    out = tmp_path / "long"
    args = ["prepare", "--no-progress", "--source", "files", "--tsv", str(tsv), "--out", str(out)]
    assert main([*args, "--vocab-size", "300", "--min-words", "5", "--max-words", "8"]) == 0
    data = load_prepared(out)
    kept = [p for split in ("train", "valid", "test") for p in zip(*data.texts(split), strict=True)]
    assert len(kept) == len(LONG)
    assert all(5 <= max(len(s.split()), len(t.split())) <= 8 for s, t in kept)
    assert data.manifest["dropped"]["under_min_words"] == len(SHORT)
    assert data.manifest["options"]["min_words"] == 5


def test_min_words_above_max_words_is_a_clear_error(tmp_path: Path, capsys) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("a\tb\n", encoding="utf-8")
    out = tmp_path / "o"
    args = ["prepare", "--source", "files", "--tsv", str(tsv), "--out", str(out)]
    assert main([*args, "--min-words", "9", "--max-words", "4"]) == 2
    err = capsys.readouterr().err
    assert "--min-words 9 is above --max-words 4" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_lowercase_lowercases_every_split_and_the_tokenizers_input(tmp_path: Path) -> None:
    """--lowercase (the Multi30k literature's text): the references in DIR/text are lowercased,
    the manifest says so, and the tokenizer lowercases what it encodes, a user's input too."""
    tsv = tmp_path / "pairs.tsv"
    pairs = [(f"The Cat number {i}", f"Die Katze Nummer {i}") for i in range(300)]
    tsv.write_text("".join(f"{e}\t{d}\n" for e, d in pairs), encoding="utf-8")
    out = tmp_path / "lc"
    args = ["prepare", "--no-progress", "--source", "files", "--tsv", str(tsv), "--out", str(out)]
    assert main([*args, "--vocab-size", "300", "--lowercase"]) == 0
    data = load_prepared(out)
    for split in ("train", "valid", "test"):
        sources, targets = data.texts(split)
        assert sources
        assert all(s == s.lower() and s.startswith("the cat") for s in sources)
        assert all(t.startswith("die katze nummer") for t in targets)
    assert data.manifest["options"]["lowercase"] is True
    tok = data.tokenizer
    assert tok.encode("THE CAT") == tok.encode("the cat")
    assert tok.decode(tok.encode("Die KATZE")) == "die katze"
    cased = tmp_path / "cased"
    assert main([*args[:-2], "--out", str(cased), "--vocab-size", "300"]) == 0
    data = load_prepared(cased)
    assert data.texts("train")[0][0].startswith("The Cat")
    assert data.manifest["options"]["lowercase"] is False
    assert data.tokenizer.decode(data.tokenizer.encode("Die KATZE")) == "Die KATZE"
