"""How fast the explorer answers: translation plus the full trace, and the page's first render.

  .venv/bin/python benchmarks/explore_speed.py [--checkpoint runs/demo/average.safetensors]
      [--repeats 20] [--threads 2] [--json benchmarks/results/explore-speed.json] [--quick]

1. ``analyze``: ``Explorer.analyze`` of a 20-word sentence (beam 4, alpha 0.6: the
   translation, its beam record, the trace of every layer and head, the reference's loss),
   in process, median of --repeats;
2. ``http``: the same request through a live `aiayn explore` server on 127.0.0.1 (the
   analysis, the JSON encoding and the transfer), median of --repeats;
3. ``render``: in headless Chromium, the time from the answer's arrival to the page's views
   drawn (the page's own ``window.__lastRender.renderMs``), median of --renders, and the time
   from navigation to the page ready (its first test sentence translated and drawn).
--quick: 3 repeats, 1 render, and, without --checkpoint, a random tiny model made on the spot
(a check that the script runs, not a measurement). The browser part is skipped, with a note,
when Chromium, chromium-driver or Selenium is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from harness import ROOT, parser, provenance, shown, write_report

SENTENCE = (  # 20 words, in the demo's domain (LibreOffice help)
    "To change the borders of the selected cells, choose Format Cells and then click the "
    "Borders tab in the dialog."
)
REFERENCE = "Wählen Sie Format - Zellen und klicken Sie auf das Register Umrandung"


def tiny_checkpoint(directory: Path) -> Path:
    """A random 2-layer model with a small tokenizer (for --quick without a checkpoint)."""
    from aiayn import ModelConfig, Transformer
    from aiayn.data import Tokenizer
    from aiayn.weights import save_model

    tok = Tokenizer.train([SENTENCE, REFERENCE] * 5, vocab_size=300)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    path = directory / "model.safetensors"
    save_model(path, Transformer(cfg).eval(), metadata={"tokenizer": tok.to_str()})
    return path


def time_analyze(checkpoint: Path, repeats: int) -> dict[str, float]:
    from aiayn.explore.core import Explorer, Request

    explorer = Explorer(checkpoint)
    req = Request(text=SENTENCE, beam=4, alpha=0.6, reference=REFERENCE)
    explorer.analyze(req)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        explorer.analyze(req)
        times.append(1000 * (time.perf_counter() - start))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "repeats": repeats}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(checkpoint: Path, threads: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-m", "aiayn", "explore", "--checkpoint", str(checkpoint)]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--no-browser"], env=env, stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/api/info", timeout=5).read()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("explore_speed: the server did not start") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("explore_speed: the server did not answer")


def time_http(url: str, repeats: int) -> dict[str, float]:
    body = json.dumps({"text": SENTENCE, "beam": 4, "alpha": 0.6, "reference": REFERENCE})

    def once() -> tuple[float, int]:
        req = urllib.request.Request(url + "/api/translate", data=body.encode(), method="POST")
        start = time.perf_counter()
        with urllib.request.urlopen(req, timeout=300) as r:
            size = len(r.read())
        return 1000 * (time.perf_counter() - start), size

    once()
    runs = [once() for _ in range(repeats)]
    times = [t for t, _ in runs]
    return {"median_ms": statistics.median(times), "min_ms": min(times), "bytes": runs[0][1]}


def time_render(url: str, renders: int) -> dict[str, float] | str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return "skipped: selenium is not installed (pip install -e '.[explore]')"
    if not (chromium and driver_path):
        return "skipped: chromium and chromium-driver are not installed"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"]:
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(driver_path), options=opts)
    render, ready = [], []
    try:
        for _ in range(renders):
            start = time.perf_counter()
            d.get(url + "/")
            WebDriverWait(d, 60).until(
                lambda d: d.execute_script("return document.body.dataset.ready === '1'")
            )
            ready.append(1000 * (time.perf_counter() - start))
            d.execute_script("window.__lastRender = null")  # the page's own first translation
            d.find_element(By.ID, "text").clear()
            d.find_element(By.ID, "text").send_keys(SENTENCE)
            d.find_element(By.ID, "reference").clear()
            d.find_element(By.ID, "reference").send_keys(REFERENCE)
            d.find_element(By.ID, "translate").click()
            WebDriverWait(d, 120).until(lambda d: d.execute_script("return window.__lastRender"))
            render.append(float(d.execute_script("return window.__lastRender.renderMs")))
    finally:
        d.quit()
    return {
        "first_render_median_ms": statistics.median(render),
        "page_ready_median_ms": statistics.median(ready),
        "renders": renders,
    }


def main() -> int:
    p = parser(__doc__, quick="a check that it runs, not a measure")
    p.add_argument("--checkpoint", type=Path, help="default runs/demo/average.safetensors")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--renders", type=int, default=5)
    args = p.parse_args()
    run = provenance(args.threads, quick=True)
    repeats, renders = (3, 1) if args.quick else (args.repeats, args.renders)
    tmp = Path(tempfile.mkdtemp(prefix="explore-speed-"))
    checkpoint = args.checkpoint
    if checkpoint is None:
        default = ROOT / "runs" / "demo" / "average.safetensors"
        if default.is_file():
            checkpoint = default
        elif args.quick:
            checkpoint = tiny_checkpoint(tmp)
        else:
            raise SystemExit(f"explore_speed: {default} does not exist; run `make demo` first")
    report: dict[str, object] = {
        "checkpoint": shown(str(checkpoint.resolve())),
        "sentence_words": len(SENTENCE.split()),
        "threads": args.threads,
        "quick": args.quick,
        **run,
    }
    report["analyze"] = time_analyze(checkpoint, repeats)
    proc, url = start_server(checkpoint, args.threads)
    try:
        report["http"] = time_http(url, repeats)
        report["render"] = time_render(url, renders)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=1))
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
