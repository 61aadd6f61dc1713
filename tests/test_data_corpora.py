"""Corpus sources on small fixtures in the real formats; downloads against a local HTTP server."""

import gzip
import hashlib
import io
import shutil
import struct
import subprocess
import tarfile
from pathlib import Path

import pytest

from aiayn.cli import main
from aiayn.data.corpora import packaged
from aiayn.data.corpora.ding import parse_line
from aiayn.data.corpora.download import default_cache_dir
from aiayn.data.corpora.libreoffice import catalog_pairs, help_paragraphs
from aiayn.data.corpora.multi30k import multi30k_corpus
from aiayn.data.prepare import PrepareOptions, prepare
from aiayn.data.store import load_prepared
from aiayn.errors import UserError
from tests.multi30k_support import http_server, write_gz, write_raw

REPO = Path(__file__).resolve().parents[1]
SHARED_MULTI30K = REPO.parent / "shared" / "data" / "multi30k"


# ---------------------------------------------------------------- fixtures in the real formats
def write_mo(path: Path, messages: dict[str, str]) -> None:
    """A GNU .mo catalog (little-endian, no hash table), written from its specification."""
    keys = sorted(messages)
    ids = [k.encode() for k in keys]
    strs = [messages[k].encode() for k in keys]
    n = len(keys)
    header = 7 * 4
    orig_table, trans_table = header, header + 8 * n
    data_start = trans_table + 8 * n
    blob, orig, trans = b"", [], []
    for table, items in ((orig, ids), (trans, strs)):
        for item in items:
            table.append((len(item), data_start + len(blob)))
            blob += item + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, n, orig_table, trans_table, 0, 0)
    out += b"".join(struct.pack("<2I", *e) for e in orig + trans)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out + blob)


def page(paragraphs: list[tuple[str, str]], lang: str) -> str:
    body = "".join(f'<p id="{i}" class="paragraph">{t}</p>\n' for i, t in paragraphs)
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><title>T</title><script>var x = "<p>";'
        f'</script></head><body><div id="DisplayArea">\n<h1 id="hd_1">{paragraphs[0][1]}</h1>\n'
        f"{body}</div></body></html>"
    )


EN_PAGE = [
    ("par_1", "Choose <span class='emph'>Insert - Frame</span>, and click OK."),
    ("par_2", "Apple"),
    ("par_3", "Banana"),
    ("par_2", "Second occurrence of an id."),
    ("par_4", "%s"),
    ("par_5", "LibreOffice"),
    ("par_6", "Only in English."),
]
# sorted by the translated names: pairing by position would be wrong
DE_PAGE = [
    ("par_1", "Wählen Sie <span class='emph'>Einfügen - Rahmen</span> und klicken Sie auf OK."),
    ("par_3", "Banane"),
    ("par_2", "Apfel"),
    ("par_2", "Zweites Vorkommen einer ID."),
    ("par_4", "%s"),
    ("par_5", "LibreOffice"),
]
DING = (
    "# Version :: test\n"
    "Abfall {m} | Bitte nicht wegwerfen! | Er / Sie kommt. :: "
    "waste | Please do not throw away! | He / She comes.\n"
    "Haus {n} [arch.] | Das Haus ist alt. (Notiz); Das Gebäude ist alt. :: "
    "house | The house is old.; The building is old.\n"
    "nur Wörter | noch mehr :: only words | even more\n"
)


def build_trees(root: Path) -> None:
    help_en = root / "libreoffice-help-en-us/usr/share/libreoffice/help/en-US/text/swriter"
    help_de = root / "libreoffice-help-de/usr/share/libreoffice/help/de/text/swriter"
    for d, lines, lang in ((help_en, EN_PAGE, "en-US"), (help_de, DE_PAGE, "de")):
        d.mkdir(parents=True)
        (d / "frame.html").write_text(page(lines, lang), encoding="utf-8")
    (help_en / "only_en.html").write_text(page([("p", "Lonely.")], "en-US"), encoding="utf-8")
    mo = root / "libreoffice-l10n-de/usr/lib/libreoffice/program/resource/de/LC_MESSAGES/sw.mo"
    write_mo(
        mo,
        {
            "": "Content-Type: text/plain; charset=UTF-8\n",
            "menu|file\x04_File": "_Datei",
            "STR_SAVE\x04~Save Document": "Dokument ~speichern",
            "STR_X\x04%1 selected": "%1 ausgewählt",
            "STR_Y\x04<b>%s</b>": "<b>%s</b>",
            "label_foo": "label_foo_de",
            "STR_Z\x04Apple": "Apfel",
            "STR_N\x04%1 slide\x00%1 slides": "%1 Folie\x00%1 Folien",
        },
    )
    ding = root / "trans-de-en/usr/share/trans/de-en"
    ding.parent.mkdir(parents=True)
    ding.write_text(DING, encoding="utf-8")


# ------------------------------------------------------------------------ extraction logic
def test_help_paragraphs_join_on_id_and_occurrence(tmp_path: Path) -> None:
    build_trees(tmp_path)
    pairs = {(en, de) for _, en, de, reason in packaged.extract_pairs(tmp_path, "de") if not reason}
    assert ("Apple", "Apfel") in pairs
    assert ("Banana", "Banane") in pairs
    assert ("Second occurrence of an id.", "Zweites Vorkommen einer ID.") in pairs
    assert (
        "Choose Insert - Frame, and click OK.",
        "Wählen Sie Einfügen - Rahmen und klicken Sie auf OK.",
    ) in pairs
    assert not any("Only in English" in en or "Lonely" in en for en, _ in pairs)


def test_software_string_cleaning(tmp_path: Path) -> None:
    build_trees(tmp_path)
    rows = list(packaged.extract_pairs(tmp_path, "de"))
    kept = {(en, de) for origin, en, de, reason in rows if origin == "ui" and reason is None}
    reasons = {reason for _, _, _, reason in rows if reason}
    assert ("File", "Datei") in kept  # accelerators stripped
    assert ("Save Document", "Dokument speichern") in kept
    assert ("%1 slide", "%1 Folie") in kept  # plural form 0
    assert ("%1 selected", "%1 ausgewählt") in kept
    assert {"identical", "placeholder_or_markup", "identifier"} <= reasons
    assert not any("slides" in en for en, _ in kept)


def test_catalog_reader_and_html_parser_units(tmp_path: Path) -> None:
    mo = tmp_path / "x.mo"
    write_mo(mo, {"": "Content-Type: text/plain; charset=UTF-8\n", "ctx\x04Hello": "Hallo"})
    assert list(catalog_pairs(mo)) == [("Hello", "Hallo")]
    html = '<td id="t">a<p id="p">b &amp; c</p>d<br>e</td><script>"<p id=x>"</script>'
    assert help_paragraphs(html) == {("t", 0): "ad e", ("p", 0): "b & c"}
    nested = '<li id="o">x<li id="i">y</li>z<li>w</li>v</li><p id="after">ok</p>'
    assert help_paragraphs(nested) == {("o", 0): "xzwv", ("i", 0): "y", ("after", 0): "ok"}


def test_ding_examples() -> None:
    lines = DING.splitlines()
    assert parse_line(lines[0]) == []
    assert parse_line(lines[1]) == [("Bitte nicht wegwerfen!", "Please do not throw away!")]
    assert parse_line(lines[2]) == [("Das Haus ist alt.", "The house is old.")]
    assert parse_line(lines[3]) == []


def build_debs(root: Path, debs: Path) -> None:
    """Real .deb files of the fixture trees, so the packaged source runs without apt."""
    debs.mkdir(parents=True)
    for pkg in packaged.PACKAGES["de"]:
        control = root / pkg / "DEBIAN"
        control.mkdir(parents=True)
        (control / "control").write_text(
            f"Package: {pkg}\nVersion: 1:0.1-1\nArchitecture: all\n"
            "Maintainer: test <t@example.org>\nDescription: fixture\n"
        )
        deb = debs / f"{pkg}_1%3a0.1-1_all.deb"
        subprocess.run(
            ["dpkg-deb", "--build", "-Zgzip", str(root / pkg), str(deb)],
            check=True,
            capture_output=True,
        )


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_packaged_prepare_from_cached_debs(tmp_path: Path, monkeypatch, capsys) -> None:
    build_trees(tmp_path / "trees")
    cache = tmp_path / "cache"
    build_debs(tmp_path / "trees", cache / "debs")
    real_which = shutil.which
    no_apt = lambda tool: None if tool == "apt-get" else real_which(tool)  # noqa: E731
    monkeypatch.setattr(packaged.shutil, "which", no_apt)  # apt-get is never needed
    out = tmp_path / "out"
    args = ["prepare", "--no-progress", "--cache-dir", str(cache), "--vocab-size", "300"]
    assert main([*args, "--out", str(out)]) == 0
    data = load_prepared(out)
    texts = [t for n in ("train", "valid", "test") for t in data.texts(n)[0]]
    assert "Apple" in texts
    assert "Please do not throw away!" in texts
    assert data.manifest["dropped"]["source:help:identical"] == 1
    assert data.manifest["source_info"]["kept_by_origin"]["ding"] == 2
    cached = list((cache / "pairs").glob("*.tsv"))
    assert len(cached) == 1
    # second run: the cached pairs are used (the unpacked trees are gone)
    shutil.rmtree(tmp_path / "trees")
    assert main([*args, "--out", str(tmp_path / "out2")]) == 0
    assert load_prepared(tmp_path / "out2").manifest["splits"] == data.manifest["splits"]
    # --origins keeps only the named parts and counts the rest as dropped
    only = tmp_path / "out3"
    assert main([*args, "--origins", "help,ui", "--out", str(only)]) == 0
    kept = load_prepared(only)
    kept_texts = [t for n in ("train", "valid", "test") for t in kept.texts(n)[0]]
    assert "Please do not throw away!" not in kept_texts  # a Ding sentence
    assert "Apple" in kept_texts
    assert len(kept_texts) == len(texts) - 2  # the fixture's two Ding pairs
    assert kept.manifest["dropped"]["source:ding:not_selected"] == 2
    assert kept.manifest["source_info"]["origins"] == ["help", "ui"]
    capsys.readouterr()
    assert main([*args, "--origins", "help,wiki", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "--origins: wiki is not a part of the packaged corpus" in err
    assert "Traceback" not in err
    assert not (tmp_path / "bad").exists()
    assert (
        main(["prepare", "--source", "numbers", "--origins", "ui", "--out", str(tmp_path / "n")])
        == 2
    )
    assert "--origins applies to --source packaged" in capsys.readouterr().err


def test_missing_apt_get_says_what_to_do(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(packaged.shutil, "which", lambda _: None)
    assert main(["prepare", "--cache-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "apt-get not found" in err
    assert "--source multi30k" in err


def test_missing_package_lists_suggest_apt_update(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(packaged.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(packaged, "_apt_lists_missing", lambda: True)
    failed = subprocess.CompletedProcess([], 100, "", "E: Unable to locate package trans-de-en")
    monkeypatch.setattr(packaged, "_run", lambda cmd, cwd: failed)
    with pytest.raises(UserError, match=r"apt-get update.*--source multi30k"):
        packaged.download_debs(packaged.PACKAGES["de"], tmp_path)


@pytest.mark.slow
def test_real_packaged_corpus_if_cached(tmp_path: Path) -> None:
    cache = default_cache_dir()
    if not all(list((cache / "debs").glob(f"{p}_*.deb")) for p in packaged.PACKAGES["de"]):
        pytest.skip("the packaged .deb files are not in the cache; run `aiayn prepare` once")
    out = tmp_path / "real"
    assert main(["prepare", "--no-progress", "--out", str(out), "--vocab-size", "2000"]) == 0
    data = load_prepared(out)
    assert sum(s["pairs"] for s in data.manifest["splits"].values()) > 60_000


# ------------------------------------------------------------------- a local HTTP server
@pytest.fixture
def http_root(tmp_path: Path):
    """(directory, base URL) of an HTTP server on 127.0.0.1 serving that directory."""
    root = tmp_path / "www"
    root.mkdir()
    with http_server(root) as url:
        yield root, url


M30K = {
    "train": [(f"A dog number {i} runs.", f"Ein Hund Nummer {i} rennt.") for i in range(40)],
    "val": [("Two cats sleep.", "Zwei Katzen schlafen."), ("A man sings.", "Ein Mann singt.")],
    "test_2016_flickr": [
        ("A dog number 3 runs.", "Ein Hund Nummer 3 rennt."),
        ("A child plays.", "Ein Kind spielt."),
    ],
}


def prepare_multi30k(out: Path, *where: str) -> None:
    """aiayn prepare --source multi30k from where (flags), checked against M30K."""
    args = ["prepare", "--source", "multi30k", *where, "--out", str(out), "--vocab-size", "300"]
    assert main([*args, "--no-progress"]) == 0
    data = load_prepared(out)
    counts = {n: s["pairs"] for n, s in data.manifest["splits"].items()}
    # the train pair whose English is in test is dropped as an overlap
    assert counts == {"train": 39, "valid": 2, "test": 2}
    assert data.manifest["dropped"]["overlap_with_valid_test"] == 1
    assert data.texts("test")[1][1] == "Ein Kind spielt."


def test_multi30k_from_a_local_directory(tmp_path: Path) -> None:
    write_raw(tmp_path / "m30k", M30K)
    out = tmp_path / "out"
    prepare_multi30k(out, "--multi30k-dir", str(tmp_path / "m30k"))
    assert load_prepared(out).manifest["source_info"]["matches_official_sha256"] is False


def test_multi30k_from_the_environment_variable(tmp_path: Path, monkeypatch) -> None:
    """$AIAYN_MULTI30K stands for --multi30k-dir (as for `aiayn demo`): nothing is downloaded."""
    from aiayn.data.corpora import multi30k

    write_raw(tmp_path / "m30k", M30K)
    monkeypatch.setenv(multi30k.ENV, str(tmp_path / "m30k"))
    out = tmp_path / "out"
    prepare_multi30k(out, "--cache-dir", str(tmp_path / "cache"))
    assert load_prepared(out).manifest["source_info"]["directory"] == str(tmp_path / "m30k")
    assert not (tmp_path / "cache" / "multi30k").exists()


def test_multi30k_download_with_checksums(tmp_path: Path, http_root, monkeypatch) -> None:
    root, url = http_root
    sums = write_raw(tmp_path / "plain", M30K)
    write_gz(tmp_path / "plain", root)
    from aiayn.data.corpora import multi30k

    monkeypatch.setattr(multi30k, "SHA256", sums)
    monkeypatch.delenv(multi30k.ENV, raising=False)
    out = tmp_path / "out"
    prepare_multi30k(out, "--mirror", url, "--cache-dir", str(tmp_path / "cache"))
    # a corrupted file upstream: checksum error, and nothing corrupt stays in the cache
    (root / "val.de.gz").write_bytes(gzip.compress(b"Falsch.\nFalsch.\n"))
    with pytest.raises(UserError, match="sha256"):
        multi30k_corpus(None, tmp_path / "cache2", base_url=url, sha256=sums)
    assert not (tmp_path / "cache2" / "multi30k" / "val.de").exists()
    assert not (tmp_path / "cache2" / "multi30k" / "gz" / "val.de.gz").exists()


def test_multi30k_missing_files_and_no_network(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"missing train\.en"):
        multi30k_corpus(tmp_path / "empty", tmp_path)
    with pytest.raises(UserError, match="cannot download"):
        multi30k_corpus(None, tmp_path, base_url="http://127.0.0.1:9/")


def test_a_mirror_without_a_trailing_slash_fetches_the_right_path(
    tmp_path: Path, http_root, monkeypatch
) -> None:
    """base + "/" + name: `--mirror http://127.0.0.1:PORT` once fetched `...:PORTtrain.en.gz`."""
    root, url = http_root
    sums = write_raw(tmp_path / "plain", M30K)
    write_gz(tmp_path / "plain", root)
    (root / "raw").mkdir()
    write_gz(tmp_path / "plain", root / "raw")
    from aiayn.data.corpora import multi30k

    monkeypatch.setattr(multi30k, "SHA256", sums)
    host = url.rstrip("/")  # http://127.0.0.1:PORT
    prepare_multi30k(tmp_path / "out", "--mirror", host, "--cache-dir", str(tmp_path / "c1"))
    assert load_prepared(tmp_path / "out").manifest["source_info"]["url"] == host
    (root / "train.en.gz").unlink()  # from here on, only raw/ can serve train.en.gz
    multi30k_corpus(None, tmp_path / "c2", base_url=f"{host}/raw", sha256=sums)
    assert (tmp_path / "c2" / "multi30k" / "train.en").read_bytes() == (
        tmp_path / "plain" / "train.en"
    ).read_bytes()


@pytest.mark.parametrize(
    ("base", "joined"),
    [
        ("http://127.0.0.1:9", "http://127.0.0.1:9/train.en.gz"),
        ("http://127.0.0.1:9/", "http://127.0.0.1:9/train.en.gz"),
        ("https://host/a/raw", "https://host/a/raw/train.en.gz"),
        ("https://host/a/raw//", "https://host/a/raw/train.en.gz"),
        ("https://host/raw/?token=1", "https://host/raw/train.en.gz?token=1"),
        ("file:///srv/m30k", "file:///srv/m30k/train.en.gz"),
    ],
)
def test_a_mirror_and_a_file_name_are_joined_with_one_slash(base, joined) -> None:
    from aiayn.data.corpora.download import join_url

    assert join_url(base, "train.en.gz") == joined


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("127.0.0.1:9", "no scheme"),
        ("ftp://127.0.0.1/", "not 'ftp'"),
        ("", "it is empty"),
        ("http://a b/", "a space"),
        ("http://127.0.0.1:65536/", "from 1 to 65535"),
        ("http:///x", "no host"),
    ],
)
def test_a_mirror_that_is_not_a_url_is_one_user_error(tmp_path: Path, url, why) -> None:
    from aiayn.data.corpora.wmt14 import wmt14_corpus

    with pytest.raises(UserError, match=f"is not a URL to download from .*{why}"):
        multi30k_corpus(None, tmp_path, base_url=url)
    with pytest.raises(UserError, match=why):
        wmt14_corpus(tmp_path, base_url=url)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


@pytest.mark.skipif(not SHARED_MULTI30K.is_dir(), reason="shared Multi30k copy not present")
def test_multi30k_checksums_match_the_shared_copy() -> None:
    from aiayn.data.corpora.multi30k import SHA256

    for name, digest in SHA256.items():
        assert hashlib.sha256((SHARED_MULTI30K / name).read_bytes()).hexdigest() == digest


# ------------------------------------------------------------------------------- WMT14
def add_tgz(path: Path, members: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sgm(lines: list[str], kind: str, lang: str) -> str:
    segs = "".join(f'<seg id="{i + 1}">{t}</seg>\n' for i, t in enumerate(lines))
    return (
        f'<{kind}set setid="x" srclang="any" trglang="{lang}">\n<doc sysid="ref" docid="d" '
        f'origlang="en">\n<p>\n{segs}</p>\n</doc>\n</{kind}set>\n'
    )


def test_wmt14_recipe_end_to_end(tmp_path: Path, http_root) -> None:
    root, url = http_root

    def lines(prefix: str, n: int, lang: str) -> str:
        word = {"en": "sentence", "de": "Satz"}[lang]
        return "".join(f"{prefix} {word} {i}\n" for i in range(n))

    add_tgz(
        root / "training-parallel-europarl-v7.tgz",
        {
            "training/europarl-v7.de-en.en": lines("Europarl", 20, "en") + "\n",
            "training/europarl-v7.de-en.de": lines("Europarl", 20, "de") + "\n",
            "training/europarl-v7.fr-en.en": "ignored\n",
        },
    )
    add_tgz(
        root / "training-parallel-commoncrawl.tgz",
        {
            "commoncrawl.de-en.en": lines("Crawl", 15, "en"),
            "commoncrawl.de-en.de": lines("Crawl", 15, "de"),
        },
    )
    add_tgz(
        root / "training-parallel-nc-v9.tgz",
        {
            "training/news-commentary-v9.de-en.en": lines("News", 10, "en"),
            "training/news-commentary-v9.de-en.de": lines("News", 10, "de"),
        },
    )
    add_tgz(
        root / "dev.tgz",
        {
            "dev/newstest2013-src.en.sgm": sgm(["Dev one.", "Dev two &amp; more."], "src", "en"),
            "dev/newstest2013-ref.de.sgm": sgm(["Dev eins.", "Dev zwei &amp; mehr."], "ref", "de"),
        },
    )
    add_tgz(
        root / "test-full.tgz",
        {
            "test-full/newstest2014-deen-src.en.sgm": sgm(
                ["Test one.", "Test two.", "Test 3."], "src", "en"
            ),
            "test-full/newstest2014-deen-ref.de.sgm": sgm(
                ["Test eins.", "Test zwei.", "Test 3."], "ref", "de"
            ),
        },
    )
    out = tmp_path / "wmt"
    assert (
        main(
            [
                "prepare",
                "--source",
                "wmt14",
                "--mirror",
                url,
                "--cache-dir",
                str(tmp_path / "cache"),
                "--out",
                str(out),
                "--vocab-size",
                "300",
                "--no-progress",
            ]
        )
        == 0
    )
    data = load_prepared(out)
    counts = {n: s["pairs"] for n, s in data.manifest["splits"].items()}
    assert counts == {"train": 45, "valid": 2, "test": 3}
    assert data.manifest["dropped"] == {"empty": 1}  # the empty Europarl line
    assert data.texts("valid")[0] == ["Dev one.", "Dev two &amp; more."]  # as sacreBLEU reads
    assert data.texts("test")[1] == ["Test eins.", "Test zwei.", "Test 3."]
    # a wrong archive (missing inner path) is a clear error
    add_tgz(root / "dev.tgz", {"dev/other.sgm": "x"})
    from aiayn.data.corpora.wmt14 import wmt14_corpus

    with pytest.raises(UserError, match=r"has no dev/newstest2013-src\.en\.sgm"):
        wmt14_corpus(tmp_path / "cache3", base_url=url)


def test_prepare_options_are_validated() -> None:
    with pytest.raises(UserError, match="max-ratio"):
        PrepareOptions(src_lang="en", tgt_lang="de", max_ratio=0.5)
    assert prepare is not None
