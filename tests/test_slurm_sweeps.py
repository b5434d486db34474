"""Issue 35 items 3-5 on the real 2-node cluster (tests/slurm/cluster.sh): an array's throttle in SLURM itself, the
QOS's submit limit holding points back until `hpml resume`, `hpml resume --grow` after a time limit and after an
out-of-memory point, and several points per job. No sbatch, squeue or sacct is mocked. The pure rules behind them:
tests/test_slurm_sweep_rules.py."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import hpml_here
from tests.test_slurm import HELD, PROBE, manifest_of, sacct_state, slurm_cluster, sweep_dir_of  # noqa: F401 (fixture)

pytestmark = pytest.mark.slurm

HUGE = 2 ** 36  # bytes: one float32 buffer more than this 24 GiB machine has, so the CPU allocator says no


def scontrol_job(job_id: str) -> str:
    return subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout


def cancel(sweep: Path) -> None:
    """Cancels the sweep's arrays and its report job (sweep.wait=false): once the arrays end, that job would run
    `hpml report` on a sweep no test reads."""
    manifest = manifest_of(sweep)
    report = (manifest.get("report_job") or {}).get("job_id")
    subprocess.run(["scancel", *(s["job_id"] for s in manifest.get("submissions", [])), *filter(None, [report])])


def test_array_parallelism_is_the_arrays_own_throttle(hpml, tmp_path):
    done = hpml("launch", "-m", *PROBE, "sweep.wait=false", HELD, "cluster.array_parallelism=1",
                "workload.reps=1,2,3")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    try:
        (array,) = [s["job_id"] for s in manifest_of(sweep)["submissions"]]
        assert "#SBATCH --array=0-2%1" in (sweep / "points" / "2" / "sbatch.sh").read_text()  # each point has it
        assert "ArrayTaskThrottle=1" in scontrol_job(array), scontrol_job(array)  # SLURM itself holds the rest
    finally:
        cancel(sweep)


@pytest.fixture
def tight_qos():
    """A QOS of this test's own with MaxSubmitJobsPerUser=2, deleted afterwards: no other job uses it, so the
    limit counts this test's jobs only and no one else's submissions are affected."""
    name = f"hpml{uuid.uuid4().hex[:8]}"
    subprocess.run(["sacctmgr", "-i", "add", "qos", name, "MaxSubmitJobsPerUser=2"], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["sacctmgr", "-i", "delete", "qos", name], capture_output=True)


def test_a_qos_submit_limit_holds_points_back_until_resume(hpml, tmp_path, tight_qos):
    done = hpml("launch", "-m", *PROBE, f"cluster.qos={tight_qos}", "workload.reps=1,2,3")
    sweep = sweep_dir_of(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # the sweep is not complete: one point waits
    assert (f"hpml: 1 point(s) not submitted: QOS {tight_qos} MaxSubmitJobsPerUser=2 (0 of yours already queued); "
            f"run `hpml resume {sweep}` later (as jobs leave the queue)") in done.stdout.splitlines()
    points = manifest_of(sweep)["points"]
    assert [bool(p["job_id"]) for p in points] == [True, True, False]
    status = hpml("status", str(sweep)).stdout
    assert "2      not_submitted" in status, status
    assert (f"reason: held back by QOS {tight_qos} MaxSubmitJobsPerUser=2 (0 of yours already queued); `hpml resume` "
            "submits it") in status, status
    again = hpml("resume", str(sweep))  # the two jobs have left the queue: the third fits now
    assert again.returncode == 0, again.stdout + again.stderr
    assert "hpml: resuming 1 of 3 point(s) of tiny_probe: 2" in again.stdout
    assert all(p["job_id"] for p in manifest_of(sweep)["points"])


def test_grow_doubles_the_time_of_a_point_that_reached_its_time_limit(hpml, tmp_path):
    # 1 minute is the shortest limit sbatch takes; the probe's 100,000 rounds take longer; no requeue: it times out.
    # SLURM warns it (--signal=USR2@30) up to 30 s after it starts, and the probe computes until then: on one thread
    # (cluster.setup), not on each of the machine's cores (issue 41: the CPU of the suite)
    done = hpml("launch", *PROBE, "resources.time_min=1", "cluster.max_requeues=0", "workload.reps=100000",
                "workload.matmul_n=256", "cluster.setup=['export OMP_NUM_THREADS=1']")
    sweep = sweep_dir_of(tmp_path)
    assert done.returncode == 1 and "0      timeout" in done.stdout, done.stdout + done.stderr
    first = manifest_of(sweep)["points"][0]["job_id"]
    # submitit answers the time-limit warning, with no requeue left, by ending the job: SLURM says FAILED. On a busy
    # machine the limit can come before that ending completes, and SLURM says TIMEOUT. Either way the point's own
    # state.json says timeout (launcher/point_job.out_of_requeues), and status (above) keeps the exact word
    assert sacct_state(first) in ("FAILED", "TIMEOUT")
    grown = hpml("resume", "--grow", "--no-wait", str(sweep))
    try:
        assert grown.returncode == 0, grown.stdout + grown.stderr
        assert "hpml: point 0: resources.time_min 1 -> 2" in grown.stdout.splitlines()
        second = manifest_of(sweep)["points"][0]["job_id"]
        assert second != first and "TimeLimit=00:02:00" in scontrol_job(second)
        attempt = json.loads((sweep / "points/0/attempts/0/attempt.json").read_text())
        assert attempt["job_id"] == first and attempt["state"] == "timeout"
        assert attempt["resources"]["time_min"] == 1
        assert yaml.safe_load((sweep / "points/0/config.yaml").read_text())["resources"]["time_min"] == 2
    finally:
        cancel(sweep)


def test_grow_doubles_host_memory_until_max_attempts_and_says_so(hpml, tmp_path):
    done = hpml("launch", *PROBE, "resources.mem_gb=1", f"workload.copy_bytes={HUGE}", "cluster.max_attempts=2")
    sweep = sweep_dir_of(tmp_path)
    assert done.returncode == 1 and "0      oom" in done.stdout, done.stdout + done.stderr
    grown = hpml("resume", "--grow", str(sweep))
    assert "hpml: point 0: resources.mem_gb 1 -> 2" in grown.stdout.splitlines(), grown.stdout + grown.stderr
    job = manifest_of(sweep)["points"][0]["job_id"]
    assert "#SBATCH --mem=2G" in (sweep / "jobs" / job / f"{job}_submission.sh").read_text()
    stopped = hpml("resume", "--grow", str(sweep))  # out of memory again, on its second and last attempt
    assert stopped.returncode == 1
    assert stopped.stdout.splitlines()[0] == ("hpml: point 0 not resubmitted: oom after 2 attempt(s): "
                                              "cluster.max_attempts=2 reached (raise it in the point's config.yaml, "
                                              "or change the point)"), stopped.stdout
    attempt = json.loads((sweep / "points/0/attempts/0/attempt.json").read_text())
    assert attempt["resources"]["mem_gb"] == 1 and attempt["state"] == "oom"
    assert (sweep / "points/0/attempts/0/result.json").exists() and (sweep / "points/0/result.json").exists()
    report = hpml_here(["report", str(sweep), "--out", str(tmp_path / "report")], tmp_path)  # the final attempt
    assert report.returncode == 0, report.stdout + report.stderr
    assert "## Results not in a table (1)" in report.stdout and "attempts" not in report.stdout, report.stdout


def test_a_job_over_its_memory_is_killed_by_slurm_and_grow_gives_it_twice(hpml, tmp_path):
    # --mem=1G; the probe's copy holds 2 x 300 MiB and its triad 3 x 300 MiB besides Python and torch (0.55-0.75 GB
    # PSS): SLURM kills the job (the test cluster enforces --mem by its accounting poll, tests/slurm/cluster.sh); 2 GB
    # is enough. 450 MiB left too little of 2 GB: its triad reached 2.17 GB once (the job killed again, the test failed).
    # The poll samples once a second (JobAcctGatherFrequency=task=1): the copy and the triad each hold their buffers
    # for measure_s seconds at least, or a fast phase could end between two samples and the job finish unkilled
    # (seen once beside a CPU hog: the point completed)
    done = hpml("launch", *PROBE, "resources.mem_gb=1", f"workload.copy_bytes={300 * 2 ** 20}", "workload.measure_s=3")
    sweep = sweep_dir_of(tmp_path)
    assert done.returncode == 1 and "0      out_of_memory" in done.stdout, done.stdout + done.stderr
    first = manifest_of(sweep)["points"][0]["job_id"]
    assert sacct_state(first) == "FAILED"  # SLURM's own word where no cgroup enforces memory; the log says why
    status = hpml("status", str(sweep)).stdout
    assert "exceeded memory limit" in status and "being killed" in status, status
    grown = hpml("resume", "--grow", str(sweep))
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert "hpml: point 0: resources.mem_gb 1 -> 2" in grown.stdout.splitlines(), grown.stdout
    second = manifest_of(sweep)["points"][0]["job_id"]
    assert sacct_state(second) == "COMPLETED"
    attempt = json.loads((sweep / "points/0/attempts/0/attempt.json").read_text())
    assert (attempt["job_id"], attempt["state"], attempt["resources"]["mem_gb"]) == (first, "out_of_memory", 1)


def sacct_nodes(job_id: str) -> str:
    out = subprocess.run(["sacct", "-X", "-nP", "-o", "JobID,NodeList", "-j", job_id.split("_")[0]],
                         capture_output=True, text=True).stdout
    return dict(line.split("|")[:2] for line in out.splitlines() if "|" in line).get(job_id, "?")


RECORDED_CUDA_OOM = Path(__file__).parent / "recorded" / "cuda_oom"


def end_in_cuda_out_of_memory(folder: Path) -> None:
    """The point's end as a CUDA out of memory left it on an H100 (tests/recorded/cuda_oom, recorded by
    tests/test_grow_gpu.py): this cluster's "GPUs" are not CUDA devices, so its own point cannot run out of one.
    What --grow reads is what the recording holds: the state, and the device in result.json."""
    recorded = {name: json.loads((RECORDED_CUDA_OOM / name).read_text()) for name in ("result.json", "state.json")}
    result = json.loads((folder / "result.json").read_text())
    result.update(status="oom", reason=recorded["result.json"]["reason"])
    result["environment"]["device"] = recorded["result.json"]["environment"]["device"]
    state = json.loads((folder / "state.json").read_text())
    state.update(state="oom", reason=recorded["state.json"]["reason"], returncode=1)
    for name, doc in (("result.json", result), ("state.json", state)):
        (folder / name).write_text(json.dumps(doc))


def test_grow_moves_a_point_out_of_cuda_memory_one_rung_up_the_gpu_ladder(hpml, tmp_path):
    # the test cluster's node features (tests/slurm/cluster.sh): n1 gpu40g, n2 gpu80g
    done = hpml("launch", *PROBE, "resources.gpus_per_node=1", "cluster.constraint=gpu40g",
                "cluster.gpu_ladder=[gpu40g,gpu80g]")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    folder, first = sweep / "points" / "0", manifest_of(sweep)["points"][0]["job_id"]
    assert sacct_nodes(first) == "n1"
    end_in_cuda_out_of_memory(folder)
    assert "0      oom" in hpml("status", str(sweep)).stdout
    grown = hpml("resume", "--grow", str(sweep))
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert "hpml: point 0: cluster.constraint gpu40g -> gpu80g" in grown.stdout.splitlines(), grown.stdout
    second = manifest_of(sweep)["points"][0]["job_id"]
    assert "#SBATCH --constraint=gpu80g" in (sweep / "jobs" / second / f"{second}_submission.sh").read_text()
    assert sacct_nodes(second) == "n2" and sacct_state(second) == "COMPLETED"
    assert yaml.safe_load((folder / "config.yaml").read_text())["cluster"]["constraint"] == "gpu80g"
    attempt = json.loads((folder / "attempts/0/attempt.json").read_text())
    assert (attempt["job_id"], attempt["state"]) == (first, "oom")
    assert yaml.safe_load((folder / "attempts/0/config.yaml").read_text())["cluster"]["constraint"] == "gpu40g"
    end_in_cuda_out_of_memory(folder)  # out of CUDA memory on the top rung too
    stopped = hpml("resume", "--grow", str(sweep))
    assert stopped.returncode == 1 and stopped.stdout.splitlines()[0] == (
        "hpml: point 0 not resubmitted: CUDA out of memory on gpu80g, the top of cluster.gpu_ladder: lower the batch "
        "size (or shard the model), then `hpml resume`"), stopped.stdout


def test_points_of_one_job_keep_their_own_files_and_fail_alone(hpml, tmp_path):
    done = hpml("launch", "-m", *PROBE, "cluster.points_per_job=3", "resources.time_min=2",
                f"workload.copy_bytes=65536,{HUGE},131072")
    sweep = sweep_dir_of(tmp_path)
    points = manifest_of(sweep)["points"]
    assert len({p["job_id"] for p in points}) == 1, points  # one array task ran all three
    assert done.returncode == 1, done.stdout + done.stderr
    states = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines() if line[:1].isdigit()}
    assert states == {"0": "completed", "1": "oom", "2": "completed"}, done.stdout
    for point in range(3):
        folder = sweep / "points" / str(point)
        assert json.loads((folder / "state.json").read_text())["state"] == ["completed", "oom", "completed"][point]
        assert (folder / "result.json").exists() and (folder / "logs" / "torchrun.node0.err").exists()
    assert sacct_state(points[0]["job_id"]) == "FAILED"  # a point failed: the job does not say COMPLETED
    again = hpml("resume", "--no-wait", str(sweep))
    try:
        assert "hpml: resuming 1 of 3 point(s) of tiny_probe: 1" in again.stdout, again.stdout + again.stderr
    finally:
        cancel(sweep)
