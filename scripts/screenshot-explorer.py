"""Screenshots of `aiayn explore` for the docs, taken in headless Chromium (as the browser tests).

    python scripts/screenshot-explorer.py en-zh docs/img/explore-en-zh.png --lang en
    python scripts/screenshot-explorer.py en-zh docs/img/explore-en-zh-zh.png --lang zh

Starts the explorer on 127.0.0.1 with CHECKPOINT (a path or a shipped model's name), waits until
the page has translated its first sentence, and saves the top of the page (--height pixels).
Needs chromium, chromium-driver and selenium (`make test` installs them).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out", type=Path)
    ap.add_argument("--lang", choices=("en", "zh"), default="en")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not (chromium and driver_bin):
        sys.exit("chromium and chromium-driver are not installed (make test installs them)")
    port = free_port()
    cmd = [sys.executable, "-m", "aiayn", "explore", "--checkpoint", args.checkpoint]
    proc = subprocess.Popen([*cmd, "--port", str(port), "--no-browser"])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/api/info", timeout=5) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit("the explorer did not start")
                time.sleep(0.3)
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
            opts.add_argument(arg)
        opts.add_argument(f"--window-size={args.width},{args.height}")
        d = webdriver.Chrome(service=Service(driver_bin), options=opts)
        try:
            d.get(f"{url}/?lang={args.lang}")
            WebDriverWait(d, 120).until(
                lambda d: d.execute_script("return Number(document.body.dataset.rendered || 0)")
            )
            time.sleep(0.5)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            d.save_screenshot(str(args.out))
        finally:
            d.quit()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
