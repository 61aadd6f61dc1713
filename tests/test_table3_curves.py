"""aiayn.table3.curves: the curves file, its reader, the plots and the equal-compute lookup,
on synthetic curves (no committed run has recorded curves yet)."""

from __future__ import annotations

import json
import math

import pytest

from aiayn.errors import UserError
from aiayn.table3 import curves


def _events():
    # as aiayn train writes RUN/metrics.jsonl with --log-every 50 --valid-every 200
    out = [{"event": "train", "step": s, "loss": 8.0 - s / 100} for s in range(50, 401, 50)]
    out += [{"event": "valid", "step": s, "ppl": 400.0 / s, "loss": 1.0} for s in (200, 400)]
    out += [{"event": "checkpoint", "step": 200}, {"event": "stop", "step": 400}]
    out.append(
        {"event": "valid", "step": 400, "ppl": 1.5}
    )  # logged again after a resume: last wins
    return out


def test_a_runs_metrics_become_its_curve() -> None:
    curve = curves.curve_from_metrics(_events())
    assert curve["dev_ppl"] == [[200, 2.0], [400, 1.5]]
    assert [p[0] for p in curve["train_loss"]] == list(range(50, 401, 50))
    assert curve["train_loss"][0] == [50, 7.5]


def test_curves_are_written_run_by_run_and_read_back(tmp_path) -> None:
    assert curves.read_curves(tmp_path) == {}
    one = curves.curve_from_metrics(_events())
    curves.write_curve(tmp_path, "base-s1", one)
    curves.write_curve(tmp_path, "C-n2-s1", {"dev_ppl": [[100, 9.0]], "train_loss": []})
    got = curves.read_curves(tmp_path)
    assert set(got) == {"base-s1", "C-n2-s1"}
    assert got["base-s1"] == one
    assert not (tmp_path / "curves.tmp").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "not a JSON object"),
        ('{"runs": {"a": {"dev_ppl": []}}}', "needs dev_ppl and train_loss"),
        ('{"runs": {"a": {"dev_ppl": [[1, NaN]], "train_loss": []}}}', r"not \[step, finite"),
        ('{"runs": {"a": {"dev_ppl": [[2, 3.0], [1, 4.0]], "train_loss": []}}}', "increasing"),
    ],
)
def test_a_damaged_curves_file_is_one_line_naming_it(tmp_path, text, message) -> None:
    (tmp_path / "curves.json").write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=message) as e:
        curves.read_curves(tmp_path)
    assert "curves.json" in str(e.value)
    assert "\n" not in str(e.value)


DEV = [[200, 40.0], [400, 20.0], [600, 10.0]]


def test_equal_compute_interpolates_in_log_ppl_or_takes_the_nearest_checkpoint() -> None:
    # 300 updates' worth of FLOPs: halfway between 40 and 20 in log PPL is their geometric mean
    got = curves.at_flops(DEV, 1e9, 300e9, "interpolated")
    assert got == {"step": 300, "ppl": pytest.approx(math.sqrt(40 * 20)), "how": "interpolated"}
    assert curves.at_flops(DEV, 1e9, 400e9, "interpolated")["ppl"] == pytest.approx(20.0)
    assert curves.at_flops(DEV, 1e9, 330e9, "nearest") == {"step": 400, "ppl": 20.0,
                                                           "how": "nearest"}  # fmt: skip
    beyond = curves.at_flops(DEV, 1e9, 900e9, "nearest")  # a smaller model needs more updates
    assert beyond["how"] == "beyond the run"
    assert beyond["step"] == pytest.approx(900)
    assert math.isnan(beyond["ppl"])
    assert curves.at_flops(DEV, 1e9, 100e9, "nearest")["how"] == "before the first checkpoint"


def test_row_c_is_read_at_the_base_runs_flops_of_the_same_seed() -> None:
    records = [
        {"run": "base-s1", "name": "base", "seed": 1, "steps": 600, "train_flops": 600e9},
        {"run": "C-n8-s1", "name": "C-n8", "seed": 1, "steps": 600, "train_flops": 1200e9},
        {"run": "C-n2-s1", "name": "C-n2", "seed": 1, "steps": 600, "train_flops": 300e9},
        {"run": "A-h1-s1", "name": "A-h1", "seed": 1, "steps": 600, "train_flops": 600e9},
    ]
    found = {"C-n8-s1": {"dev_ppl": DEV}, "C-n2-s1": {"dev_ppl": DEV}, "A-h1-s1": {"dev_ppl": DEV}}
    got = {g["run"]: g for g in curves.equal_compute(records, found)}
    assert set(got) == {"C-n8-s1", "C-n2-s1"}  # row C only
    assert got["C-n8-s1"]["step"] == pytest.approx(300)  # twice the FLOPs an update: half the steps
    assert got["C-n2-s1"]["how"] == "beyond the run"  # half the FLOPs: 1200 updates, run has 600


def test_one_curve_plot_a_row_group_with_curves(tmp_path) -> None:
    records = [
        {"run": f"{n}-s{s}", "name": n, "seed": s, "steps": 600, "train_flops": 1.0}
        for n in ("base", "C-n2", "D-drop0.0")
        for s in (1, 2)
    ]
    found = {
        r["run"]: {"dev_ppl": DEV, "train_loss": []} for r in records if r["name"] != "D-drop0.0"
    }
    written = curves.curve_plots(records, found, tmp_path / "plots")
    assert [p.name for p in written] == ["curves-C.png"]  # D has no curve, A no run
    assert written[0].read_bytes()[:4] == b"\x89PNG"
    assert json.dumps(found)  # the fixture is what curves.json holds
