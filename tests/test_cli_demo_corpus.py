"""`aiayn demo`'s corpus: Multi30k when it can be had (local copy or a checked download from a
local HTTP server here), else the packaged corpus, with the choice printed; and the demo's last
lines name the command that opens the explorer."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from aiayn.cli import demo
from aiayn.data import load_prepared
from aiayn.data.corpora import multi30k
from aiayn.errors import UserError
from tests.multi30k_support import http_server, write_gz, write_raw

PAIRS = {
    "train": [(f"A dog number {i} runs.", f"Ein Hund Nummer {i} rennt.") for i in range(30)],
    "val": [("Two cats sleep.", "Zwei Katzen schlafen."), ("A man sings.", "Ein Mann singt.")],
    "test_2016_flickr": [("A child plays.", "Ein Kind spielt."), ("A bird flies.", "Ein Vogel.")],
}


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """(directory served, base URL): Multi30k's .gz files on an HTTP server on 127.0.0.1."""
    root = tmp_path / "www"
    sums = write_raw(tmp_path / "raw", PAIRS)
    root.mkdir()
    write_gz(tmp_path / "raw", root)
    from aiayn.data.corpora import multi30k

    monkeypatch.setattr(multi30k, "SHA256", sums)  # the fixture's files stand for the official
    with http_server(root) as url:
        yield root, url


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AIAYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(multi30k.ENV, raising=False)
    monkeypatch.delenv(multi30k.URL_ENV, raising=False)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    return parser.parse_args(["--no-progress", "--vocab-size", "300", *argv])


def fake_packaged(monkeypatch) -> list[str]:
    """Record the preparing of the packaged corpus instead of running it (Debian's packages are
    slow); every other corpus is prepared."""
    calls: list[str] = []
    build = demo._build

    def fake(args, data, source):
        calls.append(source)
        if source != "packaged":
            build(args, data, source)

    monkeypatch.setattr(demo, "_build", fake)
    return calls


def test_auto_downloads_multi30k_with_checksums(tmp_path, mirror, capsys) -> None:
    _, url = mirror
    data = tmp_path / "demo-data"
    assert demo._prepare(parse("--multi30k-url", url), data) == "multi30k"
    out = capsys.readouterr().out
    assert f"corpus: multi30k, from a download from {url}, checksums checked" in out
    prepared = load_prepared(data)
    assert prepared.manifest["source"] == "multi30k"
    assert prepared.texts("test")[1] == ["Ein Kind spielt.", "Ein Vogel."]
    # A second demo with the same settings reuses it.
    assert demo._prepare(parse("--multi30k-url", url), data) == "multi30k"
    assert "reusing the prepared data" in capsys.readouterr().out


def test_a_local_copy_from_the_environment(tmp_path, monkeypatch, capsys) -> None:
    write_raw(tmp_path / "m30k", PAIRS)
    monkeypatch.setenv(multi30k.ENV, str(tmp_path / "m30k"))
    assert demo._prepare(parse(), tmp_path / "d") == "multi30k"
    assert f"corpus: multi30k, from the local copy {tmp_path / 'm30k'}" in capsys.readouterr().out
    assert load_prepared(tmp_path / "d").manifest["source"] == "multi30k"


def test_auto_falls_back_to_packaged_and_says_so(tmp_path, mirror, monkeypatch, capsys) -> None:
    root, url = mirror
    (root / "val.de.gz").write_bytes(gzip.compress(b"Falsch.\nFalsch.\n"))  # checksum fails
    calls = fake_packaged(monkeypatch)
    assert demo._prepare(parse("--multi30k-url", url), tmp_path / "d") == "packaged"
    out, err = capsys.readouterr()
    assert "Multi30k could not be had (see above): using the packaged corpus instead" in out
    assert "corpus: packaged" in out
    assert err.startswith("aiayn prepare: error: ")  # the "above": why
    assert "sha256" in err
    assert calls == ["multi30k", "packaged"]
    # Unreachable (nothing listens on the port): the same fallback.
    calls.clear()
    assert demo._prepare(parse("--multi30k-url", "http://127.0.0.1:9/"), tmp_path / "e") == (
        "packaged"
    )
    assert calls == ["multi30k", "packaged"]


def test_a_named_source_does_not_fall_back(tmp_path, monkeypatch, capsys) -> None:
    calls = fake_packaged(monkeypatch)
    args = parse("--source", "multi30k", "--multi30k-url", "http://127.0.0.1:9/")
    with pytest.raises(UserError, match="--source multi30k: Multi30k could not be had"):
        demo._prepare(args, tmp_path / "d")
    assert calls == ["multi30k"]
    assert "cannot download http://127.0.0.1:9/" in capsys.readouterr().err  # the "see above"
    assert demo._prepare(parse("--source", "packaged"), tmp_path / "d") == "packaged"
    assert calls == ["multi30k", "packaged"]
    assert "trying Multi30k" not in capsys.readouterr().out


def test_the_demo_ends_by_printing_the_explore_command(tmp_path, monkeypatch, capsys) -> None:
    def cli(argv, quiet=False):
        if argv[0] == "evaluate":
            Path(argv[argv.index("--json") + 1]).parent.mkdir(parents=True, exist_ok=True)
            Path(argv[argv.index("--json") + 1]).write_text(json.dumps({"sacrebleu": {}}))
            Path(argv[argv.index("--hyps") + 1]).write_text("")
        return 0

    monkeypatch.setattr(demo, "_cli", cli)
    monkeypatch.setattr(demo, "_prepare", lambda args, data: "numbers")
    monkeypatch.setattr(demo, "_examples", lambda data, hyps: None)
    texts = SimpleNamespace(texts=lambda split: (["a b"], ["c d"]))
    monkeypatch.setattr("aiayn.data.load_prepared", lambda path: texts)
    monkeypatch.setattr("aiayn.train.read_metrics", lambda run: [])  # the faked train wrote none
    monkeypatch.chdir(tmp_path)
    assert demo.run(parse()) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.strip() == ".venv/bin/aiayn explore"  # runs/demo's model is explore's default


def test_explore_command_names_other_runs() -> None:
    from aiayn.cli.explore import DEFAULT_CHECKPOINT

    assert demo.explore_command(DEFAULT_CHECKPOINT) == ".venv/bin/aiayn explore"
    assert demo.explore_command(Path("runs/x/average.safetensors")).endswith(
        "explore --checkpoint runs/x/average.safetensors"
    )
