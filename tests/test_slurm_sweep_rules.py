"""Issue 35's pure rules, on literal values: --grow's doubling and its stops (launcher/grow.py), sacct's ReqMem and
a partition's limits (launcher/backends/slurm/job_resources.py), the submit limits of sacctmgr's text
(launcher/backends/slurm/limits.py), packing points into array tasks (launcher/backends/slurm/submit.py), and bad values of the new
cluster keys refused in one line before anything is written. The same behaviours on the real cluster:
tests/test_slurm_sweeps.py."""

from __future__ import annotations

import pytest

from hpml.conf.schema import ClusterKind
from hpml.launcher.backends.slurm.job_resources import features_of, parse_req_mem, parse_sacct_jobs, partition_limits
from hpml.launcher.backends.slurm.limits import (
    ASSOC_FIELDS,
    QOS_FIELDS,
    limits_of,
    parse_queue,
    parse_records,
    tightest,
)
from hpml.launcher.backends.slurm.preflight import expand_nodelist
from hpml.launcher.backends.slurm.submit import job_count, job_units
from hpml.launcher.grow import Growth, JobResources, growth
from hpml.launcher.jobspec import JobSpec, ResourceShape

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
    ("oom", 1, 10, 2, 1, "CUDA out of memory: a GPU's memory is not something sbatch can double; list node features "
                         "by GPU memory in cluster.gpu_ladder (e.g. [a100_40g,a100_80g]) for --grow to move it up, "
                         "or lower the batch size, then `hpml resume`"),
    ("out_of_memory", 0, 10, 0, 1, "resources.mem_gb=0 and the job's memory is unknown: set resources.mem_gb"),
])
def test_growth_stops_in_one_line(state, mem_gb, time_min, gpus, attempts, stop):
    change = growth(7, state, mem_gb, time_min, gpus, attempts, 3, ROOMY)
    assert change.stop == stop and change.key is None
    assert change.describe() == f"hpml: point 7 not resubmitted: {stop}"


LADDER = ("a100_40g", "a100_80g", "h200")


@pytest.mark.parametrize("device, constraint, features, expected", [
    ("cuda", "a100_40g", (), Growth(0, "cluster.constraint", "a100_40g", "a100_80g")),
    ("cuda", None, ("ib", "a100_80g"), Growth(0, "cluster.constraint", "a100_80g", "h200")),  # where it ran
    ("cuda", None, ("a100_40g", "a100_80g"), Growth(0, "cluster.constraint", "a100_80g", "h200")),  # the higher
    ("cpu", "a100_40g", (), Growth(0, "resources.mem_gb", 1, 2)),  # ran on the CPU: host memory, whatever it held
    (None, "a100_40g", (), Growth(0, "cluster.constraint", "a100_40g", "a100_80g")),  # no result: it held GPUs
])
def test_cuda_out_of_memory_moves_one_rung_up_the_gpu_ladder(device, constraint, features, expected):
    had = JobResources(None, None, 4000, 60, node_features=features)
    assert growth(0, "oom", 1, 10, 1, 1, 3, had, device=device, constraint=constraint, ladder=LADDER) == expected


@pytest.mark.parametrize("constraint, features, stop", [
    ("h200", (), "CUDA out of memory on h200, the top of cluster.gpu_ladder: lower the batch size (or shard the "
                 "model), then `hpml resume`"),
    ("nvlink", ("a100_40g",), "CUDA out of memory on cluster.constraint=nvlink, no rung of cluster.gpu_ladder="
                              "[a100_40g,a100_80g,h200]: set cluster.constraint to the rung it needs, then `hpml resume`"),
    (None, ("ib",), "CUDA out of memory on nodes with features ib, no rung of cluster.gpu_ladder="
                    "[a100_40g,a100_80g,h200]: set cluster.constraint to the rung it needs, then `hpml resume`"),
    (None, (), "CUDA out of memory on nodes of unknown features, no rung of cluster.gpu_ladder="
               "[a100_40g,a100_80g,h200]: set cluster.constraint to the rung it needs, then `hpml resume`"),
])
def test_the_ladder_stops_in_one_line(constraint, features, stop):
    had = JobResources(None, None, 4000, 60, node_features=features)
    change = growth(3, "oom", 1, 10, 1, 1, 3, had, device="cuda", constraint=constraint, ladder=LADDER)
    assert change.stop == stop and change.describe() == f"hpml: point 3 not resubmitted: {stop}"


@pytest.mark.slurm  # expand_nodelist runs `scontrol show hostnames`: it needs the test cluster's SLURM_CONF
def test_sacct_jobs_and_the_features_of_their_nodes():
    jobs = parse_sacct_jobs("12_0|1000M|n1\n12_1|2G|n[1-2]\n13|0|None assigned\n")
    assert jobs == {"12_0": (1000, "n1"), "12_1": (2048, "n[1-2]"), "13": (None, "None assigned")}
    nodes = [{"NodeName": "n1", "AvailableFeatures": "a100_40g,ib"}, {"NodeName": "n2", "AvailableFeatures": "h200,ib"},
             {"NodeName": "n3", "AvailableFeatures": "(null)"}]
    assert features_of("n[1-2]", nodes, expand_nodelist) == ("a100_40g", "ib", "h200")
    assert features_of("n3", nodes, expand_nodelist) == () == features_of("None assigned", nodes, expand_nodelist)


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
    ("cluster.gpu_ladder=[a100,'a&b']", "cluster.gpu_ladder='a&b' is not allowed: a list of node feature names (letters, "
                                        "digits, '_', '-', '.'), ordered by GPU memory"),
    ("cluster.gpu_ladder=[a100,a100]", "cluster.gpu_ladder=['a100', 'a100'] is not allowed: each feature once"),
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


@pytest.mark.parametrize("text, device", [(None, None), ("{not json", None), ("[1]", None),
                                          ('{"environment": "x"}', None), ('{"environment": {"device": 3}}', None),
                                          ('{"environment": {"device": "cuda"}}', "cuda")])
def test_the_device_a_point_ran_on_is_read_from_its_result_or_is_unknown(tmp_path, text, device):
    from hpml.launcher.resume import result_device

    if text is not None:
        (tmp_path / "result.json").write_text(text)
    assert result_device(tmp_path) == device
