"""SLURM sweeps that need no login-node process and are kind to the scheduler (issue 35, items 1 and 2), on the
real 2-node test cluster: a fire-and-forget launch whose report job writes the report once every array has
ended, `hpml status` and `hpml resume` of that job, and a waiting launch that asks one squeue per look and
backs off. Points meant to stay queued are held with sbatch's --begin an hour ahead and cancelled at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import HPML, REPO
from tests.test_slurm import SMALL, manifest_of, queue_ids, sacct_state, slurm_cluster, sweep_dir_of, wait_until  # noqa: F401 (slurm_cluster: fixture)

sys.path.insert(0, str(REPO / "tools"))
from slurm_call_counter import counting_path, read_calls  # noqa: E402

pytestmark = pytest.mark.slurm

HELD = "cluster.sbatch_extra.begin=now+60minutes"  # queued, never started while the test runs


def scontrol_job(job_id: str) -> dict:
    text = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
    return dict(re.findall(r"(\w+)=(\S*)", text.splitlines()[0])) if text.strip() else {}


def cancel_sweep(sweep: Path) -> None:
    manifest = manifest_of(sweep)
    ids = [s["job_id"] for s in manifest.get("submissions", [])]
    report = manifest.get("report_job") or {}
    ids += [report.get("job_id")] + report.get("previous_job_ids", [])
    subprocess.run(["scancel", *filter(None, ids)], capture_output=True)


def test_fire_and_forget_returns_at_once_and_its_report_job_writes_the_report(hpml, tmp_path):
    start = time.monotonic()
    done = hpml("launch", "-m", "cluster=slurm", "sweep.wait=false", *SMALL, "resources.workers_per_node=1,2")
    returned_s = time.monotonic() - start
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    manifest = manifest_of(sweep)
    arrays = [s["job_id"] for s in manifest["submissions"]]
    report = manifest["report_job"]
    job = scontrol_job(report["job_id"])
    # returned right after submitting: its report job still waits for both arrays (each point runs ~10 s)
    assert job["JobState"] == "PENDING" and job["Reason"] == "Dependency", (job, returned_s)
    assert sorted(re.findall(r"afterany:(\d+)", job["Dependency"])) == sorted(arrays)
    assert job["Partition"] == "debug" and job["NumCPUs"] == "1" and job["JobName"] == "hpml-report"
    assert f"report job {report['job_id']} writes {sweep / 'report'}" in done.stdout
    status = hpml("status", str(sweep)).stdout
    assert f"report job {report['job_id']}: pending -> {sweep / 'report'} (after array(s) " in status, status

    wait_until(lambda: (sweep / "report" / "report.md").exists(), 300, "the report job's report")
    assert sacct_state(report["job_id"]) == "COMPLETED"
    # nothing of hpml's is left working on the sweep: no launch, no point job, no report job
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(sweep) not in processes, [line for line in processes.splitlines() if str(sweep) in line]
    assert (sweep / "report" / "scaling.csv").exists()
    assert f"report job {report['job_id']}: completed -> {sweep / 'report'}" in hpml("status", str(sweep)).stdout


def test_resume_queues_the_report_job_again_after_the_points_it_requeues(hpml, tmp_path):
    done = hpml("launch", "-m", "cluster=slurm", "sweep.wait=false", HELD, *SMALL, "resources.workers_per_node=1,2",
                "cluster.report_partition=short")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    try:
        manifest = manifest_of(sweep)
        assert scontrol_job(manifest["report_job"]["job_id"])["Partition"] == "short"  # the points run in debug
        first_arrays = [s["job_id"] for s in manifest["submissions"]]
        first_report = manifest["report_job"]["job_id"]
        subprocess.run(["scancel", first_arrays[1]], check=True)  # point 1's array
        wait_until(lambda: re.search(r"^1\s+cancelled", hpml("status", str(sweep)).stdout, re.M), 60,
                   "point 1's cancellation")

        resumed = hpml("resume", str(sweep), "--no-wait")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        manifest = manifest_of(sweep)
        new_array = manifest["submissions"][-1]["job_id"]
        report = manifest["report_job"]
        assert new_array not in first_arrays and report["previous_job_ids"] == [first_report]
        job = scontrol_job(report["job_id"])
        # after the requeued point's new array, and point 0's, which still waits; not the cancelled one
        assert sorted(re.findall(r"afterany:(\d+)", job["Dependency"])) == sorted([first_arrays[0], new_array])
        assert scontrol_job(first_report)["JobState"] == "CANCELLED"  # one report, after the last points
        assert job["Partition"] == "short"  # the sweep's settings, as launched
        status = hpml("status", str(sweep)).stdout
        assert f"report job {report['job_id']}: pending" in status, status
    finally:
        cancel_sweep(sweep)


def test_a_report_job_that_fails_is_shown_by_status_with_its_log_and_last_line(hpml, tmp_path):
    """Every point cancelled before it ran: the report job runs (afterany) and finds no result; status says it
    failed, where its log is, and the log's last line."""
    done = hpml("launch", "cluster=slurm", "sweep.wait=false", HELD, *SMALL)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    manifest = manifest_of(sweep)
    report = manifest["report_job"]
    subprocess.run(["scancel", manifest["submissions"][0]["job_id"]], check=True)
    ended = ("FAILED", "COMPLETED", "CANCELLED", "TIMEOUT")
    wait_until(lambda: sacct_state(report["job_id"]) in ended, 120, "the report job's end")
    assert sacct_state(report["job_id"]) == "FAILED"
    status = hpml("status", str(sweep)).stdout
    assert f"report job {report['job_id']}: failed -> {sweep / 'report'}; log: {report['log']} (hpml: error: " \
           f"no result.json under {sweep}" in status, status
    assert report["log"] == str(sweep / "jobs" / "report" / f"{report['job_id']}.out")


def test_a_report_partition_the_cluster_cannot_take_is_one_line_before_anything_is_queued(hpml, tmp_path):
    before = queue_ids()
    for overrides, line in [
        (["cluster.report_partition=nope"],
         "hpml: error: cluster.report_partition=nope: no such partition (available: debug, short)"),
        (["cluster.report_partition=short", "cluster.report_time_min=10"],
         "hpml: error: cluster.report_time_min=10: partition short allows at most 5 minutes (MaxTime); lower it, "
         "or set cluster.report_partition"),
    ]:
        done = hpml("launch", "cluster=slurm", "sweep.wait=false", *overrides)
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [line], done.stderr
    assert queue_ids() <= before  # nothing queued (other users' jobs may end meanwhile)
    # a waiting launch queues no report job: a report time over its partition's MaxTime does not refuse it
    waiting = hpml("launch", "cluster=slurm", "cluster.partition=short", "resources.time_min=1",
                   "cluster.report_time_min=10", "--dry-run")
    assert waiting.returncode == 0, waiting.stderr
    assert not list(tmp_path.glob("sweeps/*/manifest.json"))


def test_states_come_from_one_squeue_and_one_sacct_only_for_jobs_that_left_the_queue(tmp_path, monkeypatch):
    from hpml.launcher.backends.slurm.states import scheduler_states

    log = tmp_path / "calls.log"
    monkeypatch.setenv("PATH", counting_path(tmp_path / "bin", log))
    held = subprocess.run(["sbatch", "--parsable", "--begin=now+60minutes", "--array=0-2", "-o", "/dev/null",
                           "--wrap", "true"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        forgotten = "999999"  # no controller holds it (as one MinJobAge after its end)
        log.unlink()
        jobs, source = scheduler_states([f"{held}_0", f"{held}_1", f"{held}_2", f"{forgotten}_0"])
        assert [c for _, c, _ in read_calls(log)] == ["squeue", "sacct"] and source == "squeue+sacct"
        assert {jobs[f"{held}_{i}"]["state"] for i in range(3)} == {"pending"}
        assert f"{forgotten}_0" not in jobs
        assert read_calls(log)[1][2].endswith(f"-j {forgotten}")  # sacct is asked only about what left the queue
        log.unlink()
        scheduler_states([f"{held}_0", f"{held}_1"])
        assert [c for _, c, _ in read_calls(log)] == ["squeue"]  # all in the queue: no sacct at all
    finally:
        subprocess.run(["scancel", held], capture_output=True)


def test_a_waiting_launch_asks_one_squeue_per_look_whatever_its_arrays_and_backs_off(tmp_path):
    """Two arrays (MaxArraySize 101) of held points; the launch waits with poll_s=2, poll_max_s=4: its looks are
    one squeue each for both arrays, no sacct, at pauses 2, 4, 4, ...; cancelling one array is a change, after
    which the pause is 2 s again; cancelling the other ends the wait."""
    log = tmp_path / "calls.log"
    launch = subprocess.Popen(HPML + ["launch", "-m", "cluster=slurm", "cluster.partition=short", "resources.time_min=1",
                                      HELD, "cluster.poll_s=2", "cluster.poll_max_s=4", "workload.lr=range(1,111)"],
                              cwd=tmp_path, env={**os.environ, "PATH": counting_path(tmp_path / "bin", log)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def looks() -> list:
        calls = read_calls(log)
        sbatches = [i for i, (_, c, _) in enumerate(calls) if c == "sbatch"]
        return calls[sbatches[-1] + 1:] if sbatches else []

    try:
        wait_until(lambda: len(looks()) >= 5, 60, "five looks")
        arrays = [s["job_id"] for s in manifest_of(sweep_dir_of(tmp_path))["submissions"]]
        assert len(arrays) == 2
        cancelled_at = time.time()
        subprocess.run(["scancel", arrays[1]], check=True)
        wait_until(lambda: len([t for t, _, _ in looks() if t > cancelled_at]) >= 2, 30, "two looks after it")
        subprocess.run(["scancel", arrays[0]], check=True)
        out, err = launch.communicate(timeout=60)
    finally:
        if launch.poll() is None:
            launch.send_signal(signal.SIGINT)
            launch.wait(30)
        subprocess.run(["scancel", *(s["job_id"] for s in manifest_of(sweep_dir_of(tmp_path))["submissions"])],
                       capture_output=True)
    assert launch.returncode == 1, out + err  # every point cancelled: the launch ends, not completed
    # after the wait, one batched sacct asks the ended jobs' ConsumedEnergy for the report (issue 36, item 4): it
    # is the accounting of the ended points, not a look
    accounting = [call for call in looks() if call[1] == "sacct" and "ConsumedEnergyRaw" in call[2]]
    assert len(accounting) <= 1, accounting
    waiting = [call for call in looks() if call not in accounting]
    assert {c for _, c, _ in waiting} == {"squeue"}, waiting  # no sacct: every job is still in the queue
    assert all(args.endswith("-j " + ",".join(arrays)) for _, _, args in waiting)  # one call for both arrays
    times = [t for t, _, _ in waiting]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert 1.9 < gaps[0] < 3.5 and all(3.9 < g < 5.5 for g in gaps[1:4]), gaps
    saw_change = next(i for i, t in enumerate(times) if t > cancelled_at)
    assert 1.9 < gaps[saw_change] < 3.5, (gaps, saw_change)  # the pause after the change is poll_s again
    assert "report job" not in out  # a waiting launch is there at the end: it queues no report job
    assert json.loads((sweep_dir_of(tmp_path) / "manifest.json").read_text()).get("report_job") is None
