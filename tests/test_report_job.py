"""The report job's sbatch command line, script and preflight lines (launcher/backends/slurm/report_job.py), on literal inputs;
its behaviour on the real cluster is tests/test_slurm_unattended.py's."""

from __future__ import annotations

from pathlib import Path

from hpml.conf.schema import ClusterConfig, ClusterKind
from hpml.launcher.backends.slurm.report_job import report_line, report_problems, sbatch_arguments, script_text

PARTITIONS = [{"PartitionName": "debug", "Default": "YES", "MaxTime": "01:00:00"},
              {"PartitionName": "short", "Default": "NO", "MaxTime": "00:05:00"}]


def cluster(**values) -> ClusterConfig:
    return ClusterConfig(kind=ClusterKind.slurm, max_parallel=0, poll_s=5.0, **values)


def test_sbatch_asks_one_cpu_after_every_array_in_the_report_partition_and_the_sweeps_account():
    args = sbatch_arguments(Path("/s"), cluster(partition="gpu", account="proj", report_partition="cpu"),
                            ["12", "13"], Path("/s/jobs/report/report.sbatch"))
    assert args == ["sbatch", "--parsable", "--job-name=hpml-report", "--ntasks=1", "--cpus-per-task=1", "--time=5",
                    "--output=/s/jobs/report/%j.out", "--chdir=/s", "--mem=2G", "--partition=cpu",
                    "--account=proj", "--dependency=afterany:12:13", "/s/jobs/report/report.sbatch"]
    plain = sbatch_arguments(Path("/s"), cluster(report_mem_gb=0), [], Path("/s/r.sbatch"))
    assert not [a for a in plain if a.startswith(("--mem", "--partition", "--account", "--dependency"))]


def test_the_script_runs_the_setup_lines_checked_then_the_launching_pythons_report():
    text = script_text(Path("/my sweeps/s1"), ["module load x"], "/venv/bin/python")
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash" and lines[2] == "module load x" and "cluster.setup[0] failed" in lines[3]
    assert lines[-1] == "exec /venv/bin/python -P -m hpml.launcher.cli report '/my sweeps/s1' --out '/my sweeps/s1/report'"


def test_an_unknown_report_partition_and_a_time_over_its_maxtime_are_one_line_each():
    assert report_problems(cluster(report_partition="nope"), PARTITIONS) == [
        "cluster.report_partition=nope: no such partition (available: debug, short)"]
    assert report_problems(cluster(partition="short", report_time_min=6), PARTITIONS) == [
        "cluster.report_time_min=6: partition short allows at most 5 minutes (MaxTime); lower it, or set "
        "cluster.report_partition"]
    assert report_problems(cluster(partition="short", report_partition="debug", report_time_min=6), PARTITIONS) == []
    assert report_problems(cluster(report_time_min=60), PARTITIONS) == []  # the default partition: debug


def test_status_line_of_the_report_job(tmp_path):
    log = tmp_path / "7.out"
    log.write_text("hpml: error: no result.json under /s\n")
    manifest = {"report_job": {"job_id": "7", "out": "/s/report", "log": str(log), "after": ["5", "6"]}}
    assert report_line(manifest, {"7": {"state": "pending"}}) == "report job 7: pending -> /s/report (after array(s) 5, 6)"
    assert report_line(manifest, {"7": {"state": "failed"}}) == \
        f"report job 7: failed -> /s/report; log: {log} (hpml: error: no result.json under /s)"
    assert report_line(manifest, {}) == f"report job 7: lost -> /s/report; log: {log} (hpml: error: no result.json under /s)"
    assert report_line({}, {}) is None and report_line({"report_job": {"job_id": 7}}, {}) is None
