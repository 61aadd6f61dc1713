"""The walkthrough's HTML report: self-contained, and rendered by a real headless Chromium.

The page is opened with a probe script injected at the top of its <head>: it records every
error (script errors, console.error, resources that fail to load) and, once the page has
loaded, measures each section and each formula. Chromium's --dump-dom hands back the DOM with
the probe's findings; a screenshot is saved in the test's tmp directory. Skipped with a reason
when no Chromium is installed (``make test`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiayn.walkthrough import WalkthroughConfig, build
from aiayn.walkthrough import render_html as rh

STEPS = [f"step-{i}" for i in range(1, 15)]
EXTRAS = ["example", "loss", "backward", "update", "positions", "differences", "summary"]

PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  window.__errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href))));
}, true);
window.addEventListener("unhandledrejection", function (e) {
  window.__errors.push("rejection: " + e.reason);
});
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
})();
window.addEventListener("load", function () {
  var report = {errors: window.__errors, sections: {}, maths: 0, mathsDrawn: 0, cells: 0};
  document.querySelectorAll("section").forEach(function (s) {
    var r = s.getBoundingClientRect();
    report.sections[s.id] = {height: r.height, width: r.width,
                             title: (s.querySelector("h2") || {}).textContent || ""};
  });
  document.querySelectorAll("math").forEach(function (m) {
    report.maths += 1;
    var r = m.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) { report.mathsDrawn += 1; }
  });
  report.cells = document.querySelectorAll("table.heat td").length;
  var pre = document.createElement("pre");
  pre.id = "probe-report";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
</script>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(browser: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--hide-scrollbars",
        f"--user-data-dir={tmp / 'profile'}",
        *extra,
        page.as_uri(),
    ]
    env = {**os.environ, "HOME": str(tmp)}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)


def _probe(browser: str, html: str, tmp: Path) -> dict:
    """Open html with the probe injected and return the probe's report."""
    page = tmp / "probed.html"
    page.write_text(html.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    res = _run(browser, page, tmp, "--virtual-time-budget=5000", "--dump-dom")
    found = re.search(r'<pre id="probe-report">(.*?)</pre>', res.stdout, re.S)
    assert found, f"no probe report; chromium said: {res.stderr[-2000:]}"
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


@pytest.fixture(scope="module")
def page() -> str:
    return rh.render(build(WalkthroughConfig()))


def test_the_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # nothing runs
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    assert "<link" not in page
    assert "@import" not in page
    assert "url(" not in page
    for sid in STEPS + EXTRAS:
        assert f'<section id="{sid}"' in page
    assert page.count("<math") > 100  # the formulas, as MathML
    assert page.count("<svg") == 2  # the positional-encoding pictures


def test_chromium_renders_every_step_without_errors(page: str, tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    report = _probe(browser, page, tmp_path)
    assert report["errors"] == []
    for sid in STEPS + EXTRAS:
        assert sid in report["sections"], sid
        box = report["sections"][sid]
        assert box["height"] > 50, (sid, box)
        assert box["width"] > 300, (sid, box)
        assert box["title"].strip(), sid
    assert report["maths"] > 100
    assert report["mathsDrawn"] == report["maths"]  # every formula is laid out (MathML works)
    assert report["cells"] > 1000
    shot = tmp_path / "walkthrough.png"
    res = _run(
        browser,
        tmp_path / "probed.html",
        tmp_path,
        "--window-size=1280,2000",
        f"--screenshot={shot}",
    )
    assert shot.exists(), res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a real picture, not a blank page


def test_the_probe_sees_a_console_error(tmp_path: Path) -> None:
    """The negative control: a page that fails is reported as failing."""
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    bad = (
        "<!DOCTYPE html><html><head><title>bad</title></head><body>"
        '<section id="s"><h2>x</h2></section><script>console.error("boom");'
        "undefined_function();</script></body></html>"
    )
    report = _probe(browser, bad, tmp_path)
    assert any("boom" in e for e in report["errors"])
    assert any("undefined_function" in e for e in report["errors"])
