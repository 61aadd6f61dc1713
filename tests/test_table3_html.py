"""The Table 3 report as HTML (aiayn/table3/html.py): the Markdown rendered, self-contained,
and drawn by a real headless Chromium without errors, with every plot loaded and nothing wider
than the window (skipped with a reason when no Chromium is installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiayn.table3 import html
from tests.browser_support import ERRORS_PROBE

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "benchmarks" / "results" / "table3"

PROBE = (
    "<script>"
    + ERRORS_PROBE
    + """window.addEventListener("load", function () {
  var report = {errors: window.__errors, images: [], tables: 0, overflow: []};
  document.querySelectorAll("img").forEach(function (i) {
    report.images.push([i.alt, i.naturalWidth, i.getBoundingClientRect().right]);
  });
  report.tables = document.querySelectorAll("table").length;
  report.pageWidth = [document.documentElement.scrollWidth, window.innerWidth];
  var pre = document.createElement("pre");
  pre.id = "probe-report";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
</script>"""
)


def test_markdown_is_rendered_and_escaped(tmp_path: Path) -> None:
    (tmp_path / "plots").mkdir()
    png = (COMMITTED / "plots" / "table3-A.png").read_bytes()
    (tmp_path / "plots" / "a.png").write_bytes(png)
    md = "\n".join(
        [
            "# Title <b>",
            "",
            "A paragraph with **bold**, `code <x>` and a [link](report.md)",
            "that goes on & on.",
            "",
            "| row | | PPL |",
            "|---|---|---|",
            "| base | paper | 4.92 |",
            "| A-h1 | ours (1 seed) | **14.39 [14.0, 15.1]** |",
            "",
            "![row A](plots/a.png)",
            "![row B](plots/missing.png)",
            "#not a heading",
        ]
    )
    page = html.render(md, tmp_path)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # it runs nothing
    assert "<h1>Title &lt;b&gt;</h1>" in page
    assert "<strong>bold</strong>" in page
    assert "<code>code &lt;x&gt;</code>" in page
    assert '<a href="report.md">link</a>' in page
    assert "that goes on &amp; on.</p>" in page  # one paragraph of two lines
    assert '<tr class="paper"><td>base</td><td>paper</td><td class="num">4.92</td></tr>' in page
    assert '<td class="num"><strong>14.39 [14.0, 15.1]</strong></td>' in page
    assert 'src="data:image/png;base64,' in page  # embedded: the page needs no file beside it
    assert 'src="plots/missing.png"' in page  # a missing file stays a link, nothing is lost
    assert "<p>#not a heading</p>" in page


def test_the_committed_html_is_the_committed_markdown() -> None:
    md = (COMMITTED / "report.md").read_text(encoding="utf-8")
    assert (COMMITTED / "report.html").read_text(encoding="utf-8") == html.render(md, COMMITTED)


@pytest.mark.slow
def test_chromium_draws_the_committed_report(tmp_path: Path) -> None:
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None
    )
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    page = (COMMITTED / "report.html").read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    common += ["--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    common += ["--window-size=1280,1600"]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [*common, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    found = re.search(r'<pre id="probe-report">(.*?)</pre>', res.stdout, re.S)
    assert found, f"no probe report; chromium said: {res.stderr[-2000:]}"
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    report = json.loads(text.replace("&amp;", "&"))
    assert report["errors"] == []
    assert report["tables"] == 3  # the table, the findings, the cost
    plots = sorted((COMMITTED / "plots").glob("table3-*.png"))
    assert len(report["images"]) == len(plots) > 0
    for alt, width, right in report["images"]:
        assert width > 0, alt  # decoded
        assert right <= 1280, alt
    assert report["pageWidth"][0] <= report["pageWidth"][1]  # no horizontal scroll bar
    shot = tmp_path / "report.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", (COMMITTED / "report.html").as_uri()],
        capture_output=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert shot.stat().st_size > 10_000
