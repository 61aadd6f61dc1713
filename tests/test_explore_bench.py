"""benchmarks/explore_speed.py runs end to end in --quick mode (behaviour only: no speed)."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_explore_speed_quick_runs(tmp_path: Path, explore_model: Path) -> None:
    out = tmp_path / "speed.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "explore_speed.py"), "--quick"]
    cmd += ["--threads", "1", "--checkpoint", str(explore_model), "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["sentence_words"] == 20
    assert report["machine"]["matmul_peak_gflops"] > 0  # to set figures beside other machines
    assert report["checkpoint"] == explore_model.name  # no machine's absolute path in a report
    assert report["analyze"]["median_ms"] > 0
    assert report["http"]["median_ms"] > 0
    assert report["http"]["bytes"] > 0
    render = report["render"]
    if _browser_available():  # then the page must have been drawn, and timed
        assert isinstance(render, dict), render
        assert render["renders"] == 1
        assert render["first_render_median_ms"] > 0
        assert render["page_ready_median_ms"] > 0
    else:  # else the report says which part is missing, in place of the figures
        assert isinstance(render, str)
        assert render.startswith("skipped: ")
        assert "selenium" in render or "chromium" in render


def _browser_available() -> bool:
    """What benchmarks/explore_speed.py needs to time a render: selenium and Chromium."""
    have_driver = shutil.which("chromedriver") is not None
    have_chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return importlib.util.find_spec("selenium") is not None and have_driver and bool(have_chromium)
