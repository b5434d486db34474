"""Issue 35's pure rules, on literal values: --grow's doubling and its stops (launcher/grow.py), sacct's ReqMem and
a partition's limits (launcher/slurm_job_resources.py), the submit limits of sacctmgr's text
(launcher/slurm_limits.py), packing points into array tasks (launcher/slurm.py), and bad values of the new
cluster keys refused in one line before anything is written. The same behaviours on the real cluster:
tests/test_slurm_sweeps.py."""

from __future__ import annotations

import pytest

from hpml.conf.schema import ClusterKind
from hpml.launcher.grow import Growth, JobResources, growth
from hpml.launcher.jobspec import JobSpec, ResourceShape
from hpml.launcher.slurm import job_count, job_units
from hpml.launcher.slurm_job_resources import parse_req_mem, partition_limits
from hpml.launcher.slurm_limits import ASSOC_FIELDS, QOS_FIELDS, limits_of, parse_queue, parse_records, tightest

ROOMY = JobResources(mem_mb=None, time_min=None, max_mem_mb=4000, max_time_min=60)


@pytest.mark.parametrize("state, mem_gb, time_min, gpus, attempts, had, expected", [
    ("out_of_memory", 1, 10, 0, 1, ROOMY, Growth(0, "resources.mem_gb", 1, 2)),
    ("oom", 1, 10, 0, 1, ROOMY, Growth(0, "resources.mem_gb", 1, 2)),  # the CPU allocator: host memory
    ("timeout", 1, 10, 0, 1, ROOMY, Growth(0, "resources.time_min", 10, 20)),
    ("timeout", 1, 40, 0, 2, ROOMY, Growth(0, "resources.time_min", 40, 60)),  # capped at MaxTime
    ("out_of_memory", 2, 10, 0, 1, ROOMY, Growth(0, "resources.mem_gb", 2, 3)),  # 4000 MB: 3 whole GB
    # mem_gb=0 (the cluster's default): twice what sacct says the job had
    ("out_of_memory", 0, 10, 0, 1, JobResources(1000, None, 4000, 60), Growth(0, "resources.mem_gb", 1, 2)),
    ("failed", 1, 10, 0, 9, ROOMY, Growth(0)),  # not a shortage: rerun as it is
])
def test_growth_doubles_memory_or_time_up_to_the_partition(state, mem_gb, time_min, gpus, attempts, had, expected):
    assert growth(0, state, mem_gb, time_min, gpus, attempts, 3, had) == expected


@pytest.mark.parametrize("state, mem_gb, time_min, gpus, attempts, stop", [
    ("timeout", 1, 10, 0, 3, "timeout after 3 attempt(s): cluster.max_attempts=3 reached (raise it in the point's "
                              "config.yaml, or change the point)"),
    ("timeout", 1, 60, 0, 1, "resources.time_min=60 is at the partition's limit of 60 minutes (the partition's "
                              "MaxTime)"),
    ("out_of_memory", 3, 10, 0, 1, "resources.mem_gb=3 is at the partition's limit of 3 GB per node (the "
                                    "partition's MaxMemPerNode or its largest node)"),
    ("oom", 1, 10, 2, 1, "CUDA out of memory: a GPU's memory is not something sbatch can double; ask for a GPU with "
                         "more memory (cluster.constraint, sbatch_extra gres type) or lower the batch size, then "
                         "`hpml resume`"),
    ("out_of_memory", 0, 10, 0, 1, "resources.mem_gb=0 and the job's memory is unknown: set resources.mem_gb"),
])
def test_growth_stops_in_one_line(state, mem_gb, time_min, gpus, attempts, stop):
    change = growth(7, state, mem_gb, time_min, gpus, attempts, 3, ROOMY)
    assert change.stop == stop and change.key is None
    assert change.describe() == f"hpml: point 7 not resubmitted: {stop}"


@pytest.mark.parametrize("text, mb", [("4000M", 4000), ("1G", 1024), ("1000Mn", 1000), ("500Mc", 500),
                                      ("2.5G", 2560), ("0", None), ("", None), ("junk", None)])
def test_sacct_reqmem(text, mb):
    assert parse_req_mem(text) == mb


def test_partition_limits_take_the_smaller_of_maxmem_and_the_largest_node():
    partitions = [{"PartitionName": "debug", "Default": "YES", "Nodes": "n[1-2]", "MaxTime": "01:00:00",
                   "MaxMemPerNode": "UNLIMITED"},
                  {"PartitionName": "small", "Nodes": "n1", "MaxTime": "5", "MaxMemPerNode": "2048"}]
    nodes = [{"NodeName": "n1", "RealMemory": "4000"}, {"NodeName": "n2", "RealMemory": "8000"}]
    members = {"n[1-2]": ["n1", "n2"], "n1": ["n1"]}.get
    assert partition_limits(None, partitions, nodes, members) == (8000, 60)
    assert partition_limits("small", partitions, nodes, members) == (2048, 5)
    assert partition_limits("nope", partitions, nodes, members) == (None, None)


ASSOC = """hpml|||||normal
hpml|alice||4||normal
hpml|bob||||normal
lab|alice|||10|"""
QOS = """normal|||
tight|3||5"""
QUEUE = """alice|hpml|normal
alice|hpml|tight
bob|hpml|tight
carol|lab|tight"""


def test_submit_limits_count_the_jobs_each_limit_counts():
    assocs, qoses, queue = parse_records(ASSOC, ASSOC_FIELDS), parse_records(QOS, QOS_FIELDS), parse_queue(QUEUE)
    assert [limit.describe() for limit in limits_of("alice", "hpml", None, assocs, qoses, queue)] == [
        "association alice/hpml MaxSubmitJobs=4 (2 of yours already queued)"]
    tight = limits_of("alice", "hpml", "tight", assocs, qoses, queue)
    assert [limit.describe() for limit in tight] == [
        "association alice/hpml MaxSubmitJobs=4 (2 of yours already queued)",
        "QOS tight MaxSubmitJobsPerUser=3 (1 of yours already queued)",
        "QOS tight GrpSubmitJobs=5 (3 in QOS tight already queued)"]
    assert tightest(tight).room == 2
    assert limits_of("bob", "hpml", None, assocs, qoses, queue) == []  # no limit set: nothing held back


def spec(point: int, points_per_job: int, nodes: int = 1) -> JobSpec:
    shape = ResourceShape(cluster=ClusterKind.slurm, nodes=nodes, workers_per_node=1, gpus_per_node=0,
                          cpus_per_worker=1, mem_gb=0, time_min=2, points_per_job=points_per_job)
    return JobSpec(point=point, point_dir=f"/s/points/{point}", overrides=(), workload="probe", shape=shape)


def test_points_per_job_packs_each_shape_into_array_tasks():
    specs = [spec(p, 3) for p in range(7)] + [spec(7, 1), spec(8, 1)]
    units = job_units(specs)
    assert [[[s.point for s in unit] for unit in tasks] for _, tasks in units] == [[[0, 1, 2], [3, 4, 5], [6]],
                                                                                   [[7], [8]]]
    assert job_count(specs) == 5 and units[0][0].job_time_min == 6  # a packed job asks for its points' time


@pytest.mark.parametrize("override, line", [
    ("cluster.array_parallelism=0", "cluster.array_parallelism=0 is not allowed: null (use cluster.max_parallel) or "
                                    "an integer from 1 to 10,000 (array tasks running at once)"),
    ("cluster.points_per_job=-1", "cluster.points_per_job=-1 is not allowed: an integer from 1 to 1,000 (sweep "
                                  "points run one after another in one job)"),
    ("cluster.max_attempts=0", "cluster.max_attempts=0 is not allowed: an integer from 1 to 10 (runs of a point, the "
                               "first included, for `hpml resume --grow`)"),
])
def test_bad_values_of_the_new_cluster_keys_are_one_line(hpml, tmp_path, override, line):
    done = hpml("launch", "--dry-run", "experiment=tiny/probe", "cluster=slurm", override)
    assert done.returncode == 2 and done.stderr.strip() == f"hpml: error: {line}", done.stderr
    assert not (tmp_path / "sweeps").exists()


def test_packing_is_refused_where_it_cannot_work(hpml):
    local = hpml("launch", "--dry-run", "experiment=tiny/probe", "cluster.points_per_job=2")
    assert local.returncode == 2 and local.stderr.strip() == (
        "hpml: error: cluster.points_per_job=2 is not allowed: 1 on cluster=local (its points run in turn already); "
        "more only on cluster=slurm"), local.stderr
    nodes = hpml("launch", "--dry-run", "experiment=tiny/probe", "cluster=slurm", "cluster.points_per_job=2",
                 "resources.nodes=2")
    assert nodes.returncode == 2 and nodes.stderr.strip() == (
        "hpml: error: cluster.points_per_job=2 is not allowed: 1 for a point of resources.nodes=2 (only 1-node points "
        "share a job)"), nodes.stderr


def test_a_job_out_of_requeues_is_a_timeout_of_its_point():
    from submitit.core.utils import UncompletedJobError

    from hpml.launcher.point_job import out_of_requeues

    assert out_of_requeues(UncompletedJobError("Job not requeued because: timed-out too many times."))
    assert not out_of_requeues(UncompletedJobError("Job not requeued because: preempted and not checkpointable."))
    assert not out_of_requeues(RuntimeError("timed-out"))
