"""Screenshots of the course for the docs, taken in headless Chromium (as the browser tests).

    python scripts/screenshot-course.py page docs/course/zh/02_attention.html docs/img/course-zh.png
    python scripts/screenshot-course.py lab zh/04_decoder.ipynb docs/img/course-lab-zh.png

``page``: a rendered notebook (python notebooks/build.py --html), scrolled to the first cell
whose output holds --find (default: the first answer of the checker). ``lab``: JupyterLab from
this venv on notebooks/ (a free port on 127.0.0.1, no token) with NOTEBOOK open and run as
shipped, scrolled to the first output holding --find (e.g. the checker's answer to a stub).
Needs chromium, chromium-driver and selenium (`make test` installs them) and, for ``lab``,
aiayn[course].
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser(width: int, height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not (chromium and driver_bin):
        sys.exit("chromium and chromium-driver are not installed (make test installs them)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        opts.add_argument(arg)
    opts.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(driver_bin), options=opts)


SCROLL = """
const want = arguments[0];
for (const out of document.querySelectorAll(".jp-OutputArea-output, .jp-RenderedHTMLCommon")) {
  if (out.textContent.includes(want)) {
    const cell = out.closest(".jp-Cell") || out;
    cell.scrollIntoView();
    window.scrollBy(0, -40);
    return true;
  }
}
return false;
"""


def page(path: Path, out: Path, find: str, width: int, height: int) -> None:
    d = browser(width, height)
    try:
        d.get(path.resolve().as_uri())
        time.sleep(6)  # MathJax typesets the formulas (slowly on a busy machine)
        if not d.execute_script(SCROLL, find):
            sys.exit(f"{path}: no output holds {find!r}")
        time.sleep(0.5)
        d.save_screenshot(str(out))
    finally:
        d.quit()


READY = """
const app = window.jupyterapp;
const panel = app && app.shell.currentWidget;
return Boolean(panel && panel.sessionContext && panel.sessionContext.session &&
               panel.sessionContext.session.kernel && panel.content.widgets.length > 2);
"""
RUN_ALL = "window.jupyterapp.commands.execute('notebook:run-all-cells');"
# The index of the first cell whose output holds arguments[0], brought to the top; -1 while none.
SHOW = """
const nb = window.jupyterapp.shell.currentWidget.content;
for (let i = 0; i < nb.model.cells.length; i++) {
  const cell = nb.model.cells.get(i);
  if (cell.type === "code" && JSON.stringify(cell.outputs.toJSON()).includes(arguments[0])) {
    nb.activeCellIndex = Math.max(i - 1, 0);
    nb.scrollToItem(Math.max(i - 1, 0), "start");
    return i;
  }
}
return -1;
"""


def lab(notebook: str, out: Path, find: str, width: int, height: int) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    port = free_port()
    jupyter = Path(sys.executable).parent / "jupyter"
    # A copy of the notebooks: JupyterLab saves a notebook it has run, outputs and all.
    root = Path(tempfile.mkdtemp()) / "notebooks"
    for lang in ("en", "zh"):
        shutil.copytree(REPO / "notebooks" / lang, root / lang)
    cmd = [str(jupyter), "lab", "--no-browser", f"--port={port}", "--IdentityProvider.token=",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True"]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")  # a container's root
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "/api/status", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit("JupyterLab did not start (is aiayn[course] installed?)")
                time.sleep(0.5)
        d = browser(width, height)
        try:
            # Not d.get: on a busy machine the page may load for longer than its timeout.
            d.execute_script("window.location.href = arguments[0]", f"{url}/lab/tree/{notebook}")
            WebDriverWait(d, 600, poll_frequency=2).until(lambda d: d.execute_script(READY))
            d.execute_script(RUN_ALL)  # the stubs answer with the checker's guiding message
            WebDriverWait(d, 600, poll_frequency=2).until(
                lambda d: d.execute_script(SHOW, find) >= 0
            )
            for no in d.find_elements("xpath", "//button[normalize-space()='No']"):
                no.click()  # JupyterLab's question about news
            time.sleep(3)  # the formulas are typeset
            d.save_screenshot(str(out))
        finally:
            d.quit()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root.parent, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("page", "lab"))
    ap.add_argument("source", help="page: an HTML file; lab: a notebook under notebooks/")
    ap.add_argument("out", type=Path)
    ap.add_argument("--find", default="✓", help="scroll to the cell whose output has this")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.what == "page":
        page(Path(args.source), args.out, args.find, args.width, args.height)
    else:
        lab(args.source, args.out, args.find, args.width, args.height)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
