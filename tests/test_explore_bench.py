"""benchmarks/explore_speed.py runs end to end in --quick mode (behaviour only: no speed)."""

import json
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
    assert report["matmul_peak_gflops"] > 0  # the machine's speed, to set figures beside others
    assert report["checkpoint"] == explore_model.name  # no machine's absolute path in a report
    assert report["analyze"]["median_ms"] > 0
    assert report["http"]["median_ms"] > 0
    assert report["http"]["bytes"] > 0
    render = report["render"]
    assert isinstance(render, str) or render["first_render_median_ms"] >= 0
