"""The report job of a sweep nobody waits for (sweep.wait=false): one small sbatch job, queued with an `afterany`
dependency on every array of the sweep, runs `hpml report` into <sweep>/report/ once they have all ended, so the
report is there with no hpml process left anywhere (issue 35, item 1).

It is a plain batch script (no submitit, no pickle): the python that launched the sweep, `-m hpml.launcher.cli
report`. Its job id, log and history are kept in the manifest under "report_job", where `hpml status` shows
it and `hpml resume` replaces it by one that waits for the points it requeues.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from hpml.conf.schema import ClusterConfig
from hpml.contract.sweep_layout import JOBS_DIR
from hpml.launcher.backends.slurm.preflight import time_limit_minutes
from hpml.launcher.backends.slurm.states import squeue_states
from hpml.launcher.backends.slurm.submit import guarded_setup, outside_of_any_job, sbatch_reason
from hpml.launcher.child_python import python_argv
from hpml.launcher.errors import LaunchError
from hpml.launcher.failure_reason import job_log_reason
from hpml.launcher.manifest import write_manifest

REPORT_KEY = "report_job"  # the manifest's record of it
REPORT_OUT = "report"  # <sweep>/report/: what `hpml report` writes by default, too
SCRIPT_NAME = "report.sbatch"
JOB_NAME = "hpml-report"


def report_folder(sweep_dir: Path) -> Path:
    return Path(sweep_dir) / REPORT_OUT


def log_folder(sweep_dir: Path) -> Path:
    """<sweep>/jobs/report/: the report job's script and its log, one per job id (%j), beside the arrays' own."""
    return Path(sweep_dir) / JOBS_DIR / REPORT_OUT


def script_text(sweep_dir: Path, setup: Sequence[str], python: str) -> str:
    """The batch script: cluster.setup's lines (checked, as the points' scripts check them), then `hpml report`
    with the launching python, so the job reads the sweep with the hpml that wrote it."""
    command = [*python_argv(python), "-m", "hpml.launcher.cli", "report", str(sweep_dir), "--out", str(report_folder(sweep_dir))]
    return "\n".join(["#!/bin/bash", "# hpml's report job: runs once every array of the sweep has ended",
                      *guarded_setup(setup), "exec " + shlex.join(command), ""])


def sbatch_arguments(sweep_dir: Path, cluster: ClusterConfig, after: Sequence[str], script: Path) -> List[str]:
    """sbatch's command line (pure): one CPU in the report partition (or the sweep's own) and account; the
    dependency is on the command line rather than in the script, because `hpml resume` changes it."""
    args = ["sbatch", "--parsable", f"--job-name={JOB_NAME}", "--ntasks=1", "--cpus-per-task=1",
            f"--time={cluster.report_time_min}", f"--output={log_folder(sweep_dir) / '%j.out'}",
            f"--chdir={sweep_dir}"]
    if cluster.report_mem_gb:
        args.append(f"--mem={cluster.report_mem_gb}G")
    partition = cluster.report_partition or cluster.partition
    if partition:
        args.append(f"--partition={partition}")
    if cluster.account:
        args.append(f"--account={cluster.account}")
    if after:
        args.append("--dependency=afterany:" + ":".join(after))
    return args + [str(script)]


def arrays_in_queue(manifest: Dict) -> List[str]:
    """The sweep's array job ids with a task still pending or running (one squeue call): the ones to wait for.
    An ended array is not one: sbatch even refuses a dependency on a job the controller has forgotten
    (MinJobAge after its end)."""
    arrays = [s["job_id"] for s in manifest.get("submissions", []) if isinstance(s, dict) and s.get("job_id")]
    if not arrays:
        return []
    known = squeue_states(arrays)
    if known is None:  # squeue did not answer: wait for them all; sbatch says so if one is gone
        return arrays
    busy = {job.split("_")[0] for job, record in known.items() if record["state"] in ("pending", "running")}
    return [a for a in arrays if a in busy]


def queue_report_job(sweep_dir: Path, manifest: Dict, cluster: ClusterConfig) -> str:
    """Queues the report job after every array of the sweep still in the queue; a report job queued before
    (by the launch, or an earlier resume) is cancelled first, so one report runs, after the last points. Its
    id goes into the manifest at once. sbatch refusing it is one LaunchError line: the points stay queued."""
    sweep_dir = Path(sweep_dir)
    record = manifest.get(REPORT_KEY) or {}
    earlier = record.get("job_id")
    if earlier:  # nothing to do once it has ended; scancel says so on stderr, which is not ours to show
        subprocess.run(["scancel", earlier], capture_output=True, text=True)
    log_folder(sweep_dir).mkdir(parents=True, exist_ok=True)
    script = log_folder(sweep_dir) / SCRIPT_NAME
    script.write_text(script_text(sweep_dir, cluster.setup, sys.executable))
    after = arrays_in_queue(manifest)
    args = sbatch_arguments(sweep_dir, cluster, after, script)
    with outside_of_any_job():
        done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise LaunchError(f"sbatch refused the report job: {sbatch_reason(RuntimeError(done.stderr))}; the points "
                          f"are queued: once they end, `hpml report {sweep_dir}` writes the report")
    job_id = done.stdout.strip().split(";")[0]
    previous = list(record.get("previous_job_ids", [])) + ([earlier] if earlier else [])
    manifest[REPORT_KEY] = {"job_id": job_id, "after": after, "out": str(report_folder(sweep_dir)),
                            "log": str(log_folder(sweep_dir) / f"{job_id}.out"), "sbatch": args[1:],
                            "previous_job_ids": previous}
    write_manifest(sweep_dir, manifest)
    print(f"hpml: report job {job_id} writes {report_folder(sweep_dir)} once array(s) {', '.join(after)} "
          "have ended")
    return job_id


def report_problems(cluster: ClusterConfig, partitions: List[Dict[str, str]]) -> List[str]:
    """What would make sbatch refuse the report job, one line each (pure; partitions: `scontrol show partition
    -o` records): a report partition that does not exist, a time limit above its partition's MaxTime. The
    sweep's own partition is checked with its points (backends/slurm/preflight.py)."""
    names = [p.get("PartitionName", "?") for p in partitions]
    if cluster.report_partition:
        if cluster.report_partition not in names:
            return [f"cluster.report_partition={cluster.report_partition}: no such partition (available: "
                    f"{', '.join(names)})"]
        chosen = [p for p in partitions if p.get("PartitionName") == cluster.report_partition]
    elif cluster.partition:
        chosen = [p for p in partitions if p.get("PartitionName") == cluster.partition]
    else:
        chosen = [p for p in partitions if p.get("Default") == "YES"] or partitions[:1]
    if not chosen:
        return []
    max_time = time_limit_minutes(chosen[0].get("MaxTime", "UNLIMITED"))
    if max_time is not None and cluster.report_time_min > max_time:
        return [f"cluster.report_time_min={cluster.report_time_min}: partition {chosen[0].get('PartitionName')} "
                f"allows at most {max_time:g} minutes (MaxTime); lower it, or set cluster.report_partition"]
    return []


def report_line(manifest: Dict, jobs: Optional[Dict[str, Dict[str, str]]]) -> Optional[str]:
    """`hpml status`'s line for the report job: its state and where the report goes, and its log when it did not
    complete; None when the sweep has none."""
    record = manifest.get(REPORT_KEY)
    if not isinstance(record, dict) or not isinstance(record.get("job_id"), str):
        return None
    job = (jobs or {}).get(record["job_id"])
    state = job["state"] if job else ("unknown" if jobs is None else "lost")
    line = f"report job {record['job_id']}: {state} -> {record.get('out')}"
    if state == "pending" and record.get("after"):
        line += f" (after array(s) {', '.join(record['after'])})"
    if state not in ("pending", "running", "completed"):  # where to look, and the log's own last line
        why = job_log_reason(Path(record["log"])) if isinstance(record.get("log"), str) else None
        line += f"; log: {record.get('log')}" + (f" ({why})" if why else "")
    return line
