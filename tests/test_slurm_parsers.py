"""SLURM's text formats, parsed without SLURM: literal scheduler output in, values out (as submitit's own
tests do). sacct/squeue (launcher.backends.slurm.states), scontrol's records, GRES and time limits, and the
resource-shape checks of the SLURM preflight (launcher.backends.slurm.preflight). Milliseconds, no root, no cluster."""

from __future__ import annotations

import pytest

from hpml.conf.schema import ClusterKind
from hpml.launcher.backends.slurm.preflight import (
    gres_gpus,
    parse_scontrol_records,
    preflight,
    shape_problems,
    time_limit_minutes,
)
from hpml.launcher.backends.slurm.requests import (
    Gres,
    constraint_features,
    gpu_request,
    parse_gres,
    satisfies_constraint,
)
from hpml.launcher.backends.slurm.states import expand_array_id, parse_sacct, parse_squeue, point_state_of
from hpml.launcher.backends.slurm.submit import DEFAULT_MAX_ARRAY_SIZE, max_array_size, parse_key_values
from hpml.launcher.jobspec import JobSpec, ResourceShape

# --- sacct and squeue -------------------------------------------------------------------------------------

SACCT = """\
1234_0|COMPLETED|n1|0:0
1234_1|FAILED|n2|1:0
1234_2|CANCELLED by 0|n1|0:15
1234_[3-5%2]|PENDING|None assigned|0:0
1240|RUNNING|n[1-2]|0:0

not|enough
"""


def test_sacct_lines_become_one_record_per_job_and_array_task():
    jobs = parse_sacct(SACCT)
    assert sorted(jobs) == ["1234_0", "1234_1", "1234_2", "1234_3", "1234_4", "1234_5", "1240"]
    assert jobs["1234_0"] == {"state": "completed", "slurm_state": "COMPLETED", "nodelist": "n1",
                              "exit_code": "0:0"}
    assert jobs["1234_1"]["state"] == "failed" and jobs["1234_1"]["exit_code"] == "1:0"
    assert jobs["1234_2"]["state"] == "cancelled" and jobs["1234_2"]["slurm_state"] == "CANCELLED by 0"
    assert {jobs[f"1234_{i}"]["state"] for i in (3, 4, 5)} == {"pending"}
    assert jobs["1240"]["state"] == "running" and jobs["1240"]["nodelist"] == "n[1-2]"


def test_squeue_lines_have_no_exit_code_and_may_be_indented():
    jobs = parse_squeue("  77_[1-2]|PENDING|\n77_0|RUNNING|n2\n\n")
    assert jobs == {
        "77_0": {"state": "running", "slurm_state": "RUNNING", "nodelist": "n2", "exit_code": ""},
        "77_1": {"state": "pending", "slurm_state": "PENDING", "nodelist": "", "exit_code": ""},
        "77_2": {"state": "pending", "slurm_state": "PENDING", "nodelist": "", "exit_code": ""},
    }


@pytest.mark.parametrize("job_id, expected", [
    ("123", ["123"]),
    ("123_4", ["123_4"]),
    ("123_[7]", ["123_7"]),
    ("123_[0-3,7]", ["123_0", "123_1", "123_2", "123_3", "123_7"]),
    ("123_[1-5%2]", ["123_1", "123_2", "123_3", "123_4", "123_5"]),
    ("9_[0,2-3%1]", ["9_0", "9_2", "9_3"]),
])
def test_array_ids_expand_to_one_id_per_task(job_id, expected):
    assert expand_array_id(job_id) == expected


@pytest.mark.parametrize("slurm_state, point_state", [
    ("PENDING", "pending"), ("REQUEUED", "pending"), ("RUNNING", "running"), ("COMPLETING", "running"),
    ("COMPLETED", "completed"), ("FAILED", "failed"), ("BOOT_FAIL", "failed"), ("TIMEOUT", "timeout"),
    ("DEADLINE", "timeout"), ("OUT_OF_MEMORY", "out_of_memory"), ("CANCELLED by 1000", "cancelled"),
    ("CANCELLED+", "cancelled"), ("NODE_FAIL", "node_fail"), ("SOMETHING_NEW", "something_new"), ("", "unknown"),
])
def test_slurm_states_map_to_point_states(slurm_state, point_state):
    assert point_state_of(slurm_state) == point_state


# --- scontrol, GRES, time limits --------------------------------------------------------------------------

def test_scontrol_config_lines_become_key_values():
    text = ("Configuration data as of 2024-05-01T10:00:00\n"
            "AccountingStorageType   = accounting_storage/slurmdbd\n"
            "MaxArraySize            = 101\n"
            "\n"
            "Cgroup Support Configuration:\n")
    config = parse_key_values(text)
    assert config == {"AccountingStorageType": "accounting_storage/slurmdbd", "MaxArraySize": "101"}
    assert max_array_size(config) == 101
    assert max_array_size({}) == DEFAULT_MAX_ARRAY_SIZE == 1001


PARTITIONS = """\
PartitionName=debug AllowGroups=ALL AllowAccounts=ALL Default=YES QoS=N/A DefaultTime=NONE MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 Nodes=n[1-2] State=UP TotalCPUs=8 TotalNodes=2
PartitionName=short AllowGroups=ALL AllowAccounts=ALL Default=NO QoS=N/A DefaultTime=NONE MaxNodes=UNLIMITED MaxTime=00:05:00 MinNodes=0 Nodes=n1 State=UP TotalCPUs=4 TotalNodes=1

"""
NODES = """\
NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 CPULoad=0.00 AvailableFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=box OS=Linux 6.1.0 #1 SMP RealMemory=4000 State=IDLE
NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 CPULoad=0.00 AvailableFeatures=(null) Gres=gpu:2 NodeAddr=127.0.0.1 NodeHostName=box OS=Linux 6.1.0 #1 SMP RealMemory=4000 State=IDLE
"""
HOSTLISTS = {"n[1-2]": ["n1", "n2"], "n1": ["n1"]}  # what `scontrol show hostnames` prints for them


def test_scontrol_one_line_records_become_dicts():
    partitions = parse_scontrol_records(PARTITIONS)
    assert [p["PartitionName"] for p in partitions] == ["debug", "short"]
    assert partitions[0]["Nodes"] == "n[1-2]" and partitions[0]["Default"] == "YES"
    assert partitions[1]["MaxTime"] == "00:05:00"
    node = parse_scontrol_records(NODES)[0]
    assert (node["NodeName"], node["CPUTot"], node["Gres"], node["OS"]) == ("n1", "4", "gpu:2", "Linux")


@pytest.mark.parametrize("gres, gpus", [
    ("gpu:2", 2),
    ("gpu:a100:4(S:0-1)", 4),
    ("gpu:4(S:0)", 4),
    ("gpu:1g.10gb:7", 7),
    ("gpu:a100:2,gpu:v100:1", 3),
    ("gpu:a100:4(S:0-1),gpu:v100:2(S:0,1)", 6),
    ("shard:8,gpu:2", 2),
    ("mps:100", 0),
    ("(null)", 0),
    ("", 0),
])
def test_gres_gpus(gres, gpus):
    assert gres_gpus(gres) == gpus


@pytest.mark.parametrize("text, minutes", [
    ("UNLIMITED", None), ("INFINITE", None), ("NONE", None),
    ("30", 30), ("30:00", 30), ("30:30", 30.5), ("00:05:00", 5), ("02:30:00", 150),
    ("1-00:00:00", 1440), ("2-12", 2 * 1440 + 12 * 60), ("1-02:30", 1440 + 150), ("0-00:00:30", 0.5),
])
def test_time_limits_in_minutes(text, minutes):
    assert time_limit_minutes(text) == minutes


# --- the resource-shape checks of the SLURM preflight -----------------------------------------------------

def shape(**fields) -> ResourceShape:
    values = dict(cluster=ClusterKind.slurm, nodes=1, workers_per_node=1, gpus_per_node=0, cpus_per_worker=1,
                  mem_gb=0, time_min=10)
    return ResourceShape(**{**values, **fields})


def problems(partitions_text: str = PARTITIONS, nodes_text: str = NODES, **fields):
    """shape_problems of shape(**fields) on the cluster that `scontrol show partition|node -o` describe."""
    return shape_problems(shape(**fields), parse_scontrol_records(partitions_text),
                          parse_scontrol_records(nodes_text), expand=HOSTLISTS.__getitem__)


def test_a_shape_that_fits_the_default_partition_has_no_problem():
    assert problems(nodes=2, workers_per_node=2, gpus_per_node=2, cpus_per_worker=2, time_min=600) == []


def test_an_unknown_partition_names_the_ones_there_are():
    assert problems(partition="nope") == ["cluster.partition=nope: no such partition (available: debug, short)"]


def test_every_limit_of_the_partition_that_is_exceeded_is_one_line():
    assert problems(partition="short", nodes=3, gpus_per_node=4, time_min=10) == [
        "resources.nodes=3: partition short has 1 node(s)",
        "resources.gpus_per_node=4: nodes of partition short have at most 2 GPU(s)",
        "resources.time_min=10: partition short allows at most 5 minutes (MaxTime)",
    ]
    assert problems(partition="short", time_min=5) == []  # MaxTime itself is allowed


def test_a_task_needs_the_cpus_of_all_its_workers():
    assert problems(workers_per_node=2, cpus_per_worker=3) == [
        "resources.workers_per_node x resources.cpus_per_worker = 6 CPUs: nodes of partition debug have at most 4"]


def test_too_few_nodes_with_enough_gpus():
    one_gpu_on_n2 = NODES.replace("NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 CPULoad=0.00 "
                                  "AvailableFeatures=(null) Gres=gpu:2", "NodeName=n2 CPUTot=4 Gres=gpu:1")
    assert problems(nodes_text=one_gpu_on_n2, nodes=2, gpus_per_node=2) == [
        "resources: only 1 node(s) of partition debug have 2 GPU(s)"]
    assert problems(nodes_text=one_gpu_on_n2, nodes=1, gpus_per_node=2) == []  # n1 is enough for one node


def test_without_a_default_partition_the_first_is_used_and_without_any_none_fits():
    no_default = PARTITIONS.replace("Default=YES", "Default=NO")
    assert problems(partitions_text=no_default, nodes=3) == ["resources.nodes=3: partition debug has 2 node(s)"]
    assert problems(partitions_text="") == ["this cluster has no partition"]


def test_preflight_without_sbatch_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no SLURM client here
    spec = JobSpec(point=0, point_dir=str(tmp_path / "points/0"), overrides=(), workload="train", shape=shape())
    assert preflight([spec]) == ["cluster=slurm: sbatch is not on PATH (is this a SLURM login node?)"]


# --- GRES types, features and memory (sbatch refuses these: the preflight says so first) -----------------

TYPED_NODES = """\
NodeName=n1 CPUTot=8 AvailableFeatures=a100,ib Gres=gpu:a100:4(S:0-1),shard:8 RealMemory=256000 State=IDLE
NodeName=n2 CPUTot=8 AvailableFeatures=v100 Gres=gpu:v100:2 RealMemory=64000 State=IDLE
"""


@pytest.mark.parametrize("text, items", [
    ("(null)", []),
    ("gpu:2", [Gres("gpu", None, 2)]),
    ("gpu:a100:4(S:0-1),shard:8", [Gres("gpu", "a100", 4), Gres("shard", None, 8)]),
    ("gpu:a100", [Gres("gpu", "a100", 1)]),
    ("gpu", [Gres("gpu", None, 1)]),
])
def test_gres_items_are_name_type_count(text, items):
    assert parse_gres(text) == items


@pytest.mark.parametrize("text", ["gpu:a:b:4", ":4", "gpu:0", ","])
def test_a_gres_slurm_would_not_read_is_refused(text):
    with pytest.raises(ValueError):
        parse_gres(text)


@pytest.mark.parametrize("extra, nodes, per_node", [
    ({"gres": "gpu:a100:4"}, 1, Gres("gpu", "a100", 4)),
    ({"gres": "shard:2,gpu:2"}, 1, Gres("gpu", None, 2)),
    ({"gpus-per-node": "h100:8"}, 2, Gres("gpu", "h100", 8)),
    ({"gpus": "8"}, 2, Gres("gpu", None, 4)),  # --gpus is the job's: 8 over 2 nodes
    ({"gres": "shard:2"}, 1, None),
])
def test_a_gpu_request_in_sbatch_extra_is_read_per_node(extra, nodes, per_node):
    request = gpu_request(shape(nodes=nodes, sbatch_extra=tuple(extra.items())))
    assert (request[2] if request else None) == per_node


def test_features_of_a_constraint_expression():
    assert constraint_features("a100&ib") == ["a100", "ib"]
    assert constraint_features("[rack1|rack2]*2") == ["rack1", "rack2"]
    node = {"AvailableFeatures": "a100,ib"}
    assert satisfies_constraint(node, "a100&ib") and not satisfies_constraint(node, "a100&v100")
    assert satisfies_constraint(node, "v100|a100") and not satisfies_constraint({"AvailableFeatures": "(null)"}, "x")


def typed(**fields):
    return problems(nodes_text=TYPED_NODES, **fields)


def test_the_documented_typed_gres_fits_when_the_type_exists():
    assert typed(gpus_per_node=4, sbatch_extra=(("gres", "gpu:a100:4"),)) == []
    assert typed(nodes=2, gpus_per_node=2, constraint="a100|v100") == []


def test_a_gres_type_no_node_has_is_one_line_naming_what_there_is():
    assert typed(gpus_per_node=4, sbatch_extra=(("gres", "gpu:h100:4"),)) == [
        "cluster.sbatch_extra.gres=gpu:h100:4: no node of partition debug has it "
        "(GRES there: gpu:a100:4(S:0-1),shard:8, gpu:v100:2)"]
    assert typed(sbatch_extra=(("gres", "fpga:1"),)) == [
        "cluster.sbatch_extra.gres=fpga:1: no node of partition debug has it "
        "(GRES there: gpu:a100:4(S:0-1),shard:8, gpu:v100:2)"]


def test_a_gpu_request_must_match_the_gpus_the_workers_use():
    assert typed(gpus_per_node=0, sbatch_extra=(("gres", "gpu:a100:4"),)) == [
        "cluster.sbatch_extra.gres=gpu:a100:4 asks for 4 GPU(s) per node but resources.gpus_per_node=0; "
        "set resources.gpus_per_node=4 (the workers use that many)"]
    assert typed(gpus_per_node=1, sbatch_extra=(("gpus-per-node", "x"),)) == [
        "cluster.sbatch_extra: 'x' is not [type:]count"]


def test_unknown_features_and_too_much_memory_are_one_line_each():
    assert typed(constraint="h100&ib", mem_gb=300) == [
        "resources.mem_gb=300: nodes of partition debug have at most 250.0 GB (RealMemory 256000 MB)",
        "cluster.constraint=h100&ib: no node of partition debug has it (features there: a100, ib, v100)",
    ]
    assert typed(mem_gb=250) == []
    limited = PARTITIONS.replace("MaxTime=UNLIMITED", "MaxTime=UNLIMITED MaxMemPerNode=1000")
    assert typed(partitions_text=limited, mem_gb=2) == [
        "resources.mem_gb=2: partition debug allows at most 1000 MB per node (MaxMemPerNode)"]


def test_requirements_each_met_somewhere_but_not_together_on_enough_nodes():
    assert typed(nodes=2, mem_gb=100, constraint="a100|v100") == [
        "resources: only 1 node(s) of partition debug have 100 GB of memory and features a100|v100"]
