"""`aiayn explore`'s JSON API against a live server process on 127.0.0.1.

Its numbers must be the library's: the translation equals `aiayn translate`'s, the attention
weights, embeddings and distributions equal `aiayn.trace`'s, the beam steps equal
`beam_search`'s own record. Every bad input is a 4xx with a one-line JSON error and the
server keeps serving; 20 concurrent requests are all answered correctly; SIGINT (Ctrl-C)
stops it cleanly.
"""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from aiayn.cli import main
from aiayn.config import DecodeConfig
from aiayn.data import BOS, EOS
from aiayn.decode import BeamStep
from aiayn.model import trace
from aiayn.translator import load_translator
from tests.explore_support import ROOT, serve

pytestmark = pytest.mark.slow  # a trained run and a server process: several seconds

STACK_KEYS = {"encoder": "attn", "decoder_self": "self_attn", "decoder_cross": "cross_attn"}


@pytest.fixture(scope="module")
def server(explore_model):
    with serve(explore_model) as s:
        yield s


@pytest.fixture(scope="module")
def examples(server) -> list[dict[str, str]]:
    status, info = server.get("/api/info")
    assert status == 200
    return info["examples"]


def test_info_names_the_run(server, explore_model) -> None:
    status, info = server.get("/api/info")
    assert status == 200
    assert info["checkpoints"] == ["step_00000050", "step_00000100", "step_00000150"]
    assert info["corpus"] == "files"
    test_src = (explore_model.parent.parent / "data" / "text" / "test.en").read_text("utf-8")
    assert [e["source"] for e in info["examples"]] == test_src.splitlines()
    assert info["model"]["d_model"] == 32
    assert info["model"]["n_heads"] == 4
    assert info["lang"] == "en"


def test_info_says_how_far_the_model_was_trained(server) -> None:
    """The page names the model: its data and languages, its updates, its validation."""
    info = server.get("/api/info")[1]
    assert info["kind"] == "trained"
    assert info["languages"] == ["en", "de"]
    assert info["step"] == 150  # the average's newest checkpoint
    assert info["averaged"] == 2
    assert info["valid"] is None  # the toy run trains with --valid-every 0
    assert info["corpus_description"] == "the parallel files given to aiayn prepare"


def test_validation_is_the_runs_last_at_or_before_the_models_step(explore_model, tmp_path):
    import shutil

    from aiayn.explore.card import training
    from aiayn.run_dir import METRICS_FILE

    run = tmp_path / "run"
    shutil.copytree(explore_model.parent, run)
    events = [
        {"event": "valid", "step": 50, "loss": 2.0, "nll": 2.0, "ppl": 7.389},
        {"event": "train", "step": 100, "loss": 1.0, "ppl": 2.7},
        {"event": "valid", "step": 100, "nll": 1.0, "ppl": 2.71828, "bleu": 31.25},
        {"event": "valid", "step": 200, "nll": 0.5, "ppl": 1.6487},  # after the model's step
    ]
    (run / METRICS_FILE).write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    got = training(run / "checkpoints" / "step_00000100" / "model.safetensors", run)
    assert got == {"step": 100, "averaged": 0, "valid": {"step": 100, "ppl": 2.7183, "bleu": 31.25}}
    assert training(run / "checkpoints" / "step_00000050" / "model.safetensors", run)["valid"] == {
        "step": 50,
        "ppl": 7.389,
    }
    (run / METRICS_FILE).write_text("not json\n{}\n", "utf-8")  # damaged: named without it
    assert training(run / "average.safetensors", run)["valid"] is None


def test_kind_names_imported_and_shipped_models(explore_model, tmp_path) -> None:
    from aiayn.errors import UserError
    from aiayn.explore.core import Explorer
    from aiayn.weights import load_state, save_model

    assert Explorer(explore_model, kind="shipped").info()["kind"] == "shipped"
    with pytest.raises(UserError, match="kind must be one of"):
        Explorer(explore_model, kind="borrowed")
    state, config, meta = load_state(explore_model)
    origin = "Hugging Face MarianMTModel Helsinki-NLP/opus-mt-en-de (aiayn import-hf)"
    keep = {"tokenizer": meta["tokenizer"], "origin": origin}
    save_model(tmp_path / "imported.safetensors", state, config, metadata=keep)
    info = Explorer(tmp_path / "imported.safetensors").info()
    assert (info["kind"], info["origin"], info["step"], info["valid"]) == (
        "imported",
        origin,
        None,
        None,
    )


def test_an_empty_translation_is_flagged(explore_model, tmp_path) -> None:
    """A model that has not learned to write yet: the answer says the translation is empty,
    and the model's step is there for the page to say why."""
    from aiayn.explore.core import Explorer, Request
    from tests.explore_support import make_mute

    ex = Explorer(make_mute(explore_model, tmp_path / "mute"))
    got = ex.analyze(Request(text="the dog sees the car ."))
    assert got["output"]["text"] == ""
    assert got["output"]["empty"] is True
    assert got["output"]["ids"] == [EOS]
    assert got["distribution"][0]["chosen"] == EOS
    assert ex.info()["step"] == 20
    trained = Explorer(explore_model).analyze(Request(text="the dog sees the car ."))
    assert trained["output"]["empty"] is False


@pytest.mark.parametrize(("beam", "alpha"), [(4, 0.6), (1, 0.6), (3, 1.5)])
def test_translation_equals_translate_cli(server, examples, explore_model, tmp_path, beam, alpha):
    lines = [e["source"] for e in examples] + ["the dog sees the car .", "the car finds"]
    inp, out = tmp_path / "in.txt", tmp_path / "out.txt"
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["translate", "--checkpoint", str(explore_model), "--input", str(inp)]
    assert main([*argv, "--output", str(out), "--beam", str(beam), "--alpha", str(alpha)]) == 0
    want = out.read_text(encoding="utf-8").splitlines()
    for line, text in zip(lines, want, strict=True):
        status, got = server.post("/api/translate", {"text": line, "beam": beam, "alpha": alpha})
        assert status == 200
        assert got["output"]["text"] == text
    assert any(want), "the toy model translates into something"


def test_numbers_equal_the_trace(server, explore_model) -> None:
    text, reference = "the man likes the tree .", "der Mann mag den Baum ."
    status, got = server.post("/api/translate", {"text": text, "reference": reference})
    assert status == 200
    tr = load_translator(explore_model, DecodeConfig(), device="cpu")
    ids = tr.tokenizer.encode(text)
    assert got["source"]["ids"] == [*ids, EOS]
    hyp = tr.translate_ids([ids])[0][0]
    assert got["output"]["ids"] == hyp.tokens
    assert got["output"]["logprob"] == pytest.approx(hyp.logprob, abs=1e-5)
    src = torch.tensor([[*ids, EOS]])  # (1, S)
    tgt_in = torch.tensor([[BOS, *hyp.tokens[:-1]]])  # (1, T)
    with torch.inference_mode():
        t = trace(tr.model, src, tgt_in)
    layers = {"encoder": t.encoder, "decoder_self": t.decoder, "decoder_cross": t.decoder}
    for stack, recs in layers.items():
        assert len(got["attention"][stack]) == len(recs)
        for layer, rec in zip(got["attention"][stack], recs, strict=True):
            a = rec[STACK_KEYS[stack]]
            weights = torch.tensor(layer["weights"], dtype=torch.float64)  # (H, Lq, Lk)
            assert weights.shape == a["weights"][0].shape
            torch.testing.assert_close(weights, a["weights"][0].double(), atol=1e-6, rtol=0)
            torch.testing.assert_close(
                torch.tensor(layer["scores"], dtype=torch.float64),
                a["scores"][0].double(),
                atol=1e-5,
                rtol=0,
            )
            keep = torch.tensor(layer["keep"], dtype=torch.bool)  # (Lq, Lk)
            assert torch.equal(keep, torch.isfinite(a["scores_masked"][0, 0]))
    S, T = src.size(1), tgt_in.size(1)
    assert torch.tensor(got["attention"]["decoder_self"][0]["keep"]).triu(1).sum() == 0
    assert torch.tensor(got["attention"]["decoder_cross"][0]["weights"]).shape[1:] == (T, S)
    torch.testing.assert_close(
        torch.tensor(got["embedding"]["X_E"], dtype=torch.float64),
        t.X_E[0].double(),
        atol=1e-5,
        rtol=0,
    )
    for pos, row in enumerate(got["distribution"]):
        assert row["chosen"] == hyp.tokens[pos]
        assert row["p_chosen"] == pytest.approx(float(t.P[0, pos, hyp.tokens[pos]]), abs=1e-6)
        assert row["top"][0]["p"] == pytest.approx(float(t.P[0, pos].max()), abs=1e-6)
    ref = [*tr.tokenizer.encode(reference), EOS]
    with torch.inference_mode():
        tref = trace(tr.model, src, torch.tensor([[BOS, *ref[:-1]]]))
    nll = -tref.L[0].log_softmax(-1).gather(1, torch.tensor(ref)[:, None])[:, 0]  # (T',)
    assert got["reference"]["ids"] == ref
    assert got["reference"]["nll"] == pytest.approx(nll.tolist(), abs=1e-5)
    assert got["reference"]["loss_sum"] == pytest.approx(float(nll.sum()), abs=1e-4)


def test_beam_steps_are_the_search_record(server, explore_model) -> None:
    text = "the woman sees the ball ."
    status, got = server.post("/api/translate", {"text": text, "beam": 3, "alpha": 0.6})
    assert status == 200
    tr = load_translator(explore_model, DecodeConfig(beam=3, alpha=0.6), device="cpu")
    record: list[list[BeamStep]] = []
    tr.translate_ids([tr.tokenizer.encode(text)], record=record)
    steps = record[0]
    assert [s["t"] for s in got["beam"]] == [s.t for s in steps]
    for js, s in zip(got["beam"], steps, strict=True):
        assert [c["tokens"] for c in js["candidates"]] == [c["tokens"] for c in s.candidates]
        assert [c["status"] for c in js["candidates"]] == [c["status"] for c in s.candidates]
        assert js["stop"] == s.stop
        assert js["dropped"] == s.dropped
    finished = [c for s in got["beam"] for c in s["candidates"] if c["status"] == "finished"]
    best = max(finished, key=lambda c: c["score"])
    assert best["tokens"] == got["output"]["ids"]


LONG_TOKENS = " ".join(["zq"] * 300)  # under 4 KB, over 256 tokens
BAD = [
    (b'{"text": ""}', 422, "text: empty"),
    (b'{"text": "   "}', 422, "text: empty"),
    (json.dumps({"text": "a" * 5000}).encode(), 413, "more than 4096 bytes"),
    (json.dumps({"text": LONG_TOKENS}).encode(), 413, "more than 256"),
    (json.dumps({"text": "ok", "reference": "b" * 5000}).encode(), 413, "reference"),
    (b"\xff\xfe{}", 400, "not UTF-8"),
    (b"{text: 1", 400, "not JSON"),
    (b"", 400, "not JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (b'{"text": 3}', 422, "text: a string"),
    (b'{"texte": "a"}', 422, "unknown field 'texte'"),
    (b'{"text": "a", "beam": 0}', 422, "beam: must be in 1..8"),
    (b'{"text": "a", "beam": 9}', 422, "beam: must be in 1..8"),
    (b'{"text": "a", "beam": "4"}', 422, "beam: an integer"),
    (b'{"text": "a", "beam": 2.5}', 422, "beam: an integer"),
    (b'{"text": "a", "beam": true}', 422, "beam: an integer"),
    (b'{"text": "a", "alpha": -0.1}', 422, "alpha: must be in"),
    (b'{"text": "a", "alpha": 2.01}', 422, "alpha: must be in"),
    (b'{"text": "a", "alpha": NaN}', 422, "alpha: a number"),
    (b'{"text": "a", "alpha": "x"}', 422, "alpha: a number"),
    (b'{"text": "a", "checkpoint": "step_9"}', 404, "checkpoint 'step_9'"),
    (b'{"text": "a", "checkpoint": 3}', 422, "checkpoint"),
    (b'{"text": "a", "heads_off": [["middle", 0, 0]]}', 422, "heads_off"),
    (b'{"text": "a", "heads_off": [["encoder", 5, 0]]}', 422, "no layer 5"),
    (b'{"text": "a", "heads_off": [["encoder", 0, 4]]}', 422, "head 4"),
    (b'{"text": "a", "heads_off": "all"}', 422, "heads_off"),
    (b'{"text": "a", "erratum": "yes"}', 422, "erratum"),
    (b'{"text": "a", "reference": 7}', 422, "reference"),
    (b'{"text": "' + b"x" * 70000 + b'"}', 413, "body: more than"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_input_is_a_4xx_with_one_line(server, body, status, message) -> None:
    got_status, got = server.post("/api/translate", body)
    assert got_status == status
    assert set(got) == {"error"}
    assert message in got["error"]
    assert "\n" not in got["error"]
    assert "Traceback" not in got["error"]
    assert server.get("/api/info")[0] == 200  # still serving


def test_unknown_paths_and_methods(server) -> None:
    assert server.get("/api/nothing")[0] == 404
    assert server.get("/api/translate")[0] == 405
    assert server.get("/static/nothing.js")[0] == 404


def test_twenty_concurrent_requests(server, examples) -> None:
    texts = [e["source"] for e in examples] + ["the cat sees the tree .", "the dog likes"]
    bodies = [
        {"text": texts[i % len(texts)], "beam": 1 + i % 4, "alpha": [0.0, 0.6, 1.2][i % 3]}
        for i in range(20)
    ]
    alone = [server.post("/api/translate", b)[1]["output"]["text"] for b in bodies]
    with ThreadPoolExecutor(20) as pool:
        together = list(pool.map(lambda b: server.post("/api/translate", b, timeout=300), bodies))
    assert [s for s, _ in together] == [200] * 20
    assert [r["output"]["text"] for _, r in together] == alone
    assert [r["settings"]["beam"] for _, r in together] == [b["beam"] for b in bodies]


def test_switching_heads_off_changes_the_attention(server) -> None:
    text = "the man finds the car ."
    base = server.post("/api/translate", {"text": text})[1]
    off = [["encoder", 0, h] for h in range(4)]
    got = server.post("/api/translate", {"text": text, "heads_off": off})[1]
    # Layer 0's own weights are computed before its W^O: unchanged. Layer 1 sees a new input.
    assert got["attention"]["encoder"][0]["weights"] == base["attention"]["encoder"][0]["weights"]
    assert got["attention"]["encoder"][1]["weights"] != base["attention"]["encoder"][1]["weights"]
    assert got["settings"]["heads_off"] == off


def test_erratum_divides_by_sqrt_d_model(server) -> None:
    text = "the man finds the car ."
    base = server.post("/api/translate", {"text": text})[1]
    got = server.post("/api/translate", {"text": text, "erratum": True})[1]
    assert got["settings"]["divisor"] == pytest.approx(math.sqrt(32))
    assert base["settings"]["divisor"] == pytest.approx(math.sqrt(8))
    # Layer 0 of the encoder has the same input: its scores are exactly halved (sqrt(32 / 8)).
    b = torch.tensor(base["attention"]["encoder"][0]["scores"])
    e = torch.tensor(got["attention"]["encoder"][0]["scores"])
    torch.testing.assert_close(e, b / 2, atol=1e-5, rtol=0)

    def entropy(w: list) -> float:
        p = torch.tensor(w).clamp_min(1e-12)
        return float(-(p * p.log()).sum(-1).mean())

    assert entropy(got["attention"]["encoder"][0]["weights"]) > entropy(
        base["attention"]["encoder"][0]["weights"]
    )


def test_history_checkpoints(server) -> None:
    text = "the cat finds the ball ."
    outs = []
    for name in ["step_00000050", "step_00000100", "step_00000150"]:
        status, got = server.post("/api/translate", {"text": text, "checkpoint": name})
        assert status == 200
        assert got["settings"]["checkpoint"] == name
        outs.append(got["attention"]["decoder_cross"][0]["weights"])
    assert outs[0] != outs[-1]  # training changed the attention


def test_history_models_in_memory_are_bounded(explore_model) -> None:
    from aiayn.explore.core import MODELS_IN_MEMORY, Explorer, Request

    ex = Explorer(explore_model)
    for name in ex.checkpoints:
        ex.analyze(Request(text="the dog", beam=1, checkpoint=name))
        assert len(ex._loaded) <= MODELS_IN_MEMORY
    assert list(ex._loaded) == list(ex.checkpoints)[-MODELS_IN_MEMORY:]


def test_page_and_assets_are_local(server) -> None:
    import urllib.request

    for path in ["/", "/static/explore.js", "/static/explore.css"]:
        with urllib.request.urlopen(server.url + path) as r:
            text = r.read().decode("utf-8")
        assert r.status == 200
        # No CDN, no web font: nothing but this server (the SVG namespace is a name, not a URL).
        urls = set(re.findall(r"https?://[^\s\"')]+", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, urls


def test_ctrl_c_stops_cleanly(explore_model) -> None:
    with serve(explore_model) as s:
        assert s.post("/api/translate", {"text": "the dog"})[0] == 200
        s.proc.send_signal(signal.SIGINT)
        out, err = s.proc.communicate(timeout=30)
    assert s.proc.returncode == 0
    assert b"Traceback" not in err
    assert b"stopped" in out


def test_lang_flag_reaches_the_page(explore_model) -> None:
    with serve(explore_model, "--lang", "zh") as s:
        assert s.get("/api/info")[1]["lang"] == "zh"


def explore_refuses(*args: str, cwd: Path | None = None) -> str:
    """stderr of `aiayn explore ARGS` in a bare environment; it must exit 2 with one line."""
    cmd = [sys.executable, "-m", "aiayn", "explore", *args]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    return r.stderr


def test_default_checkpoint_missing_names_the_command(tmp_path, monkeypatch) -> None:
    """Without runs/demo and without a shipped en-zh (an aiayn that ships none), one line says
    how to get a model; with en-zh shipped, explore opens it (tests/test_pretrained.py)."""
    from aiayn import pretrained
    from aiayn.cli.explore import default_checkpoint
    from aiayn.errors import UserError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pretrained, "registry", dict)
    with pytest.raises(UserError) as e:
        default_checkpoint()
    assert "make demo" in str(e.value)
    assert "runs/demo/average.safetensors" in str(e.value)


def test_unknown_checkpoint_flag_is_one_line(tmp_path) -> None:
    assert "not found" in explore_refuses("--checkpoint", str(tmp_path / "nope"))


def test_the_library_never_imports_the_face() -> None:
    for path in (ROOT / "aiayn").rglob("*.py"):
        rel = path.relative_to(ROOT / "aiayn").parts
        if rel[0] in ("explore", "cli"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "aiayn.explore" not in text, path
        assert "starlette" not in text, path


def test_static_files_are_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = pyproject["tool"]["setuptools"]["package-data"]["aiayn.explore"]
    static = Path(ROOT / "aiayn" / "explore" / "static")
    for name in ["index.html", "explore.js", "explore.css"]:
        assert (static / name).is_file()
        assert any(Path("static", name).match(pattern) for pattern in data)


def test_checkpoint_may_be_a_run_or_a_checkpoint_directory(explore_model) -> None:
    from aiayn.explore.core import Explorer

    run = explore_model.parent
    by_run = Explorer(run)
    assert by_run.path == run / "checkpoints" / "step_00000150" / "model.safetensors"
    assert by_run.run_dir == run
    assert list(by_run.checkpoints) == ["step_00000050", "step_00000100", "step_00000150"]
    by_dir = Explorer(run / "checkpoints" / "step_00000050")
    assert by_dir.run_dir == run
    assert by_dir.info()["checkpoint_label"] == "run/checkpoints/step_00000050/model.safetensors"
    assert Explorer(explore_model).info()["checkpoint_label"] == "run/average.safetensors"


def test_a_busy_port_is_one_line(explore_model) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        args = ["--checkpoint", str(explore_model), "--port", str(port), "--no-browser"]
        err = explore_refuses(*args)
    assert f"cannot listen on 127.0.0.1:{port}" in err
