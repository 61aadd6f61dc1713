"""For the explorer's tests: a tiny trained run and a live `aiayn explore` server process.

The run is a toy EN-DE grammar (4 subjects x 3 verbs x 4 objects, word for word), prepared,
trained for 150 steps of a 2-layer d_model 32 model (seconds), with checkpoints every 50 steps
and the last two averaged, as the demo does: enough for real, non-empty translations.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

SUBJECTS = [("the dog", "der Hund"), ("the cat", "die Katze"), ("the man", "der Mann"),
            ("the woman", "die Frau")]  # fmt: skip
VERBS = [("sees", "sieht"), ("likes", "mag"), ("finds", "findet")]
OBJECTS = [("the ball", "den Ball"), ("the house", "das Haus"), ("the tree", "den Baum"),
           ("the car", "das Auto")]  # fmt: skip
ROOT = Path(__file__).resolve().parents[1]


def make_run(base: Path) -> Path:
    """Prepare, train and average the toy run under base; returns the averaged model file."""
    from aiayn.cli import main

    en, de = [], []
    for s in SUBJECTS:
        for v in VERBS:
            for o in OBJECTS:
                en.append(f"{s[0]} {v[0]} {o[0]} .")
                de.append(f"{s[1]} {v[1]} {o[1]} .")
    (base / "en.txt").write_text("\n".join(en) + "\n", encoding="utf-8")
    (base / "de.txt").write_text("\n".join(de) + "\n", encoding="utf-8")
    data, run = base / "data", base / "run"
    prepare = ["prepare", "--source", "files", "--src", str(base / "en.txt"), "--tgt"]
    prepare += [str(base / "de.txt"), "--out", str(data), "--test-share", "0.1"]
    assert main([*prepare, "--valid-share", "0.05", "--vocab-size", "400", "--no-progress"]) == 0
    train = ["train", "--data", str(data), "--run", str(run), "--preset", "tiny"]
    train += ["--d-model", "32", "--d-ff", "64", "--n-layers", "2", "--max-tokens", "200"]
    train += ["--warmup", "20", "--max-steps", "150", "--save-every-steps", "50"]
    train += ["--log-every", "50", "--valid-every", "0", "--no-progress", "--dropout", "0"]
    assert main([*train, "--label-smoothing", "0"]) == 0
    model = run / "average.safetensors"
    assert main(["average", str(run), "--last", "2", "--out", str(model)]) == 0
    return model


def make_mute(model: Path, out: Path, step: int = 20) -> Path:
    """A model that has not learned to write yet: every translation is empty.

    The trained toy model, its decoder's last LayerNorm set to put out a constant row along
    E[</s>] (gamma = 0, beta = 10 E[</s>] / |E[</s>]|), so that softmax(Z_D E^T) puts nearly all
    its mass on </s> at every position; saved alone (no run) as if at update ``step``, as a run
    stopped after a few minutes leaves its model.
    """
    import torch

    from aiayn.data import EOS
    from aiayn.weights import load_state, save_model

    state, config, meta = load_state(model)
    E = state["embedding"]  # (V, D)
    last = config.decoder_layers - 1
    state[f"decoder.{last}.norm3.weight"] = torch.zeros_like(E[EOS])  # (D,)
    state[f"decoder.{last}.norm3.bias"] = 10 * E[EOS] / E[EOS].norm()  # (D,)
    assert int((E @ state[f"decoder.{last}.norm3.bias"]).argmax()) == EOS
    keep = {k: v for k, v in meta.items() if k in ("tokenizer", "max_train_length")}
    out.mkdir(parents=True, exist_ok=True)
    save_model(out / "mute.safetensors", state, config, metadata={**keep, "step": str(step)})
    return out / "mute.safetensors"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `aiayn explore --no-browser` process and its base URL."""

    def __init__(self, proc: subprocess.Popen, url: str) -> None:
        self.proc, self.url = proc, url

    def get(self, path: str) -> tuple[int, dict]:
        return self.post(path, None)

    def post(self, path: str, body: bytes | dict | None, timeout: float = 60) -> tuple[int, dict]:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        method = "GET" if body is None else "POST"
        req = urllib.request.Request(self.url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            raw = e.read()
            assert raw.count(b"\n") == 0, raw  # one line
            return e.code, json.loads(raw)


@contextlib.contextmanager
def serve(checkpoint: Path, *extra: str) -> Iterator[Server]:
    """Start the server, wait until it answers, stop it with SIGINT (Ctrl-C) at the end."""
    port = free_port()
    cmd = [sys.executable, "-m", "aiayn", "explore", "--checkpoint", str(checkpoint)]
    cmd += ["--port", str(port), "--no-browser", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        cmd, cwd=checkpoint.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    server = Server(proc, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"explore exited: {proc.communicate()[1].decode()[-2000:]}")
        try:
            if server.get("/api/info")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("explore did not start")
        time.sleep(0.2)
    try:
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
