"""GPU telemetry in the report (analysis/telemetry/, issue 12 parts 3 and 4): every number against a series
written by hand in the sidecar format of contract/telemetry_format.py (tests/factories/telemetry.py), the lines for
results without telemetry, the PNG per point, and `hpml report` end to end. Unreadable sidecars:
tests/test_telemetry_sidecars.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hpml.analysis.report import build_report
from hpml.analysis.telemetry.plots import MAX_POINTS_PER_LINE, binned, timeline
from hpml.analysis.telemetry.points import PointTelemetry, name_figures
from hpml.analysis.telemetry.series import load_sidecar
from hpml.analysis.telemetry.stats import (
    BUSY_UTIL_GPU_MIN,
    LOW_SM_ACTIVITY_MAX,
    Spread,
    spread,
    timed_energy,
    under_occupied,
)
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.contract.telemetry_format import sidecar_name
from tests.conftest import hpml_here, own_copy
from tests.factories import write_result
from tests.factories.telemetry import (
    PHASES,
    SERIES_A,
    UUID_A,
    UUID_B,
    GiB,
    columns,
    ok_block,
    one_point,
    read_csv,
    render,
    result_with,
    sidecar_doc,
    write_sidecar,
)

# --- the numbers, against the hand-computed series ---

def test_spread_over_the_timed_window_by_hand():
    # window [50, 100, 100]: mean 250/3 = 83.33; sorted, p at position (n - 1) q = 2q: p5 at 0.1 ->
    # 50 + 0.1 x (100 - 50) = 55; median at 1 -> 100; p95 at 1.9 -> 100 + 0.9 x 0 = 100
    assert spread(np.array([50.0, 100.0, 100.0])) == Spread(250 / 3, 100.0, 55.0, 100.0)
    # [20, 30] and a null: mean 25; p5 at 0.05 -> 20.5; median 25; p95 at 0.95 -> 29.5
    assert spread(np.array([20.0, 30.0, np.nan])) == pytest.approx(Spread(25.0, 25.0, 20.5, 29.5))
    assert spread(np.array([np.nan, np.nan])) is None  # all null: unavailable, not 0


def test_under_occupied_thresholds():
    assert (BUSY_UTIL_GPU_MIN, LOW_SM_ACTIVITY_MAX) == (80.0, 30.0)
    assert under_occupied(80.0, 29.9) is True  # the 1-block spin kernel: busy, 1 SM of 132
    assert under_occupied(80.0, 30.0) is False
    assert under_occupied(79.9, 1.0) is False  # not busy
    assert under_occupied(99.0, None) is None  # no SM activity: no verdict


def test_energy_needs_every_timed_phase():
    assert timed_energy(load_phases(PHASES), UUID_A) == 420.0  # 200 + 220; warm-up's 100 left out
    gap = [dict(p, energy_j={UUID_A: None}) if p["index"] == 2 else p for p in PHASES]
    assert timed_energy(load_phases(gap), UUID_A) is None  # a partial sum would understate


def load_phases(phases):
    from hpml.analysis.telemetry.series import _phase
    return [_phase(p, i) for i, p in enumerate(phases)]


def test_per_gpu_and_per_point_numbers_in_markdown_and_full_precision_csv(tmp_path):
    b = columns(4, util_gpu=[0, 90, 90, 90], util_mem=[0, 10, 10, 10], sm_activity=[0, 10, 10, 10],
                sm_occupancy=[0, 5, 6, 7], power_w=[1, 2, 3, 4], mem_used_bytes=[0, GiB, GiB, GiB])
    row = one_point(tmp_path, {UUID_A: columns(4, **SERIES_A), UUID_B: b})
    markdown, written = render([row], tmp_path / "out")

    gpus = read_csv(tmp_path / "out" / "telemetry_gpus.csv")
    a, b = gpus
    assert (a["host"], a["cuda_index"], a["nvml_index"], a["window"], a["samples"]) == ("node0", "0", "2", "timed", "3")
    assert float(a["util_gpu_mean"]) == 250 / 3  # full precision: 83.33333333333333
    assert [float(a[f"util_gpu_{k}"]) for k in ("median", "p5", "p95")] == [100.0, 55.0, 100.0]
    assert [float(a[f"util_mem_{k}"]) for k in ("mean", "median", "p5", "p95")] == pytest.approx([25, 25, 20.5, 29.5])
    assert float(a["mem_used_peak_bytes"]) == 5 * GiB  # in the window; warm-up's 10 GiB is not
    assert float(a["power_mean_w"]) == 200.0  # (100 + 200 + 300) / 3
    assert a["sm_activity_mean"] == "" and a["busy_under_occupied"] == ""  # all null: no number, no verdict
    assert float(a["timed_energy_j"]) == 420.0 and float(a["energy_per_phase_j"]) == 210.0  # (200 + 220) / 2
    assert float(b["sm_activity_mean"]) == 10.0 and float(b["sm_occupancy_mean"]) == 6.0
    assert b["busy_under_occupied"] == "True"  # 90 % busy, 10 % SM activity
    assert float(b["energy_per_phase_j"]) == 190.0  # (180 + 200) / 2

    (point,) = read_csv(tmp_path / "out" / "telemetry_energy.csv")
    assert (point["gpus"], point["timed_phases"], point["phase_name"], point["samples"]) == ("2", "2", "epoch", "2000")
    assert float(point["timed_s"]) == 2.0
    assert float(point["energy_j"]) == 800.0  # 420 + 380
    assert float(point["energy_per_phase_j"]) == 400.0  # 800 / 2 epochs
    assert float(point["energy_per_sample_j"]) == 0.4  # 800 J / 2000 samples

    assert "| 0 | 0 | ok | node0 cuda:0 | NVIDIA H200 | timed | 3 × 1000 ms | 83.3 / 100.0 [55.0, 100.0] | " \
           "25.0 / 25.0 [20.5, 29.5] | 5.00 | 200.0 | n/a | n/a | n/a | 210.00 per epoch |" in markdown
    assert "| node0 cuda:1 | NVIDIA H200 | timed | 3 × 1000 ms | 90.0 / 90.0 [90.0, 90.0] | 10.0 / 10.0 [10.0, 10.0] " \
           "| 1.00 | 3.0 | 10.0 | 6.0 | yes | 190.00 per epoch |" in markdown
    assert "| 0 | 0 | ok | 2 | epoch × 2 | 2.0 | 2000 | 800.00 | 400.00 | 0.4 | telemetry_point0.png |" in markdown
    assert "mean utilization.gpu ≥ 80 % and mean GPM SM activity < 30 %" in markdown
    assert "numpy's `linear` percentiles" in markdown
    assert {p.name for p in written} >= {"telemetry_gpus.csv", "telemetry_gpus.tex", "telemetry_energy.csv",
                                         "telemetry_point0.png"}


def test_the_png_per_point_is_a_drawn_image(tmp_path):
    row = one_point(tmp_path)
    _, written = render([row], tmp_path / "out")
    png = tmp_path / "out" / "telemetry_point0.png"
    assert png in written
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_unavailable_fields_are_named_and_shown_n_a(tmp_path):
    row = one_point(tmp_path, unavailable={"sm_activity": "GPM not supported on this GPU (Ampere)"})
    markdown, _ = render([row], tmp_path / "out")
    assert "- sm_activity: GPM not supported on this GPU (Ampere)" in markdown
    (gpu,) = read_csv(tmp_path / "out" / "telemetry_gpus.csv")
    assert gpu["sm_activity_mean"] == gpu["sm_occupancy_mean"] == ""  # empty in the CSV, n/a in the table
    assert "| 5.00 | 200.0 | n/a | n/a | n/a |" in markdown


def test_without_telemetry_one_line_per_reason_and_no_table(tmp_path):
    rows = [result_with(tmp_path, p, {"status": "unavailable", "reason": "no CUDA device", "interval_ms": 100,
                                      "sidecars": []}) for p in range(4)]
    rows.append(result_with(tmp_path, 4, {"status": "disabled", "reason": "telemetry.enabled is false",
                                          "interval_ms": 100, "sidecars": []}))
    rows.append(result_with(tmp_path, 5, None))  # written before telemetry existed
    markdown, written = render(rows, tmp_path / "out")
    lines = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert lines == ["- GPU telemetry unavailable for 4 result(s): no CUDA device",
                     "- GPU telemetry disabled for 1 result(s): telemetry.enabled is false",
                     "- No GPU telemetry for 1 result(s): no telemetry block in result.json (written before hpml "
                     "recorded GPU telemetry)"]
    assert "|" not in markdown and written == []


def test_a_failed_run_without_a_timed_phase_shows_every_sample(tmp_path):
    warmup_only = PHASES[:1] + [dict(PHASES[1], timed=False, end_s=None, energy_j={})]
    row = one_point(tmp_path, phases=warmup_only, status="oom")
    markdown, _ = render([row], tmp_path / "out")
    (gpu,) = read_csv(tmp_path / "out" / "telemetry_gpus.csv")
    assert (gpu["status"], gpu["window"], gpu["samples"]) == ("oom", "all", "4")
    assert float(gpu["util_gpu_mean"]) == 62.5 and float(gpu["mem_used_peak_bytes"]) == 10 * GiB  # 250 / 4
    assert gpu["timed_energy_j"] == ""
    assert "| oom | 1 | none | 0.0 | n/a | n/a | n/a | n/a |" in markdown


def test_a_phase_the_sampler_never_placed_is_outside_the_window_and_leaves_no_energy(tmp_path):
    unplaced = PHASES[:2] + [dict(PHASES[2], start_s=None, end_s=None, energy_j={UUID_A: None})]
    row = one_point(tmp_path, phases=unplaced)
    render([row], tmp_path / "out")
    (gpu,) = read_csv(tmp_path / "out" / "telemetry_gpus.csv")
    assert gpu["samples"] == "2" and float(gpu["util_gpu_mean"]) == 75.0  # t = 1, 2 of [1, 2]: (50 + 100) / 2
    assert gpu["timed_energy_j"] == ""  # one timed phase without energy: no partial sum
    (point,) = read_csv(tmp_path / "out" / "telemetry_energy.csv")
    assert float(point["timed_s"]) == 1.0 and point["samples"] == "2000"


def test_binned_runs_keep_mean_min_and_max_and_gaps():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    runs = binned(t, np.array([1.0, 3.0, np.nan, 5.0, np.nan, np.nan, 7.0]), 2)
    # runs [1, 3], [null, 5], [null, null], [7]: means 2, 5, gap, 7; times 0.5, 2.5, 4.5, 6
    assert np.allclose(runs.t, [0.5, 2.5, 4.5, 6.0])
    assert np.allclose(runs.mean, [2.0, 5.0, np.nan, 7.0], equal_nan=True)
    assert np.allclose(runs.low, [1.0, 5.0, np.nan, 7.0], equal_nan=True)
    assert np.allclose(runs.high, [3.0, 5.0, np.nan, 7.0], equal_nan=True)


def test_a_long_series_is_drawn_from_runs_short_ones_raw(tmp_path):
    n = 3 * MAX_POINTS_PER_LINE + 1  # runs of k = 4 samples
    row = one_point(tmp_path, {UUID_A: columns(n, util_gpu=[50] * n, sm_activity=[10] * n)})
    path = Path(row["path"]).parent / sidecar_name(0)
    (trace,) = timeline([load_sidecar(path)]).traces
    assert trace.k == 4 and len(trace.util_gpu.mean) == -(-n // 4) <= MAX_POINTS_PER_LINE
    assert trace.sm_activity is not None and np.isnan(trace.util_mem.mean).all()  # util_mem all null: a gap
    short = one_point(tmp_path / "short")
    (trace,) = timeline([load_sidecar(Path(short["path"]).parent / sidecar_name(0))]).traces
    assert trace.k == 1 and trace.sm_activity is None
    assert np.array_equal(trace.util_gpu.mean, [0, 50, 100, 100])


def test_several_sweeps_name_their_sweep_in_the_tables_and_the_pngs(tmp_path):
    rows = []
    for sweep in ("hw5", "mixed/bf16"):
        row = result_with(tmp_path, 0, ok_block(), sweep=sweep)
        write_sidecar(Path(row["path"]).parent, sidecar_doc({UUID_A: columns(4, **SERIES_A)}))
        rows.append(row)
    markdown, written = render(rows, tmp_path / "out")
    assert {p.name for p in written if p.suffix == ".png"} == {"telemetry_hw5_point0.png",
                                                                "telemetry_mixed_bf16_point0.png"}
    assert "| hw5 | 0 | 0 | ok | node0 cuda:0 |" in markdown and "| mixed/bf16 | 0 | 0 | ok | 1 | epoch × 2 |" in markdown


def test_figure_names_never_collide():
    def point(sweep, number, repeat=0):
        return PointTelemetry({"identity": {"sweep": sweep, "point": number, "repeat": repeat}}, [], 1)

    one = [point("a", 0), point("a", 1)]
    name_figures(one)
    assert [p.figure for p in one] == ["telemetry_point0.png", "telemetry_point1.png"]
    many = [point("hw5/x", 0), point("b", 0, 0), point("b", 0, 1), point("b", 0, 1), point("b", None)]
    name_figures(many)
    assert [p.figure for p in many] == ["telemetry_hw5_x_point0.png", "telemetry_b_point0_repeat0.png",
                                        "telemetry_b_point0_repeat1.png", "telemetry_b_point0_repeat1_2.png",
                                        "telemetry_b_run.png"]


def test_hpml_report_end_to_end_with_a_real_cpu_point_and_a_hand_made_sidecar(tmp_path, shared_sweep):
    """A real tiny CPU point (its result has an "unavailable" block, or none when written before telemetry),
    and a copy of it as point 1 whose block is ok with the hand-made sidecar. The point is the study contract's
    (launched once per test run); point 1 and the report are written into this test's own copy."""
    sweep = own_copy(shared_sweep("experiment=tiny/allreduce", timeout=300), tmp_path / "sweep")
    real = json.loads((point_dir(sweep, 0) / RESULT_FILE).read_text())
    block = real.get("telemetry")
    assert block is None or block["status"] == "unavailable", block
    copy = dict(real, identity=dict(real["identity"], point=1), telemetry=ok_block())
    write_result(sweep, copy)
    write_sidecar(point_dir(sweep, 1), sidecar_doc({UUID_A: columns(4, **SERIES_A)}))

    done = hpml_here(["report", str(sweep), "--out", str(tmp_path / "report")], cwd=tmp_path)  # its text is the claim
    assert done.returncode == 0, done.stderr
    markdown = done.stdout
    assert markdown.index("## GPU telemetry") > markdown.index("### ")  # after the workload's sections
    expected = ("GPU telemetry unavailable for 1 result(s): " + block["reason"] if block
                else "No GPU telemetry for 1 result(s): no telemetry block")
    assert expected in markdown
    assert "| 1 | 0 | ok | node0 cuda:0 | NVIDIA H200 | timed | 3 × 1000 ms | 83.3 / 100.0 [55.0, 100.0] |" in markdown
    (point,) = read_csv(tmp_path / "report" / "telemetry_energy.csv")
    assert float(point["energy_per_sample_j"]) == 420 / 2000
    assert (tmp_path / "report" / "telemetry_point1.png").stat().st_size > 0
    report = build_report(sweep)
    assert all(section.title != "GPU telemetry" for section in report.sections)  # the workloads' list stays theirs
    assert report.loaded.problems == [] and [s.title for s in report.telemetry][0] == "GPU telemetry"
