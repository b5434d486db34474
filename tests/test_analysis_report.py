"""`hpml report DIR`: report.md and scaling.csv with the hand-computed numbers (analysis.report)."""

import csv

import pytest

from hpml.analysis.report import main
from tests.factories import write_manifest as write_fake_manifest
from tests.factories import write_result as write_fake_result
from tests.factories.train import train_result as fake_result


@pytest.fixture
def sweep(tmp_path):
    """Weak scaling: N=1 epochs [9, 4, 4] -> 4.0 s; N=2 [5, 2.5, 1.5] -> 2.0 s: speedup 2.0.
    Steps of epochs 2..: N=1 mean 1.0 s, N=2 mean 1.25 s: efficiency 0.8. Point 2 ran out of memory,
    point 3 never wrote a result."""
    sweep_dir = tmp_path / "sweep"
    write_fake_manifest(sweep_dir, points=[0, 1, 2, 3], sweep="quick")
    write_fake_result(sweep_dir, fake_result(point=0, sweep="quick", epoch_times=[9, 4, 4],
                                             step_times=[[3, 2, 2, 2], [1] * 4, [1] * 4]))
    write_fake_result(sweep_dir, fake_result(point=1, sweep="quick", workers_per_node=2,
                                             epoch_times=[5, 2.5, 1.5], step_times=[[2, 3], [1.5, 1.0], [1.0, 1.5]]))
    write_fake_result(sweep_dir, fake_result(point=2, sweep="quick", workers_per_node=4, epoch_times=[],
                                             step_times=[], epochs=3, status="oom", reason="out of memory"))
    return sweep_dir


def test_report_writes_markdown_and_csv_with_hand_computed_numbers(sweep, capsys):
    assert main([str(sweep)]) == 0

    with open(sweep / "report" / "scaling.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["devices"]) for r in rows] == [1, 2, 4]
    assert [r["fits"] for r in rows] == ["True", "True", "False"]  # N = 4 ran out of memory
    rows = rows[:2]
    assert [float(r["epoch_time_mean_s"]) for r in rows] == pytest.approx([4.0, 2.0])
    assert [float(r["epoch_time_std_s"]) for r in rows] == pytest.approx([0.0, 0.5 ** 0.5])
    assert [float(r["epoch_time_cv"]) for r in rows] == pytest.approx([0.0, 0.5 ** 0.5 / 2.0])
    assert [int(r["n"]) for r in rows] == [2, 2]
    assert [float(r["speedup"]) for r in rows] == pytest.approx([1.0, 2.0])
    assert [float(r["efficiency"]) for r in rows] == pytest.approx([1.0, 0.8])
    assert [int(r["baseline_devices"]) for r in rows] == [1, 1]

    markdown = (sweep / "report" / "report.md").read_text()
    assert capsys.readouterr().out == markdown
    assert "### Epoch time and speedup: quick · ddp · resnet18 · fp32" in markdown
    assert "weak scaling (per-device batch fixed, the data set per epoch fixed: N devices share it); " \
           "baseline: for each per-device batch, its smallest N (N = 1" in markdown
    # no train-phase times in these results: that column stays empty
    assert "| 32 | 2 | 1 × 2 | 64 | 1 | 2.000 ± 0.707 (n=2) | — | 1250.00 / 1250.00 (n=4) | 64.0 | 2.00 | — | " \
           "80.0 % |" in markdown
    assert markdown.count("2.000 ± 0.707") == 1  # each number once
    assert "oom: out of memory" in markdown  # read, but in no table
    assert "## Problems (1)" in markdown
    assert "points/3/result.json`: missing result" in markdown


def test_report_out_option(sweep, tmp_path, capsys):
    out = tmp_path / "elsewhere"
    assert main([str(sweep), "--out", str(out)]) == 0
    assert (out / "report.md").exists() and (out / "scaling.csv").exists()
    assert not (sweep / "report").exists()


def test_strong_scaling_heading(tmp_path, capsys):
    write_fake_result(tmp_path, fake_result(point=0, scaling="strong", batch_size=64, epoch_times=[10, 8, 8],
                                            step_times=[[2]] * 3))
    assert main([str(tmp_path)]) == 0
    assert ("strong scaling (global batch fixed, split over the devices); baseline: for each global batch, its "
            "smallest N (N = 1") in capsys.readouterr().out


def test_corrupt_results_still_give_a_report(tmp_path, capsys):
    (tmp_path / "points" / "0").mkdir(parents=True)
    (tmp_path / "points" / "0" / "result.json").write_text("not json")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "## No ok results to tabulate" in out
    assert "corrupt JSON" in out


@pytest.mark.parametrize("make", [
    lambda root: root / "does-not-exist",
    lambda root: root,  # exists, holds nothing
    lambda root: write_fake_manifest(root, points=[0]).parent,  # a sweep whose points have no result yet
])
def test_nothing_to_report_is_one_error_line_and_exit_2(tmp_path, capsys, make):
    assert main([str(make(tmp_path))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hpml: error: ")
