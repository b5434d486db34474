"""The local default for real: submitit's local executor runs torchrun, which runs gloo workers on CPU."""

from __future__ import annotations

import csv
import json
import shutil
import statistics
from pathlib import Path

import pytest

from hpml.analysis.results import load_results
from hpml.contract.result_format import SCHEMA_VERSION
from hpml.launcher.torchrun import AGENT
from tests.conftest import hpml_here, launch_then_damage


def only_sweep_dir(root: Path) -> Path:
    dirs = [d for d in (root / "sweeps").iterdir() if d.name != "latest"]
    assert len(dirs) == 1, dirs
    return dirs[0]


QUICKSTART_IMAGES = 128


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory, hpml_in):
    """The README's quickstart, run once for the module: `hpml launch experiment=quickstart` on a quarter of its
    synthetic images (128: 4 steps an epoch on 1 worker, 2 on 2). What the tests below read is how the launch runs
    both points and what each writes, which any sample count shows; the preset's own values are test_config.py's
    (test_quickstart_is_weak_scaling_over_one_and_two_workers). Its 512 images were 54 of the 60 CPU-s this
    fixture took (issue 41, docs/results/test-suite-speed.md "stop 58")."""
    root = tmp_path_factory.mktemp("quickstart")
    done = hpml_in(root, "launch", "experiment=quickstart", f"workload.synthetic_samples={QUICKSTART_IMAGES}")
    assert done.returncode == 0, done.stdout + done.stderr
    return only_sweep_dir(root), done


def test_quickstart_runs_both_points_and_shows_progress(quickstart):
    sweep, done = quickstart
    assert "[quickstart] 2/2 done, 0 running, 0 pending, 0 failed" in done.stdout
    manifest = json.loads((sweep / "manifest.json").read_text())
    assert [p["world_size"] for p in manifest["points"]] == [1, 2]
    assert all(p["job_id"] for p in manifest["points"])
    assert len(manifest["arrays"]) == 2  # two resource shapes -> two arrays


def test_each_point_keeps_config_result_state_and_logs(quickstart):
    sweep, _ = quickstart
    for point, world in ((0, 1), (1, 2)):
        folder = sweep / "points" / str(point)
        result = json.loads((folder / "result.json").read_text())
        assert result["schema_version"] == SCHEMA_VERSION and result["status"] == "ok"
        assert result["identity"] == {"sweep": "quickstart", "point": point, "repeat": 0, "seed": 0,
                                      "workload": "train"}
        assert result["environment"]["world_size"] == world
        assert result["environment"]["backend"] == "gloo"
        assert len(result["environment"]["ranks"]) == world
        m = result["measurements"]
        assert len(m["epoch_time_s"]) == 3 and len(m["step_time_s"]) == 3
        assert m["per_worker_batch"] == 32 and m["global_batch"] == 32 * world  # weak scaling
        assert m["steps_per_epoch"] == QUICKSTART_IMAGES // (32 * world)
        assert result["derived"]["epoch_time_s"] == pytest.approx(statistics.fmean(m["epoch_time_s"][1:]))
        assert "workers_per_node: %d" % world in (folder / "config.yaml").read_text()
        assert json.loads((folder / "state.json").read_text())["state"] == "completed"
        assert f"-m {AGENT} " in (folder / "logs" / "torchrun.node0.out").read_text()


def test_status_lists_every_point(quickstart, tmp_path):
    # status, report and the resumes that run nothing go through cli.main in this process (conftest's hpml_here: a
    # Python start less each, issue 41); the resume that reruns a point is the real command
    sweep, _ = quickstart
    done = hpml_here(["status", str(sweep)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[quickstart] 2/2 done" in done.stdout
    assert done.stdout.count("completed") == 2


BROKEN_HELD_OUT = "cifar-10-batches-py/test_batch: not a CIFAR-10 python pickle (UnpicklingError"


@pytest.fixture(scope="module")
def half_failed(tmp_path_factory, digits_data):
    """A sweep of two points whose second fails in its worker: its held-out batch (test_batch) is damaged after
    the launch's preflight read it (the preflight reads every file a run reads), so its first evaluation raises. Each
    point trains on the first 256 digits of each split (workload.max_samples): the held-out file is still read whole
    before it is sliced, so the damage is found as it was, on a sixth of the steps (issue 41)."""
    root = tmp_path_factory.mktemp("half_failed")
    good, bad = root / "good", root / "bad"
    for data in (good, bad):
        shutil.copytree(digits_data / "cifar", data)
    done = launch_then_damage(root, ["-m", "workload.dataset=cifar10", f"workload.data_root={good},{bad}",
                                     "workload.eval_every=1", "workload.batch_size=64", "workload.epochs=2",
                                     "workload.model=hpml_cnn", "workload.max_samples=256"],
                              lambda: (bad / "cifar-10-batches-py" / "test_batch").write_bytes(b"not a pickle"))
    assert done.returncode == 1, done.stdout + done.stderr
    return only_sweep_dir(root)


def test_a_failing_point_is_failed_with_its_reason(half_failed, tmp_path):
    sweep = half_failed
    ok = json.loads((sweep / "points/0/state.json").read_text())
    failed = json.loads((sweep / "points/1/state.json").read_text())
    assert ok["state"] == "completed"
    assert failed["state"] == "failed" and failed["returncode"] != 0
    reason = failed["reason"]
    assert reason.startswith("DataFileError: workload.data_root=") and BROKEN_HELD_OUT in reason, reason
    assert "\n" not in reason  # the root cause, one line, naming the file
    result = json.loads((sweep / "points/1/result.json").read_text())
    assert result["status"] == "failed" and result["reason"] == reason
    status = hpml_here(["status", str(sweep)], tmp_path)
    rows = [line.split()[:2] for line in status.stdout.splitlines() if line[:1].isdigit()]
    assert rows == [["0", "completed"], ["1", "failed"]], status.stdout
    assert f"reason: {reason}" in status.stdout.splitlines()[-1]


def test_resume_reruns_only_the_failed_point_and_keeps_its_last_attempt(half_failed, hpml, tmp_path):
    sweep = half_failed
    before = json.loads((sweep / "manifest.json").read_text())["points"]
    finished = (sweep / "points/0/result.json").read_bytes()
    refused = hpml_here(["resume", str(sweep)], tmp_path)  # launch's preflight: the damaged file is named, nothing moved
    assert refused.returncode == 2 and BROKEN_HELD_OUT in refused.stderr, refused.stdout + refused.stderr
    assert not (sweep / "points/1/attempts").exists()
    bad = sweep.parent.parent / "bad" / "cifar-10-batches-py" / "test_batch"
    shutil.copy(sweep.parent.parent / "good" / "cifar-10-batches-py" / "test_batch", bad)  # the cause fixed
    done = hpml("resume", str(sweep))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hpml: resuming 1 of 2 point(s) of " in done.stdout
    after = json.loads((sweep / "manifest.json").read_text())["points"]
    assert after[0]["job_id"] == before[0]["job_id"] and "previous_job_ids" not in after[0]
    assert after[1]["previous_job_ids"] == [before[1]["job_id"]] and after[1]["job_id"] != before[1]["job_id"]
    assert (sweep / "points/0/result.json").read_bytes() == finished
    attempt = sweep / "points/1/attempts/0"
    assert json.loads((attempt / "state.json").read_text())["state"] == "failed"
    assert (attempt / "result.json").exists() and (attempt / "logs" / "torchrun.node0.err").exists()
    assert json.loads((sweep / "points/1/state.json").read_text())["state"] == "completed"  # the rerun's own


def test_an_earlier_attempt_moved_aside_is_not_counted_beside_the_points_result(quickstart, tmp_path):
    # resume moves a point's earlier run to points/<n>/attempts/<k>/; an ok one read too would count the point
    # twice (it is not a byte copy of the current result: drop_copies would not catch it)
    sweep = tmp_path / "sweep"
    shutil.copytree(quickstart[0], sweep, symlinks=True)
    earlier = json.loads((sweep / "points/0/result.json").read_text())
    earlier["started_at"] = "2000-01-01T00:00:00+00:00"
    (sweep / "points/0/attempts/0").mkdir(parents=True)
    (sweep / "points/0/attempts/0/result.json").write_text(json.dumps(earlier))
    loaded = load_results(sweep)
    assert [row["identity"]["point"] for row in loaded.rows] == [0, 1] and loaded.problems == []
    assert all("attempts" not in row["path"] for row in loaded.rows)


def test_resume_of_a_finished_sweep_does_nothing(quickstart, tmp_path):
    sweep, _ = quickstart
    done = hpml_here(["resume", str(sweep)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"hpml: nothing to resume in {sweep.resolve()}: 2 completed, 0 pending or running\n"


def test_quickstart_report_speedup_is_the_ratio_of_the_raw_epoch_times(quickstart, tmp_path):
    sweep, _ = quickstart
    done = hpml_here(["report", str(sweep)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "weak scaling" in done.stdout.lower()
    raw = {}
    for point in (0, 1):
        result = json.loads((sweep / "points" / str(point) / "result.json").read_text())
        raw[result["environment"]["world_size"]] = statistics.fmean(result["measurements"]["epoch_time_s"][1:])
    with open(sweep / "report" / "scaling.csv") as f:  # the train epoch-time table (analysis/train/tables.py)
        rows = {int(row["devices"]): row for row in csv.DictReader(f)}
    assert float(rows[1]["speedup"]) == pytest.approx(1.0)
    assert float(rows[2]["speedup"]) == pytest.approx(raw[1] / raw[2], rel=1e-9)
    assert float(rows[2]["epoch_time_mean_s"]) == pytest.approx(raw[2], rel=1e-9)
    assert int(rows[2]["baseline_devices"]) == 1


def test_the_local_wait_ends_when_a_point_ends_not_a_poll_later(tmp_path, monkeypatch):
    """cluster.poll_s paces the progress line only: the runner looks every END_CHECK_S whether a running point has
    ended, so the next point starts, and the launch returns, right after (it slept a whole poll_s before). Points
    stand in for submitit's jobs here: each ends 0.3 s after it starts."""
    import time

    from hpml.conf.schema import ClusterKind
    from hpml.launcher.backends.local import runner as local_runner
    from hpml.launcher.jobspec import JobSpec, ResourceShape

    class Job:
        job_id = "0"

        def __init__(self):
            self.ends = time.monotonic() + 0.3

        def done(self):
            return time.monotonic() >= self.ends

    class Executor:
        def submit(self, point_job):
            return Job()

    monkeypatch.setattr(local_runner, "local_executor", lambda folder, shape: Executor())
    shape = ResourceShape(ClusterKind.local, nodes=1, workers_per_node=1, gpus_per_node=0, cpus_per_worker=1,
                          mem_gb=0, time_min=30)
    specs = [JobSpec(point=n, point_dir=str(tmp_path / str(n)), overrides=(), workload="train", shape=shape)
             for n in range(3)]
    ticks = []
    started = time.monotonic()
    poll_s = 30.0
    jobs = local_runner.run_local(tmp_path, specs, max_parallel=1, poll_s=poll_s, on_submit=lambda *args: None,
                                  on_tick=lambda: ticks.append(time.monotonic() - started))
    took = time.monotonic() - started
    assert sorted(jobs) == [0, 1, 2]
    # three points of 0.3 s one after another, not a poll's wait: a run that waited out one poll interval would take
    # at least poll_s, so the bound is the ratio took / poll_s < 1 (100 times the 0.3 s of work: no machine is that slow)
    assert 0.9 <= took < poll_s, took
    assert len(ticks) == 4  # the progress line once a point starts (after the one before it ended) and at the end
