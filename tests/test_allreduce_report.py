"""The all-reduce part of `hpml report` (analysis/allreduce/): the table,
hpml's loop next to the bare loop, utilization against the link peak, allreduce.csv and the busbw PNG."""

from __future__ import annotations

import csv

import pytest

from hpml.analysis.allreduce.plots import size_text
from hpml.analysis.report import main as report_main
from hpml.analysis.synthetic.sections import duration_text
from tests.conftest import ALLREDUCE_VS_BARE, hpml_here, launch_stdout, own_copy
from tests.factories import write_result as write
from tests.factories.allreduce import allreduce_result

GiB = 1073741824


def allreduce_doc(point: int, impl: str, size: dict, world_size: int = 4, peak: float = 450.0) -> dict:
    """An allreduce result of one message size over the H200 NVLink."""
    return allreduce_result(point, [size], world_size=world_size, impl=impl, link="h200_nvlink", peak=peak)


def test_report_has_the_bandwidth_table_side_by_side_and_plot(tmp_path, capsys):
    # impl=hpml: 4 ranks, 1 GiB, 2 iterations; the slowest rank took 4.5 ms in each:
    #   algbw = 1073741824 / 4.5e-3 / 1e9 = 238.609294 GB/s; busbw = x 2*3/4 = 357.913941 GB/s;
    #   utilization = 357.913941 / 450 = 79.54 %
    # impl=raw: 20 iterations, slowest rank's loop 89.4 ms -> 4.47 ms each: busbw 360.316048; hpml/raw = 99.33 %
    hpml = {"bytes": GiB, "iters": 2, "correct": True, "loop_time_s_per_rank": [0.0091] * 4,
            "iteration_time_s_per_rank": [[4.5e-3, 4.4e-3], [4.4e-3, 4.5e-3], [4.5e-3, 4.5e-3], [4.0e-3, 4.0e-3]]}
    raw = {"bytes": GiB, "iters": 20, "correct": True, "loop_time_s_per_rank": [0.0890, 0.0894, 0.0893, 0.0891],
           "iteration_time_s_per_rank": None}
    write(tmp_path, allreduce_doc(0, "hpml", hpml))
    write(tmp_path, allreduce_doc(1, "raw", raw))
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## bw · allreduce" in markdown and "busbw = algbw × 2(n−1)/n" in markdown
    assert "### point 0: N = 4, impl=hpml, float32, link h200_nvlink" in markdown
    assert "| 1 GiB | 4500.0 ± 0.0 (n=2) | 238.609 | 357.914 | 79.5% | ok |" in markdown
    assert "| 1 GiB | 4470.0 (n=20) | 240.211 | 360.316 | 80.1% | ok |" in markdown
    assert "hpml's timed loop vs a bare all_reduce loop" in markdown
    assert "| 4 | float32 | 1 GiB | 357.914 | 360.316 | 99.3% |" in markdown
    assert "no report section" not in markdown and "scaling.csv" not in markdown  # no train table, no empty CSV
    assert not (tmp_path / "report" / "scaling.csv").exists()
    with open(tmp_path / "report" / "allreduce.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["busbw_GBps"]) for r in rows] == pytest.approx([357.913941, 360.316048])
    assert [float(r["utilization"]) for r in rows] == pytest.approx([357.913941 / 450, 360.316048 / 450])
    assert not (tmp_path / "report" / "allreduce_busbw.png").exists()  # one size per result: no line to draw


def test_two_launches_under_one_sweep_name_keep_their_point_tables_apart(tmp_path):
    # e.g. run_h200.sh's allreduce stage (N = 2) and allreduce_n stage (N = 1): both sweeps are named "bw" and
    # both have a point 0; their sizes must not interleave under one heading.
    size = {"bytes": 1024, "iters": 1, "correct": True, "loop_time_s_per_rank": [1e-5],
            "iteration_time_s_per_rank": [[1e-5]]}
    write(tmp_path, allreduce_doc(0, "hpml", {**size, "loop_time_s_per_rank": [1e-5] * 2,
                                              "iteration_time_s_per_rank": [[1e-5], [1e-5]]}, world_size=2), "a")
    write(tmp_path, allreduce_doc(0, "hpml", size, world_size=1), "b")
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    for n in (1, 2):
        heading = f"### point 0: N = {n}, impl=hpml"
        assert markdown.count(heading) == 1
        section = markdown.split(heading, 1)[1].split("###", 1)[0]
        assert section.count("| 1 KiB |") == 1


@pytest.mark.parametrize("nbytes, text", [(1024, "1 KiB"), (GiB, "1 GiB"), (3 * 2**20, "3 MiB"), (1000, "1000 B")])
def test_size_text(nbytes, text):
    assert size_text(nbytes) == text


@pytest.mark.parametrize("seconds, text", [(59.94, "59.9 s"), (600, "10.0 min"), (9000, "2.50 h")])
def test_duration_text(seconds, text):
    assert duration_text(seconds) == text


def test_hpml_launch_allreduce_vs_bare_then_report(tmp_path, shared_sweep):
    """The allreduce_vs_bare preset cut to 1..64 KiB: 2 gloo workers, impl=hpml and raw, then `hpml report`. Launched
    once per test run (test_allreduce.py reads the same sweep); the report is written into this test's copy."""
    launched = shared_sweep(*ALLREDUCE_VS_BARE)
    assert "[allreduce_vs_bare] 2/2 done" in launch_stdout(launched)
    sweep = own_copy(launched, tmp_path / "sweep")
    report = hpml_here(["report", str(sweep)], tmp_path)  # in this process: its text is the claim (issue 41)
    assert report.returncode == 0, report.stderr
    assert "## allreduce_vs_bare · allreduce" in report.stdout
    assert report.stdout.count("| 64 KiB |") == 3  # hpml's row, raw's row, and the side-by-side row
    assert "hpml's timed loop vs a bare all_reduce loop" in report.stdout
    assert (sweep / "report" / "allreduce_busbw.png").stat().st_size > 0
    with open(sweep / "report" / "allreduce.csv") as f:
        assert len(list(csv.DictReader(f))) == 2 * 7  # 1 KiB .. 64 KiB, two points
