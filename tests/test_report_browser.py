"""The walkthrough's HTML report: self-contained, and rendered by a real headless Chromium.

The page is opened with a probe script injected at the top of its <head>: it records every
error (script errors, console.error, resources that fail to load) and, once the page has
loaded, measures each section and each formula box (one that overflows would show scroll
arrows) and draws every CJK character on a canvas (one drawn like a code point no font has is a
missing glyph, an empty box). Chromium's --dump-dom hands back the DOM with the probe's
findings; a screenshot is saved in the test's tmp directory. Negative controls prove the probe
sees errors, an overflowing formula and missing glyphs. Skipped with a reason when no Chromium
is installed; with Chromium but no CJK font the Chinese page fails (``make test`` installs
Debian's ``chromium`` and ``fonts-wqy-microhei``).
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
from tests.browser_support import ERRORS_PROBE

STEPS = [f"step-{i}" for i in range(1, 15)]
EXTRAS = ["example", "loss", "backward", "update", "positions", "differences", "summary"]

# The page errors (ERRORS_PROBE), then, once loaded, its measures in <pre id="probe-report">.
PROBE = (
    "<script>"
    + ERRORS_PROBE
    + """window.addEventListener("load", function () {
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
  // Every box that holds a formula must hold all of it: no overflow, so no scroll arrows.
  report.overflow = [];
  var seen = new Set();
  document.querySelectorAll("math").forEach(function (m) {
    var box = m.parentElement;
    if (seen.has(box)) { return; }
    seen.add(box);
    if (box.scrollWidth > box.clientWidth || box.scrollHeight > box.clientHeight) {
      report.overflow.push([box.className || box.tagName, box.scrollWidth, box.clientWidth,
                            box.scrollHeight, box.clientHeight, box.textContent.slice(0, 60)]);
    }
  });
  // The page itself is no wider than the window (a line that cannot wrap, such as links
  // with no break between them, gives the whole page a horizontal scroll bar).
  report.pageWidth = [document.documentElement.scrollWidth, window.innerWidth];
  // Every CJK character must be drawn with a font that has it: a missing glyph is drawn as
  // the font's .notdef box, the same picture as a code point no font has (U+10FFFD).
  report.cjk = 0;
  report.missing = [];
  var canvas = document.createElement("canvas");
  canvas.width = 48; canvas.height = 48;
  var ctx = canvas.getContext("2d", {willReadFrequently: true});
  ctx.font = "32px " + getComputedStyle(document.body).fontFamily;
  ctx.textBaseline = "top";
  function picture(ch) {
    ctx.clearRect(0, 0, 48, 48);
    ctx.fillText(ch, 4, 4);
    return Array.prototype.join.call(ctx.getImageData(0, 0, 48, 48).data, ",") +
      "|" + ctx.measureText(ch).width;
  }
  var nothing = picture("\\u{10FFFD}");
  var chars = new Set(document.body.innerText.match(/[\\u3000-\\u9fff\\uff00-\\uffef]/gu) || []);
  chars.forEach(function (ch) {
    report.cjk += 1;
    if (picture(ch) === nothing) { report.missing.push(ch); }
  });
  var pre = document.createElement("pre");
  pre.id = "probe-report";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
</script>"""
)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(
    browser: str, page: Path, tmp: Path, *extra: str, env: dict | None = None
) -> subprocess.CompletedProcess:
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
    env = {**os.environ, "HOME": str(tmp), **(env or {})}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)


def _probe(browser: str, html: str, tmp: Path, *extra: str, env: dict | None = None) -> dict:
    """Open html with the probe injected and return the probe's report."""
    page = tmp / "probed.html"
    page.write_text(html.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    res = _run(browser, page, tmp, "--virtual-time-budget=5000", "--dump-dom", *extra, env=env)
    found = re.search(r'<pre id="probe-report">(.*?)</pre>', res.stdout, re.S)
    assert found, f"no probe report; chromium said: {res.stderr[-2000:]}"
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


def _cjk_font() -> str | None:
    """A font file that fontconfig says covers the Chinese page's characters (我, 爱, 你, 步)."""
    if shutil.which("fc-list") is None:
        return None
    res = subprocess.run(
        ["fc-list", ":charset=6211 7231 4f60 6b65", "file"], capture_output=True, text=True
    )
    return res.stdout.split(":")[0].strip() or None


def _browser() -> str:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    return browser


@pytest.fixture(scope="module", params=["en", "zh"])
def page(request: pytest.FixtureRequest) -> str:
    return rh.render(build(WalkthroughConfig(lang=request.param)))


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


@pytest.mark.slow  # two page loads and a screenshot per language
def test_chromium_renders_every_step_without_errors(page: str, tmp_path: Path) -> None:
    browser = _browser()
    zh = 'lang="zh"' in page
    if zh:  # a failure, not a skip: without a CJK font the page is empty boxes
        assert _cjk_font(), "no CJK font (make test installs Debian's fonts-wqy-microhei)"
    report = _probe(browser, page, tmp_path, "--window-size=1280,2000")
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
    assert report["overflow"] == []  # no formula box overflows (no scroll arrows)
    page_width, window_width = report["pageWidth"]
    assert page_width <= window_width  # nothing makes the page scroll sideways (the nav wraps)
    assert report["missing"] == []  # every character is drawn from a font that has it
    assert report["cjk"] > (300 if zh else 0)  # the glyph check saw the Chinese text
    narrow = _probe(browser, page, tmp_path, "--window-size=640,2000")
    assert narrow["overflow"] == []  # a narrow window wraps the formulas instead
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
    browser = _browser()
    bad = (
        "<!DOCTYPE html><html><head><title>bad</title></head><body>"
        '<section id="s"><h2>x</h2></section><script>console.error("boom");'
        "undefined_function();</script></body></html>"
    )
    report = _probe(browser, bad, tmp_path)
    assert any("boom" in e for e in report["errors"])
    assert any("undefined_function" in e for e in report["errors"])


def test_the_probe_sees_an_overflowing_formula(tmp_path: Path) -> None:
    """The negative control: a formula wider than its box is reported."""
    browser = _browser()
    wide = rh.tex(r"X = " + " + ".join(f"a_{{{i}}}" for i in range(40)), display=True)
    bad = (
        f"<!DOCTYPE html><html><head><style>{rh.CSS}</style></head><body>"
        f'<div class="formula" style="width: 200px">{wide}</div></body></html>'
    )
    assert len(_probe(browser, bad, tmp_path)["overflow"]) == 1


def test_the_probe_sees_a_page_wider_than_the_window(tmp_path: Path) -> None:
    """The negative control: links with no break between them overflow the page, as the
    report's navigation did before its links were separated by spaces."""
    browser = _browser()
    links = "".join(f'<a href="#s{i}">Step {i}. A long title</a>' for i in range(40))
    bad = f"<!DOCTYPE html><html><head><style>{rh.CSS}</style></head><body><nav>{links}</nav>"
    page_width, window_width = _probe(browser, bad + "</body></html>", tmp_path)["pageWidth"]
    assert page_width > window_width


def test_the_probe_sees_missing_glyphs(tmp_path: Path) -> None:
    """The negative control: with only a Latin font, the Chinese text is reported missing."""
    browser = _browser()
    latin = subprocess.run(
        ["fc-match", "-f", "%{file}", "DejaVu Sans"], capture_output=True, text=True, check=False
    ).stdout
    if not latin or not Path(latin).is_file():
        pytest.skip("no DejaVu Sans font file to build a Latin-only font set from")
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    shutil.copy(latin, fonts)
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        f"<?xml version='1.0'?><fontconfig><dir>{fonts}</dir>"
        f"<cachedir>{tmp_path / 'fc-cache'}</cachedir></fontconfig>",
        encoding="utf-8",
    )
    page = (
        "<!DOCTYPE html><html><head></head><body><p>我爱你 Transformer 逐步推导</p></body></html>"
    )
    report = _probe(browser, page, tmp_path, env={"FONTCONFIG_FILE": str(conf)})
    assert sorted(report["missing"]) == sorted("我爱你逐步推导")
