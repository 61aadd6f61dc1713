"""Models shipped inside the package, by name (aiayn.pretrained): a name resolves to the verified
shipped file wherever a checkpoint is taken, a file or directory of that name here wins, a
damaged shipped file or an unknown name is one line; the wheel carries the files; a shipped
model re-scores to its results file. The shipped model here is a tiny stand-in made in seconds
(tests/pretrained_support.py), installed into a registry of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import aiayn
from aiayn import pretrained
from aiayn.cli import main
from aiayn.errors import UserError
from aiayn.run_dir import MODEL_FILE, resolve_checkpoint
from aiayn.storage import sha256_file
from aiayn.weights import check_file_fits, load_model
from tests.pretrained_support import BLOCK, LOVE, check, make_tiny, prepare, record, rescore

REPO = Path(__file__).resolve().parents[1]
SHOWN = "aiayn/pretrained/en-zh.safetensors"  # how the CLI names the shipped file
USING = f"using the shipped model en-zh ({SHOWN})"
LOCAL = "using ./en-zh, a local file; the shipped model of that name is not used"
ERROR = "aiayn translate: error: "
NO_NAME = "and no shipped model has that name"


def install(where: Path, model: Path, name: str = "en-zh") -> Path:
    """WHERE (an aiayn/pretrained directory) with MODEL shipped as NAME, as a release does."""
    where.mkdir(parents=True, exist_ok=True)
    file = where / f"{name}.safetensors"
    shutil.copyfile(model, file)
    entry = {
        "file": file.name,
        "sha256": sha256_file(file),
        "bytes": file.stat().st_size,
        "results": f"{name}.results.json",
        "description": "a tiny stand-in for English-Chinese",
        "data_licence": "CC-BY 2.0 FR (Tatoeba)",
        "examples": [{"source": LOVE[0], "reference": LOVE[1]}],
    }
    (where / pretrained.REGISTRY).write_text(json.dumps({name: entry}), encoding="utf-8")
    return where


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    return make_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def registered(tmp_path_factory, tiny) -> Path:
    """An aiayn/pretrained directory shipping the tiny model as en-zh, with its results file."""
    where = install(tmp_path_factory.mktemp("pkg") / "aiayn" / "pretrained", tiny["model"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pretrained, "DIR", where)
        mp.chdir(where.parent.parent)  # nothing named en-zh in the working directory
        results = record("en-zh", tiny["data"], tiny["prepare"], "a Tatoeba-like bundle", "-")
    text = json.dumps(results, ensure_ascii=False, indent=2)
    (where / "en-zh.results.json").write_text(text, encoding="utf-8")
    return where


@pytest.fixture
def shipped(registered, monkeypatch, tmp_path) -> Path:
    """The registry is the tiny one; the working directory is an empty tmp_path."""
    monkeypatch.setattr(pretrained, "DIR", registered)
    monkeypatch.chdir(tmp_path)
    return registered


def run(capsys, *argv: str) -> tuple[int, str, list[str]]:
    """(exit status, stdout, stderr lines) of `aiayn ARGV`."""
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err.splitlines()


def sentences(tmp_path: Path) -> str:
    path = tmp_path / "in.txt"
    path.write_text(f"{LOVE[0]}\nWe buy tea.\n", encoding="utf-8")
    return str(path)


def test_a_name_resolves_to_the_verified_shipped_file(shipped) -> None:
    path = shipped / "en-zh.safetensors"
    assert pretrained.resolve("en-zh") == (path, USING)
    assert pretrained.resolve(Path("en-zh")) == (path, USING)  # argparse's type=Path
    assert resolve_checkpoint("en-zh") == path  # so every loader takes the name
    assert pretrained.resolve("other") == (Path("other"), None)  # not a name: a path
    assert pretrained.names() == ["en-zh"]
    assert pretrained.shipped_name(path) == "en-zh"
    assert pretrained.describe(path) == f"the shipped model en-zh ({SHOWN})"
    assert pretrained.describe("x.safetensors") == "x.safetensors"


def test_load_pretrained_returns_what_load_model_returns(shipped) -> None:
    model, meta = aiayn.load_pretrained("en-zh")
    ref, ref_meta = load_model(shipped / "en-zh.safetensors")
    assert meta == ref_meta
    for (k, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items(), strict=True):
        assert torch.equal(a, b), k
    assert not model.training
    with pytest.raises(UserError, match=r"^en-xx: not a shipped model \(shipped: en-zh\)$"):
        aiayn.load_pretrained("en-xx")


def test_translate_says_it_uses_the_shipped_model(shipped, capsys, tmp_path) -> None:
    inp = sentences(tmp_path)
    rc, by_name, err = run(capsys, "translate", "--checkpoint", "en-zh", "--input", inp)
    assert rc == 0
    assert err == [f"aiayn translate: {USING}"]
    file = str(shipped / "en-zh.safetensors")
    rc, by_path, err = run(capsys, "translate", "--checkpoint", file, "--input", inp)
    assert (rc, err) == (0, [])  # a path says nothing more
    assert by_name == by_path
    assert by_name.count("\n") == 2  # one line per input line


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_local_file_or_directory_of_that_name_wins(shipped, tiny, capsys, tmp_path, kind) -> None:
    local = tmp_path / "en-zh"
    if kind == "file":
        shutil.copyfile(tiny["model"], local)
    else:
        local.mkdir()
        shutil.copyfile(tiny["model"], local / MODEL_FILE)
    shown = f"using ./en-zh, a local {kind}; the shipped model of that name is not used"
    assert pretrained.resolve("en-zh") == (Path("en-zh"), shown)
    here = Path("en-zh")
    assert resolve_checkpoint("en-zh") == (here if kind == "file" else here / MODEL_FILE)
    assert aiayn.load_pretrained("en-zh")[1]  # the Python name asks for the shipped one
    rc, _, err = run(capsys, "translate", "--checkpoint", "en-zh", "--input", sentences(tmp_path))
    assert (rc, err) == (0, [f"aiayn translate: {shown}"])


def test_a_broken_local_file_of_that_name_is_one_line_naming_it(shipped, capsys, tmp_path) -> None:
    (tmp_path / "en-zh").write_bytes(b"not a model")
    rc, _, err = run(capsys, "translate", "--checkpoint", "en-zh", "--input", sentences(tmp_path))
    assert rc == 2
    assert err[0] == f"aiayn translate: {LOCAL}"
    assert err[1].startswith("aiayn translate: error: en-zh: not a safetensors checkpoint")
    assert len(err) == 2


def test_an_empty_local_directory_of_that_name_is_one_line(shipped, capsys, tmp_path) -> None:
    (tmp_path / "en-zh").mkdir()
    rc, _, err = run(capsys, "translate", "--checkpoint", "en-zh", "--input", sentences(tmp_path))
    assert rc == 2
    no_model = f"en-zh: no {MODEL_FILE}, checkpoints/latest or step_* checkpoint in it"
    assert err == [f"aiayn translate: {LOCAL.replace('file', 'directory')}", f"{ERROR}{no_model}"]


def test_a_damaged_shipped_file_is_refused_naming_it(tiny, monkeypatch, capsys, tmp_path) -> None:
    where = install(tmp_path / "pkg" / "aiayn" / "pretrained", tiny["model"])
    monkeypatch.setattr(pretrained, "DIR", where)
    monkeypatch.chdir(tmp_path)
    file = where / "en-zh.safetensors"
    assert pretrained.resolve("en-zh")[0] == file  # verified, and remembered as verified
    raw = bytearray(file.read_bytes())
    raw[-1] ^= 1  # one bit of one weight: the size stays, the SHA-256 does not
    file.write_bytes(raw)
    os.utime(file, ns=(1, 1))  # a changed file is checked again
    refused = (
        f"{file}: the shipped model en-zh does not match the SHA-256 in {where / 'models.json'} "
        "(damaged or replaced): not used; reinstall aiayn"
    )
    with pytest.raises(UserError) as e:
        pretrained.resolve("en-zh")
    assert str(e.value) == refused
    rc, _, err = run(capsys, "translate", "--checkpoint", "en-zh", "--input", sentences(tmp_path))
    assert (rc, err) == (2, [f"aiayn translate: error: {refused}"])
    with pytest.raises(UserError, match="does not match the SHA-256"):
        aiayn.load_pretrained("en-zh")
    file.unlink()
    with pytest.raises(UserError, match=r"the shipped model en-zh is registered but not installed"):
        resolve_checkpoint("en-zh")


def test_an_unknown_name_lists_the_shipped_ones(shipped, capsys, tmp_path) -> None:
    inp = sentences(tmp_path)
    rc, _, err = run(capsys, "translate", "--checkpoint", "en-xx", "--input", inp)
    assert rc == 2
    assert err == [f"{ERROR}en-xx: checkpoint not found, {NO_NAME} (shipped: en-zh)"]
    rc, _, err = run(capsys, "translate", "--checkpoint", "runs/x/y.safetensors", "--input", inp)
    assert err == [f"{ERROR}runs/x/y.safetensors: checkpoint not found"]  # a path: no names


@pytest.mark.parametrize("registry", [None, "{}\n"], ids=["no registry", "empty registry"])
def test_with_nothing_shipped_a_name_says_so(registry, monkeypatch, tmp_path) -> None:
    where = tmp_path / "aiayn" / "pretrained"
    where.mkdir(parents=True)
    if registry is not None:
        (where / "models.json").write_text(registry, encoding="utf-8")
    monkeypatch.setattr(pretrained, "DIR", where)
    monkeypatch.chdir(tmp_path)
    none = rf"^en-zh: checkpoint not found, {NO_NAME} \(this aiayn ships no model\)$"
    with pytest.raises(UserError, match=none):
        resolve_checkpoint("en-zh")
    assert pretrained.resolve("en-zh") == (Path("en-zh"), None)
    from aiayn.cli.explore import default_checkpoint

    with pytest.raises(UserError, match="no model to explore"):
        default_checkpoint()  # explore as before


BAD_ENTRIES = [
    ({"EN ZH": {}}, "a name is lowercase letters and digits"),
    ({"en-zh": {"file": "x.safetensors"}}, "an entry needs file, sha256, bytes"),
    ({"en-zh": {"file": "../x.safetensors"}}, "file must be a file name in"),
    ({"en-zh": {"results": "x.txt"}}, "results must be a file name in .* ending .json"),
    ({"en-zh": {"sha256": "ABC"}}, "sha256 must be 64 lowercase hex digits"),
    ({"en-zh": {"bytes": "1"}}, "bytes must be a positive integer"),
    ({"en-zh": {"examples": []}}, "examples must be a list of {source, reference}"),
    ({"en-zh": {"examples": [{"source": "x"}]}}, "examples must be a list"),
]


@pytest.mark.parametrize(("change", "message"), BAD_ENTRIES)
def test_a_malformed_registry_is_one_line_naming_it(change, message, monkeypatch, tmp_path) -> None:
    where = tmp_path / "aiayn" / "pretrained"
    where.mkdir(parents=True)
    good = {
        "file": "en-zh.safetensors",
        "sha256": "0" * 64,
        "bytes": 1,
        "results": "en-zh.results.json",
        "description": "d",
        "data_licence": "l",
        "examples": [{"source": "s", "reference": "r"}],
    }
    models = {name: {**good, **entry} for name, entry in change.items()}
    if "an entry needs" in message:
        models = change
    (where / "models.json").write_text(json.dumps(models), encoding="utf-8")
    monkeypatch.setattr(pretrained, "DIR", where)
    with pytest.raises(UserError, match=f"^{where / 'models.json'}: '[^']+': {message}"):
        pretrained.resolve("anything")
    (where / "models.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(UserError, match="not a readable registry of shipped models"):
        pretrained.names()


def test_evaluate_takes_a_name(shipped, tiny, capsys, tmp_path) -> None:
    report = tmp_path / "r.json"
    argv = ["--data", str(tiny["data"]), "--limit", "3", "--max-len-b", "2", "--json", str(report)]
    rc, _, err = run(capsys, "evaluate", "--checkpoint", "en-zh", *argv)
    assert (rc, err) == (0, [f"aiayn evaluate: {USING}"])
    assert json.loads(report.read_text())["checkpoint"] == str(shipped / "en-zh.safetensors")


def test_export_takes_a_name(shipped, capsys, tmp_path) -> None:
    pytest.importorskip("ctranslate2")
    out = tmp_path / "ct2"
    argv = ["export", "--checkpoint", "en-zh", "--format", "ctranslate2", "--out", str(out)]
    rc, _, err = run(capsys, *argv)
    assert (rc, err) == (0, [f"aiayn export: {USING}"])
    meta = json.loads((out / "aiayn_export.json").read_text())
    assert str(shipped / "en-zh.safetensors") in json.dumps(meta)


def test_explore_opens_the_shipped_en_zh_with_i_love_you_first(
    shipped, capsys, monkeypatch
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from aiayn.cli.explore import DEFAULT_CHECKPOINT, default_checkpoint
    from aiayn.explore.core import Explorer

    assert default_checkpoint() == "en-zh"  # no runs/demo here
    info = Explorer("en-zh").info()
    assert info["examples"][0] == {"source": "I love you.", "reference": "我爱你。"}
    assert info["corpus_description"] == "a tiny stand-in for English-Chinese"
    assert info["kind"] == "shipped"  # the page names it so (its card: "shipped with aiayn")
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)  # start, stop
    rc, out, err = run(capsys, "explore", "--no-browser", "--port", "0")
    assert (rc, err) == (0, [f"aiayn explore: {USING}"])
    assert out.startswith(f"aiayn explore: the shipped model en-zh ({SHOWN}) on http://127.0.0.1:")
    DEFAULT_CHECKPOINT.parent.mkdir(parents=True)
    shutil.copyfile(shipped / "en-zh.safetensors", DEFAULT_CHECKPOINT)
    assert default_checkpoint() == DEFAULT_CHECKPOINT  # the demo's model comes first


def test_rescoring_a_shipped_model_gives_its_recorded_figures(shipped, tiny, tmp_path) -> None:
    results = pretrained.results("en-zh")
    assert results["data"]["prepare"].startswith("aiayn prepare --source tatoeba")
    data = prepare(results, tmp_path / "again")  # the recorded command, run again
    from aiayn.data import load_prepared

    assert load_prepared(data).texts("test") == load_prepared(tiny["data"]).texts("test")
    recorded, measured = rescore("en-zh", data)
    evaluate = "aiayn evaluate --checkpoint en-zh --data {data} --split test --limit 200"
    assert recorded["command"] == evaluate
    assert 0 < measured["sentences"] <= 200
    check(recorded, measured)
    assert measured == recorded  # the same machine: the same figures
    with pytest.raises(AssertionError, match="chrf"):
        check(recorded, {**measured, "chrf": measured["chrf"] + 1})
    with pytest.raises(AssertionError):
        check(recorded, {**measured, "sentences": measured["sentences"] - 1})


def test_the_shipped_registry_is_sound() -> None:
    """The real registry: every model there, its size and SHA-256 as recorded, at most
    MAX_BYTES, loadable, with a results file that records its data and its first-200 score."""
    assert (pretrained.DIR / pretrained.REGISTRY).is_file()
    models = pretrained.registry()
    for name, entry in models.items():
        path = pretrained.shipped_file(name)
        assert entry["bytes"] <= pretrained.MAX_BYTES, name
        check_file_fits(path)
        # no path of the machine that trained it: averaged checkpoints named by step (ship-model)
        from aiayn.weights import read_metadata

        averaged = json.loads(read_metadata(path).get("averaged_from", "[]"))
        assert all("/" not in f and "\\" not in f for f in averaged), averaged
        results = pretrained.results(name)
        assert results["model"] == name
        assert {"source", "licence", "prepare"} <= set(results["data"]), name
        assert "{data}" in results["data"]["prepare"], name
        block = results[BLOCK]
        assert {"command", "sentences", "sacrebleu", "signature", "chrf"} <= set(block), name
        assert block["command"].startswith(f"aiayn evaluate --checkpoint {name} "), name
        assert "--limit 200" in block["command"], name
    if "en-zh" in models:  # aiayn explore's first sentence
        assert pretrained.examples("en-zh")[0]["source"] == "I love you."


@pytest.mark.slow
def test_the_wheel_holds_every_shipped_file(tmp_path) -> None:
    """`pip wheel .` (so `pip install .`) carries the registry, each model and its results, and
    the demo's recipe."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copyfile(REPO / name, src / name)
    for package in ("aiayn", "recipes"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation"]
    done = subprocess.run([*pip, "-q", "-w", str(wheels)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (wheel,) = wheels.glob("aiayn-*.whl")
    inside = set(zipfile.ZipFile(wheel).namelist())
    wanted = {"aiayn/pretrained/models.json", "aiayn/recipes/demo.toml"}  # aiayn demo reads it
    for entry in pretrained.registry().values():
        wanted |= {f"aiayn/pretrained/{entry['file']}", f"aiayn/pretrained/{entry['results']}"}
    assert wanted <= inside


SHARED_DATA = REPO.parent / "shared" / "data"
# Where each shipped model's corpus is found offline: the shared copies beside the repository.
LOCAL_DATA = {
    "en-zh": ("AIAYN_TATOEBA", SHARED_DATA / "tatoeba" / "cmn.txt"),
    "en-de-multi30k": ("AIAYN_MULTI30K", SHARED_DATA / "multi30k"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(pretrained.registry()))
def test_each_shipped_model_rescores_to_its_results_file(name, monkeypatch, tmp_path) -> None:
    """The real shipped model, re-scored on the first 200 test sentences of its data (prepared
    with the recorded command), gives its recorded sacreBLEU and chrF2 within 0.5 points."""
    variable, local = LOCAL_DATA[name]
    if not local.exists():
        pytest.skip(f"the corpus of {name} is not here ({local})")
    monkeypatch.setenv(variable, str(local))
    check(*rescore(name, prepare(pretrained.results(name), tmp_path / "data")))


@pytest.mark.skipif("en-zh" not in pretrained.registry(), reason="no en-zh model is shipped")
def test_the_shipped_en_zh_model_translates_the_notes_sentence(capsys, tmp_path) -> None:
    """Issue 47's goal: "I love you." -> 我爱你 or 我爱您, with or without the full stop."""
    src = tmp_path / "in.txt"
    src.write_text("I love you.\n", encoding="utf-8")
    assert main(["translate", "--checkpoint", "en-zh", "--input", str(src)]) == 0
    assert capsys.readouterr().out.strip().rstrip("。") in ("我爱你", "我爱您")


@pytest.mark.parametrize("name", sorted(pretrained.registry()))
def test_the_readmes_quote_each_shipped_models_figures_from_its_results_file(name) -> None:
    """README's results table (generated by scripts/refresh-docs.py) has a row for each shipped
    model with the test sacreBLEU and chrF2 of the shipped file itself."""
    test = pretrained.results(name)["test"]
    figures = [f"**{test['sacrebleu']:.1f}**", f"chrF2 {test['chrf']:.1f}"]
    for readme in ("README.md", "README.zh-CN.md"):
        text = (REPO / readme).read_text(encoding="utf-8")
        row = next(line for line in text.splitlines() if f"`{name}`" in line and "|" in line)
        for figure in figures:
            assert figure in row, (readme, figure)
