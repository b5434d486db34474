"""The data path in the report (measurements.data_placement: host | device; missing = host) and whether a
hardware difference exceeds the spread (analysis.stats.exceeds_spread, analysis.tta.compare), against
hand-computed values, from hand-written result dicts and result.json files."""

from __future__ import annotations

import csv
import math

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.stats import difference_threshold, exceeds_spread
from hpml.analysis.train import tables as tt
from hpml.analysis.train.checks import training_result_checks
from hpml.analysis.train.runs import PHASES, train_run
from hpml.analysis.train.sections import phase_sections
from hpml.analysis.tta.compare import hardware_comparison
from hpml.analysis.tta.runs import tta_run
from hpml.analysis.tta.sections import tta_sections
from hpml.analysis.tta.tables import tta_table
from tests.factories import write_result
from tests.factories.train import study_result
from tests.test_tta_report import H100, H200, converging


def on_device(doc, fraction=0.01):
    """doc as the device path records it: data_placement "device", the data phase `fraction` of each step
    (device time of slicing and augmenting) and h2d 0 (the batch is already there)."""
    m = doc["measurements"]
    m["data_placement"] = "device"
    steps = doc["measurements"]["step_time_s"]
    m["phase_time_s"]["data"] = [[s * fraction for s in epoch] for epoch in steps]
    m["phase_time_s"]["h2d"] = [[0.0 for _ in epoch] for epoch in steps]
    return doc


# --- the rule (analysis.stats) ---------------------------------------------------------------------------------

def test_threshold_and_verdict_against_hand_computed_values():
    # means 10 and 12, stds 1 and 1, n 5 and 5: 2 * sqrt(1/5 + 1/5) = 2 * sqrt(0.4) = 1.264911
    assert difference_threshold(1.0, 5, 1.0, 5) == pytest.approx(1.264911, abs=1e-6)
    assert exceeds_spread(10.0, 1.0, 5, 12.0, 1.0, 5) is True        # |10 - 12| = 2 > 1.2649
    assert exceeds_spread(12.0, 1.0, 5, 10.0, 1.0, 5) is True        # the order does not matter
    assert exceeds_spread(10.0, 1.0, 5, 11.0, 1.0, 5) is False       # 1 < 1.2649
    # unequal spreads and sizes (Welch: each side its own variance): 2 * sqrt(4/4 + 1/9) = 2.108185
    assert difference_threshold(2.0, 4, 1.0, 9) == pytest.approx(2 * math.sqrt(1 + 1 / 9))
    assert exceeds_spread(5.0, 0.0, 3, 5.0, 0.0, 3) is False         # equal to the threshold (0) is not above it
    with pytest.raises(ValueError, match="n >= 2"):
        difference_threshold(1.0, 1, 1.0, 5)                          # one run has no sample std


# --- the train workload's phase table ------------------------------------------------------------------------

def _runs(*docs):
    return [train_run({**doc, "path": f"points/{i}/result.json"}) for i, doc in enumerate(docs)]


def test_a_missing_data_placement_reads_as_the_host_path():
    [run] = _runs(study_result(0))  # written before measurements.data_placement existed
    assert run["data_placement"] == "host"


def test_phase_table_never_pools_the_two_data_paths():
    # one configuration, batch and shape; one run on each path (the host run predates the key)
    table = tt.phase_table(_runs(study_result(0), on_device(study_result(1, repeat=1))))
    assert list(table["data_placement"]) == ["host", "device"]
    host, device = table.to_dict("records")
    assert host["group_key"] == device["group_key"] and host["devices"] == device["devices"]
    assert (host["step_n"], device["step_n"]) == (8, 8)  # 2 timed epochs x 4 steps each, not 16 pooled
    # steps of 1 s: host data 10 % and h2d 5 % (tests.factories.train), device data 1 % and h2d 0
    assert [host[f"{p}_mean_s"] for p in PHASES] == pytest.approx([0.1, 0.05, 0.25, 0.5, 0.1])
    assert [device[f"{p}_mean_s"] for p in PHASES] == pytest.approx([0.01, 0.0, 0.25, 0.5, 0.1])
    assert device["train_step_mean_s"] == pytest.approx(0.85)


def test_phase_section_shows_the_data_path_and_says_what_data_means_on_it():
    [both] = phase_sections(tt.phase_table(_runs(study_result(0), on_device(study_result(1, repeat=1)))), {})
    table = both.tables[0]
    assert table.headers[0] == "data path" and [row[0] for row in table.rows] == ["host", "device"]
    assert "host time around next(loader)" in both.markdown and "device time between CUDA events" in both.markdown
    assert "never pooled" in both.markdown
    [host_only] = phase_sections(tt.phase_table(_runs(study_result(0))), {})
    assert "next(loader)" in host_only.markdown and "device path" not in host_only.markdown


def test_an_unknown_data_placement_is_a_problem():
    doc = study_result(0)
    doc["measurements"]["data_placement"] = "gpu"
    assert training_result_checks(doc) == ["measurements.data_placement: expected one of host, device, got 'gpu'"]
    assert training_result_checks(on_device(study_result(1))) == []


def test_report_writes_the_data_path_column_of_the_phase_table(tmp_path):
    for doc in (study_result(0), on_device(study_result(1, repeat=1))):
        write_result(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    with open(tmp_path / "report" / "train_phases.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["data_placement"] for r in rows] == ["host", "device"]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| data path | per-device batch | N | steps (n) |" in markdown
    assert "| device | 32 | 1 | 8 | 10.00 | 0.00 | 250.00 |" in markdown


# --- time to accuracy: the data path and the hardware comparison -----------------------------------------------

# TTA [s] per run (epochs to target 2 each): H100 mean 10, std 1; H200 mean 12, std 1 (n 5 each):
# |10 - 12| = 2 > 2 * sqrt(1/5 + 1/5) = 1.2649: exceeds. H200_CLOSE: mean 11, std 1: 1 < 1.2649: within.
H100_TTA = [9.0, 9.0, 10.0, 11.0, 11.0]
H200_TTA = [11.0, 11.0, 12.0, 13.0, 13.0]
H200_CLOSE = [10.0, 10.0, 11.0, 12.0, 12.0]


def _docs(times, gpu, first_point, sweep, placement=None):
    docs = []
    for i, t in enumerate(times):
        doc = converging(first_point + i, t, 2, sweep=sweep, gpu=gpu)
        if placement:
            doc["measurements"]["data_placement"] = placement
        docs.append(doc)
    return docs


def _tta_runs(docs):
    return [tta_run({**doc, "path": f"{doc['identity']['sweep']}/{doc['identity']['point']}"}) for doc in docs]


def test_tta_rows_are_kept_apart_by_data_path():
    # one configuration (only measurements.data_placement differs), one hardware, two paths: two rows
    runs = _tta_runs(_docs(H100_TTA, H100, 0, "a") + _docs(H200_TTA, H100, 10, "b", placement="device"))
    table = tta_table(runs)
    assert table["config_key"].nunique() == 1
    assert list(table["data_placement"]) == ["device", "host"] and list(table["runs"]) == [5, 5]
    assert list(table["tta_s_mean"]) == pytest.approx([12.0, 10.0])
    # one hardware per path: nothing to compare (never host against device)
    assert hardware_comparison(table).empty


def test_a_configured_data_placement_is_part_of_the_configuration():
    docs = _docs(H100_TTA[:2], H100, 0, "a") + _docs(H100_TTA[:2], H100, 10, "b", placement="device")
    for doc in docs[2:]:
        doc["config"]["workload"]["data_placement"] = "device"
    assert len({run["config_key"] for run in _tta_runs(docs)}) == 2


def test_comparison_exceeds_for_tta_and_not_for_equal_epochs():
    table = tta_table(_tta_runs(_docs(H100_TTA, H100, 0, "h100") + _docs(H200_TTA, H200, 10, "h200")))
    comparison = hardware_comparison(table)
    assert list(comparison["measure"]) == ["tta_s", "epochs"]
    tta, epochs = comparison.to_dict("records")
    assert (tta["hardware_a"], tta["hardware_b"], tta["data_placement"]) == (H100, H200, "host")
    assert (tta["mean_a"], tta["mean_b"], tta["n_a"], tta["n_b"]) == (10.0, 12.0, 5, 5)
    assert (tta["std_a"], tta["std_b"]) == pytest.approx((1.0, 1.0))
    assert tta["difference"] == pytest.approx(-2.0)
    assert tta["difference_share_of_slower"] == pytest.approx(2 / 12)  # of the slower (larger) mean
    assert tta["threshold"] == pytest.approx(2 * math.sqrt(0.4))
    assert tta["exceeds_spread"]
    # every run needed 2 epochs: no difference and no spread: 0 > 0 is false
    assert (epochs["difference"], epochs["threshold"], epochs["exceeds_spread"]) == (0.0, 0.0, False)


def test_comparison_within_the_spread():
    table = tta_table(_tta_runs(_docs(H100_TTA, H100, 0, "h100") + _docs(H200_CLOSE, H200, 10, "h200")))
    tta = hardware_comparison(table).iloc[0]
    assert tta["difference"] == pytest.approx(-1.0) and not tta["exceeds_spread"]


def test_comparison_only_within_one_data_path():
    docs = (_docs(H100_TTA, H100, 0, "h100") + _docs(H200_TTA, H200, 10, "h200")
            + _docs(H200_TTA, H100, 20, "h100d", placement="device") + _docs(H100_TTA, H200, 30, "h200d",
                                                                             placement="device"))
    comparison = hardware_comparison(tta_table(_tta_runs(docs)))
    tta = comparison[comparison["measure"] == "tta_s"]
    assert list(tta["data_placement"]) == ["device", "host"]
    assert list(tta["mean_a"]) == [12.0, 10.0] and list(tta["mean_b"]) == [10.0, 12.0]


def test_a_hardware_row_needs_two_converged_runs_to_be_compared():
    docs = _docs(H100_TTA, H100, 0, "h100") + _docs(H200_TTA[:1], H200, 10, "h200")
    assert hardware_comparison(tta_table(_tta_runs(docs))).empty


def test_one_hardware_type_gives_no_comparison_and_no_crash(tmp_path):
    runs = _tta_runs(_docs(H100_TTA, H100, 0, "h100"))
    table = tta_table(runs)
    comparison = hardware_comparison(table)
    assert comparison.empty
    sections = tta_sections(runs, table, comparison)
    assert [s.level for s in sections] == [2, 3]  # the heading and the configuration, no comparison
    assert hardware_comparison(tta_table([])).empty  # no run with a target at all
    for doc in _docs(H100_TTA, H100, 0, "h100"):
        write_result(tmp_path / "h100", doc)
    assert report_main([str(tmp_path)]) == 0
    assert "Hardware difference vs spread" not in (tmp_path / "report" / "report.md").read_text()
    assert not (tmp_path / "report" / "tta_hardware.csv").exists()


def test_report_states_the_rule_and_the_verdicts(tmp_path):
    for doc in _docs(H100_TTA, H100, 0, "h100") + _docs(H200_TTA, H200, 10, "h200"):
        write_result(tmp_path / doc["identity"]["sweep"], doc)
    assert report_main([str(tmp_path)]) == 0
    out = tmp_path / "report"
    markdown = (out / "report.md").read_text()
    assert "#### Hardware difference vs spread: resnet18 to 90 % top-1" in markdown
    assert "|mean_A - mean_B| > threshold = 2 * sqrt(s_A^2/n_A + s_B^2/n_B)" in markdown
    assert "approximate 95 % interval of the difference of means, Welch-style" in markdown
    assert (f"{H100} vs {H200} (host path), TTA (evaluation included): exceeds the spread. "
            f"{H100} vs {H200} (host path), epochs to target: within the spread.") in markdown
    assert (f"| host | 90 % | TTA (evaluation included) | {H100} | 10.00 s (n=5) | {H200} | 12.00 s (n=5) | "
            "-2.00 s | 16.7 % | 1.26 s | exceeds the spread |") in markdown
    assert f"| {H100} | host | 5 | 5/5 (100 %) | 10.00 ± 1.00 (n=5) |" in markdown  # the data path column
    with open(out / "tta_hardware.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["measure"] for r in rows] == ["tta_s", "epochs"]
    assert [r["exceeds_spread"] for r in rows] == ["True", "False"]
    assert float(rows[0]["threshold"]) == pytest.approx(2 * math.sqrt(0.4))
    tex = (out / "tta_hardware.tex").read_text()
    assert r"\label{tab:tta_hardware-0}" in tex and "exceeds the spread" in tex
