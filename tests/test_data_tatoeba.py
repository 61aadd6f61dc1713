"""Tatoeba bundles (manythings.org): a local file, a zip, a download from a local HTTP server,
the split by the English side, the licence file, and bad bundles answered in one line."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest

from aiayn.cli import main
from aiayn.data.corpora.tatoeba import bundle_name, parse_bundle, tatoeba_corpus
from aiayn.data.store import load_prepared
from aiayn.errors import UserError
from tests.multi30k_support import http_server

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "tatoeba" / "cmn.txt"
CREDIT = "CC-BY 2.0 (France) Attribution: tatoeba.org #{} (CK) & #{} (Martha)"
ZH = "我你他她们是不在有这个人的了好爱吃喝看说去来家书猫狗水茶天大小"


def bundle_text(n: int = 120) -> str:
    """A bundle in cmn.txt's form: a BOM, repeated English sentences, an empty last line."""
    lines = []
    for i in range(n):
        en = f"I see {i // 2} cats."  # every English sentence twice, two translations
        zh = f"我看见{i // 2}只猫{ZH[i % len(ZH)]}。"
        lines.append(f"{en}\t{zh}\t{CREDIT.format(i, 1000 + i)}")
    lines.append("I love you.\t我爱你。\t" + CREDIT.format(1434, 380195))
    return "\ufeff" + "\n".join(lines) + "\n"


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def prepare(out: Path, *flags: str) -> dict:
    argv = ["prepare", "--source", "tatoeba", "--out", str(out), "--vocab-size", "400"]
    assert main([*argv, "--no-progress", *flags]) == 0
    return load_prepared(out).manifest


def test_bundle_lines_are_parsed_with_their_attribution() -> None:
    pairs, credits = parse_bundle(bundle_text(4).encode(), "cmn.txt")
    assert pairs[0] == ("I see 0 cats.", "我看见0只猫我。")  # the BOM is gone
    assert len(pairs) == len(credits) == 5
    assert credits[-1].endswith("#380195 (Martha)")
    assert bundle_name("zh") == "cmn"
    with pytest.raises(UserError, match="no bundle known for language 'xx'"):
        bundle_name("xx")


def test_a_local_file_is_split_by_the_english_side_with_its_licence(tmp_path: Path) -> None:
    text = bundle_text()
    src = tmp_path / "cmn.txt"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "d"
    manifest = prepare(out, "--lang-pair", "en-zh", "--tatoeba-file", str(src))
    info = manifest["source_info"]
    assert info["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert info["bytes"] == len(text.encode())
    assert info["lines"] == 121
    assert info["licence"].startswith("CC-BY 2.0 FR")
    assert manifest["notices"] == ["LICENSE-data.txt"]
    notice = (out / "LICENSE-data.txt").read_text(encoding="utf-8")
    assert "CC-BY 2.0 FR" in notice
    assert "I love you.\t" + CREDIT.format(1434, 380195) in notice
    data = load_prepared(out)
    english = {name: set(data.texts(name)[0]) for name in ("train", "valid", "test")}
    assert not english["train"] & english["valid"]
    assert not english["train"] & english["test"]
    assert not english["valid"] & english["test"]
    assert all(english.values())
    # zh-en: the same pairs the other way round, the same split
    back = tmp_path / "back"
    prepare(back, "--lang-pair", "zh-en", "--tatoeba-file", str(src))
    assert set(load_prepared(back).texts("valid")[1]) == english["valid"]


def test_a_zip_or_the_environment_variable_stand_for_the_file(tmp_path: Path, monkeypatch) -> None:
    raw = bundle_text().encode()
    archive = write_zip(tmp_path / "cmn-eng.zip", {"cmn.txt": raw, "_about.txt": b"about"})
    manifest = prepare(tmp_path / "a", "--lang-pair", "en-zh", "--tatoeba-file", str(archive))
    assert manifest["source_info"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert manifest["source_info"]["zip_sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    monkeypatch.setenv("AIAYN_TATOEBA", str(archive))
    again = prepare(tmp_path / "b", "--lang-pair", "en-zh")
    assert again["source_info"]["sha256"] == manifest["source_info"]["sha256"]


def test_the_bundle_is_downloaded_once_into_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AIAYN_TATOEBA", raising=False)
    www = tmp_path / "www"
    www.mkdir()
    raw = bundle_text().encode()
    write_zip(www / "cmn-eng.zip", {"cmn.txt": raw})
    cache = tmp_path / "cache"
    with http_server(www) as url:
        base = url.rstrip("/")  # a mirror given without its last "/" is joined right
        m = prepare(
            tmp_path / "a", "--lang-pair", "en-zh", "--mirror", base, "--cache-dir", str(cache)
        )
    assert m["source_info"]["url"] == base + "/cmn-eng.zip"
    assert m["source_info"]["sha256"] == hashlib.sha256(raw).hexdigest()
    (www / "cmn-eng.zip").unlink()  # the cached copy is used: no server needed now
    corpus = tatoeba_corpus("zh", cache, base_url="http://127.0.0.1:9/")
    assert len(list(corpus.splits["all"]())) == 121


class _CutOff(http.server.BaseHTTPRequestHandler):
    """Announces the whole zip, sends half of it, and hangs up."""

    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body[: len(self.body) // 2])
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args) -> None:
        pass


def test_a_download_cut_off_halfway_leaves_nothing_as_if_complete(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("cmn.txt", bundle_text(400))
    handler = type("H", (_CutOff,), {"body": buf.getvalue()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with pytest.raises(UserError, match="cut off"):
            tatoeba_corpus("zh", tmp_path / "cache", base_url=url)
    finally:
        server.shutdown()
        server.server_close()
    leftovers = list((tmp_path / "cache").rglob("*"))
    assert not [p for p in leftovers if p.is_file()], leftovers


def test_a_cached_zip_that_is_not_complete_is_fetched_again(tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    write_zip(www / "cmn-eng.zip", {"cmn.txt": bundle_text().encode()})
    cached = tmp_path / "cache" / "tatoeba" / "cmn-eng.zip"
    cached.parent.mkdir(parents=True)
    cached.write_bytes((www / "cmn-eng.zip").read_bytes()[:100])
    with http_server(www) as url:
        corpus = tatoeba_corpus("zh", tmp_path / "cache", base_url=url)
    assert len(list(corpus.splits["all"]())) == 121
    assert cached.read_bytes() == (www / "cmn-eng.zip").read_bytes()


BAD = {
    "empty": (b"", "cmn.txt: is empty"),
    "one-column": (b"Hi.\n", "cmn.txt:1: expected 3 tab-separated fields"),
    "four-columns": (
        "Hi.\t嗨。\tCC\tx\n".encode(),
        "cmn.txt:1: expected 3 tab-separated fields (English, translation, attribution), found 4",
    ),
    "truncated": (bundle_text(10).encode()[:-40], "cmn.txt:11: the attribution column"),
    "truncated-early": (
        bundle_text(10).encode().partition("爱".encode())[0],
        "cmn.txt:11: expected 3 tab-separated",
    ),
    "latin1": ("Hi.\tHé\tCC\n".encode("latin-1"), "cmn.txt:1: invalid UTF-8"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_bundle_is_refused_in_one_line(case, tmp_path: Path, capsys) -> None:
    raw, expect = BAD[case]
    src = tmp_path / "cmn.txt"
    src.write_bytes(raw)
    out = tmp_path / "d"
    argv = ["prepare", "--source", "tatoeba", "--out", str(out), "--tatoeba-file", str(src)]
    assert main([*argv, "--lang-pair", "en-zh", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert expect in err[0], err
    assert not out.exists()


def test_bad_zips_files_and_languages_are_refused_in_one_line(tmp_path: Path, capsys) -> None:
    not_zip = tmp_path / "a.zip"
    not_zip.write_bytes(b"PK\x03\x04 this is no zip at all")
    no_member = write_zip(tmp_path / "b.zip", {"deu.txt": b"Hi.\tHallo.\tCC\n"})
    cases = [
        (["--tatoeba-file", str(not_zip)], "a.zip: not a complete zip file"),
        (["--tatoeba-file", str(no_member)], "b.zip: has no cmn.txt (it holds deu.txt)"),
        (["--tatoeba-file", str(tmp_path / "missing.txt")], "missing.txt: file not found"),
        (["--tatoeba-file", str(tmp_path)], "is a directory without cmn.txt"),
        (["--lang-pair", "en-xx", "--tatoeba-file", str(no_member)], "language 'xx'"),
        (["--lang-pair", "de-zh", "--tatoeba-file", str(no_member)], "--source tatoeba"),
        (["--multi30k-dir", str(tmp_path)], "--multi30k-dir applies to --source multi30k"),
    ]
    for flags, expect in cases:
        argv = ["prepare", "--source", "tatoeba", "--out", str(tmp_path / "o"), "--no-progress"]
        if "--lang-pair" not in flags:
            flags = [*flags, "--lang-pair", "en-zh"]
        assert main([*argv, *flags]) == 2, flags
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, (flags, err)
        assert expect in err[0], (flags, err)
        assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_file(), reason="the shared Tatoeba copy is not here")
def test_the_real_bundle_gives_about_1300_pairs_of_valid_and_test_and_one_piece_characters(
    tmp_path: Path,
) -> None:
    from aiayn.data.bpe import Tokenizer

    out = tmp_path / "d"
    flags = ("--lang-pair", "en-zh", "--tatoeba-file", str(SHARED), "--vocab-size", "8000")
    manifest = prepare(out, *flags)
    assert manifest["source_info"]["lines"] == 29155
    for split in ("valid", "test"):
        assert 1000 <= manifest["splits"][split]["pairs"] <= 1500, manifest["splits"]
    # a common character is one piece of the byte-level BPE, not its three UTF-8 bytes
    tok = Tokenizer.load(out / "tokenizer.json")
    for ch in "我你爱是的了不":
        assert len(tok.encode(ch)) == 1, ch
    # ... and so is nearly every character of the training text (docs/data.md: about 98%)
    text = (out / "text" / "train.zh").read_text(encoding="utf-8")
    han = [ch for ch in text if "\u4e00" <= ch <= "\u9fff"]
    pieces = {ch: len(tok.encode(ch)) for ch in set(han)}
    assert sum(pieces[ch] == 1 for ch in han) / len(han) > 0.97
    assert tok.decode(tok.encode("龘")) == "龘"  # a character never seen: bytes, not lost
    assert json.loads((out / "manifest.json").read_text())["tgt_lang"] == "zh"
