"""aiayn prepare end to end (section 5.1) and every bad input: clear errors, nothing lost."""

import json
from pathlib import Path

import numpy as np
import pytest

from aiayn.cli import main
from aiayn.data import batch_from_indices, token_batches
from aiayn.data.corpora.simple import files_corpus
from aiayn.data.prepare import PrepareOptions, prepare, ratio_ok
from aiayn.data.store import load_prepared, verify_hashes
from aiayn.errors import UserError

EN = [
    f"The {a} {b} is on the table number {i}."
    for i, (a, b) in enumerate(
        [(a, b) for a in ("red", "green", "blue", "small") for b in ("cup", "book", "lamp", "key")]
        * 4
    )
]
DE = [
    s.replace("The", "Der").replace("is on the table number", "liegt auf dem Tisch Nummer")
    for s in EN
]


def run_cli(*args: str) -> int:
    return main(["prepare", "--no-progress", *args])


def prepare_files(src: Path, tgt: Path, out: Path, *args: str) -> int:
    """aiayn prepare --source files of src and tgt into out (vocabulary 300), with args."""
    files = ["--source", "files", "--src", str(src), "--tgt", str(tgt), "--vocab-size", "300"]
    return run_cli(*files, "--out", str(out), *args)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def check_directory(out: Path) -> None:
    """Every split: ids decode to the text files; lengths match; hashes match the manifest."""
    data = load_prepared(out)
    assert verify_hashes(data) == []
    for name in ("train", "valid", "test"):
        split = data.split(name)
        srcs, refs = data.texts(name)
        assert len(split) == len(srcs) == len(refs) == data.manifest["splits"][name]["pairs"]
        for i in range(len(split)):
            s, t = split.pair(i)
            assert data.tokenizer.decode(s) == srcs[i]
            assert data.tokenizer.decode(t) == refs[i]
        assert int(split.src_lengths.sum()) == data.manifest["splits"][name]["tokens"]["src"]


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_prepare_synthetic(tmp_path: Path, task: str, capsys) -> None:
    out = tmp_path / task
    assert run_cli("--source", task, "--out", str(out), "--num-pairs", "300") == 0
    check_directory(out)
    data = load_prepared(out)
    srcs, refs = data.texts("train")
    want = srcs if task == "copy" else [" ".join(s.split()[::-1]) for s in srcs]
    assert refs == want
    assert sum(s["pairs"] for s in data.manifest["splits"].values()) == 300
    assert "shared BPE vocabulary" in capsys.readouterr().out


def test_prepare_numbers_and_batches(tmp_path: Path) -> None:
    out = tmp_path / "num"
    assert (
        run_cli(
            "--source", "numbers", "--lang-pair", "en-fr", "--out", str(out), "--num-pairs", "400"
        )
        == 0
    )
    data = load_prepared(out)
    assert (data.src_lang, data.tgt_lang) == ("en", "fr")
    assert data.manifest["tokenizer"]["vocab_size"] <= 1000
    srcs, _ = data.texts("train")
    assert len(set(srcs)) == len(srcs)  # unique numbers
    train = data.split("train")
    batches = token_batches(train, 200, seed=1)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(train)))
    batch = batch_from_indices(train, batches[0])
    assert batch.src.numel() <= 200
    assert isinstance(train.src_tokens, np.memmap)


def test_prepare_files_and_reverse_direction(tmp_path: Path) -> None:
    src, tgt = write(tmp_path / "a.en", EN), write(tmp_path / "a.de", DE)
    out = tmp_path / "files"
    assert prepare_files(src, tgt, out) == 0
    check_directory(out)
    tsv = tmp_path / "pairs.tsv"
    write(tsv, [f"{d}\t{e}" for e, d in zip(EN, DE, strict=True)])
    out2 = tmp_path / "tsv"
    assert (
        run_cli(
            "--source",
            "files",
            "--tsv",
            str(tsv),
            "--lang-pair",
            "de-en",
            "--out",
            str(out2),
            "--vocab-size",
            "300",
        )
        == 0
    )
    data = load_prepared(out2)
    srcs, _ = data.texts("train")
    assert all(s.startswith("Der") for s in srcs)
    assert (data.text_paths("train")[0]).name == "train.de"


def test_no_english_sentence_on_two_sides_of_a_split(tmp_path: Path) -> None:
    # every English sentence three times, with different German translations
    en = [e for e in EN[:16] for _ in range(3)]
    de = [f"{d} ({k})" for d in DE[:16] for k in range(3)]
    corpus = files_corpus(("en", "de"), write(tmp_path / "x.en", en), write(tmp_path / "x.de", de))
    opts = PrepareOptions(
        src_lang="en", tgt_lang="de", vocab_size=300, valid_share=0.2, test_share=0.2
    )
    manifest = prepare(corpus, tmp_path / "out", opts)
    data = load_prepared(tmp_path / "out")
    seen = {name: set(data.texts(name)[0]) for name in ("train", "valid", "test")}
    assert all(seen.values())
    assert not seen["train"] & seen["valid"]
    assert not seen["train"] & seen["test"]
    assert not seen["valid"] & seen["test"]
    assert sum(s["pairs"] for s in manifest["splits"].values()) == 48  # nothing lost


def test_different_line_counts_name_both_files(tmp_path: Path, capsys) -> None:
    src, tgt = write(tmp_path / "a.en", EN), write(tmp_path / "a.de", DE[:-2])
    assert (
        run_cli(
            "--source", "files", "--src", str(src), "--tgt", str(tgt), "--out", str(tmp_path / "o")
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"{src} has {len(EN)} lines" in err
    assert f"{tgt} has {len(EN) - 2}" in err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_invalid_utf8_strict_names_file_and_line(tmp_path: Path, capsys) -> None:
    src = write(tmp_path / "a.en", EN)
    tgt = tmp_path / "a.de"
    raw = "".join(d + "\n" for d in DE).encode().splitlines(keepends=True)
    raw[6] = b"Der Stra\xdfe ist kaputt.\n"  # Latin-1, not UTF-8, on line 7
    tgt.write_bytes(b"".join(raw))
    assert prepare_files(src, tgt, tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert f"{tgt}:7: invalid UTF-8" in err
    assert "--errors replace" in err
    assert prepare_files(src, tgt, tmp_path / "o2", "--errors", "replace") == 0
    assert "invalid UTF-8 replaced in 1 lines" in capsys.readouterr().out
    data = load_prepared(tmp_path / "o2")
    assert data.manifest["replaced_invalid_utf8_lines"] == 1
    alltext = [t for n in ("train", "valid", "test") for t in data.texts(n)[1]]
    assert "Der Stra\ufffde ist kaputt." in alltext


def test_tsv_bad_line(tmp_path: Path, capsys) -> None:
    tsv = write(tmp_path / "p.tsv", ["a\tb", "only one field", "c\td"])
    assert run_cli("--source", "files", "--tsv", str(tsv), "--out", str(tmp_path / "o")) == 2
    assert f"{tsv}:2: expected 2 tab-separated fields" in capsys.readouterr().err


def test_dropped_pairs_are_counted(tmp_path: Path, capsys) -> None:
    en = [*EN, "", "   ", "Fine.", "Short.", "Long " * 300, EN[0]]
    de = [*DE, "Leer.", "\t", "", "x" * 200, "Lang " * 300, DE[0]]
    src, tgt = write(tmp_path / "a.en", en), write(tmp_path / "a.de", de)
    limits = ["--max-len", "100", "--valid-share", "0", "--test-share", "0"]
    assert prepare_files(src, tgt, tmp_path / "o", *limits) == 0
    out = capsys.readouterr().out
    dropped = load_prepared(tmp_path / "o").manifest["dropped"]
    assert dropped == {"duplicate": 1, "empty": 3, "length_ratio": 1, "over_max_len": 1}
    assert "empty: 3" in out
    assert "length_ratio: 1" in out
    total = sum(s["pairs"] for s in load_prepared(tmp_path / "o").manifest["splits"].values())
    assert total + sum(dropped.values()) == len(en)  # nothing silently lost


def test_ratio_rule() -> None:
    assert ratio_ok("OK", "In Ordnung", 3.0)
    assert ratio_ok("ninety-seven", "siebenundneunzig", 1.5)
    assert not ratio_ok("Yes.", "A very long and different sentence that is no translation.", 3.0)


def test_interrupted_prepare_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    import aiayn.data.prepare as prep

    original = prep._encode_split

    def interrupted(name, *args, **kwargs):
        if name == "valid":
            raise KeyboardInterrupt
        return original(name, *args, **kwargs)

    monkeypatch.setattr(prep, "_encode_split", interrupted)
    out = tmp_path / "data"
    assert run_cli("--source", "copy", "--out", str(out), "--num-pairs", "100") == 130
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no half-written sibling either
    with pytest.raises(UserError, match="no prepared data directory"):
        load_prepared(out)
    # an existing complete directory survives an interrupted --overwrite untouched
    monkeypatch.setattr(prep, "_encode_split", original)
    assert run_cli("--source", "copy", "--out", str(out), "--num-pairs", "100") == 0
    before = (out / "manifest.json").read_bytes()
    monkeypatch.setattr(prep, "_encode_split", interrupted)
    assert (
        run_cli("--source", "reverse", "--out", str(out), "--num-pairs", "100", "--overwrite")
        == 130
    )
    assert (out / "manifest.json").read_bytes() == before
    load_prepared(out)


def test_existing_directory_is_not_replaced_without_overwrite(tmp_path: Path, capsys) -> None:
    out = tmp_path / "data"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert run_cli("--source", "copy", "--out", str(out), "--num-pairs", "50") == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep me"


def test_incomplete_directories_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert run_cli("--source", "copy", "--out", str(out), "--num-pairs", "60") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    # a killed run's leftovers: files but no manifest
    half = tmp_path / "half"
    half.mkdir()
    (half / "tokenizer.json").write_text((out / "tokenizer.json").read_text())
    with pytest.raises(UserError, match=r"incomplete.*no manifest"):
        load_prepared(half)
    # a truncated id file
    with (out / "ids" / "train.src.bin").open("r+b") as fh:
        fh.truncate(4)
    with pytest.raises(UserError, match=r"ids/train\.src\.bin"):
        load_prepared(out)
    # a manifest edited by hand: its own SHA-256 no longer matches
    manifest["complete"] = False
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=r"manifest\.json: damaged"):
        load_prepared(out)
    # a manifest that does not say complete (and has no own hash, as an older aiayn wrote)
    del manifest["manifest_sha256"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="not a complete"):
        load_prepared(out)


def test_unknown_split_and_bad_flags(tmp_path: Path, capsys) -> None:
    out = tmp_path / "data"
    assert run_cli("--source", "copy", "--out", str(out), "--num-pairs", "60") == 0
    with pytest.raises(UserError, match="no split 'dev'"):
        load_prepared(out).split("dev")
    assert run_cli("--source", "numbers", "--lang-pair", "de-fr", "--out", str(tmp_path / "x")) == 2
    assert run_cli("--source", "files", "--out", str(tmp_path / "y")) == 2
    assert "--src FILE --tgt FILE" in capsys.readouterr().err


def test_bpe_learned_on_an_evenly_spaced_sample(tmp_path: Path) -> None:
    corpus = files_corpus(("en", "de"), write(tmp_path / "x.en", EN), write(tmp_path / "x.de", DE))
    opts = PrepareOptions(
        src_lang="en", tgt_lang="de", vocab_size=300, bpe_max_pairs=10, valid_share=0, test_share=0
    )
    manifest = prepare(corpus, tmp_path / "out", opts)
    n_train = manifest["splits"]["train"]["pairs"]
    every = -(-n_train // 10)
    assert manifest["tokenizer"]["trained_on_pairs"] == -(-n_train // every) <= 10
    check_directory(tmp_path / "out")  # the whole corpus is still encoded exactly


def test_sigterm_is_an_interruption(tmp_path: Path, monkeypatch) -> None:
    import os
    import signal

    import aiayn.data.prepare as prep

    original = prep._encode_split

    def killed(name, *args, **kwargs):
        if name == "test":
            os.kill(os.getpid(), signal.SIGTERM)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(prep, "_encode_split", killed)
    before = signal.getsignal(signal.SIGTERM)
    assert run_cli("--source", "copy", "--out", str(tmp_path / "d"), "--num-pairs", "80") == 130
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == before
