"""GPU telemetry capture without a GPU (workloads/common/telemetry/): the config keys and result.json's block on a
real CPU point. The buffer, phase bookkeeping, device mapping, sampler threads and sidecar are in
tests/test_telemetry_sampler.py.

NVML itself runs only on a GPU host (tests/test_telemetry_gpu.py).
"""

from __future__ import annotations

import json
import socket

import pytest
import torch.distributed as dist
import yaml

from hpml.conf.schema import TelemetryConfig, config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.contract.result_schema import validate_result
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.workloads.common.telemetry import (
    DISABLED_REASON,
    NO_CUDA_REASON,
    NullTelemetry,
    start_telemetry,
    telemetry_block,
)
from hpml.workloads.common.worker import start_worker

# --- config ------------------------------------------------------------------------------------------------

def test_telemetry_is_on_at_100_ms_by_default(compose_values):
    config = config_from_dict(compose_values())
    assert config.telemetry == TelemetryConfig(enabled=True, interval_ms=100)


@pytest.mark.parametrize("key, value, line", [
    ("interval_ms", 9, "telemetry.interval_ms=9 is not allowed: an integer from 10 to 60000 (milliseconds)"),
    ("interval_ms", 60001, "telemetry.interval_ms=60001 is not allowed"),
    ("interval_ms", 100.5, "telemetry.interval_ms=100.5 is not allowed"),
    ("enabled", "yes", "telemetry.enabled='yes' is not allowed: true or false"),
])
def test_a_bad_telemetry_value_is_refused_by_the_one_validation_path(compose_values, key, value, line):
    values = compose_values()
    values["telemetry"][key] = value
    with pytest.raises(ConfigValueError, match="^" + line.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(values)


def test_hpml_launch_refuses_a_bad_interval_in_one_line(hpml):
    done = hpml("launch", "--dry-run", "telemetry.interval_ms=5")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == \
        "hpml: error: telemetry.interval_ms=5 is not allowed: an integer from 10 to 60000 (milliseconds)"


# --- result.json's block on real points --------------------------------------------------------------------

def test_a_real_cpu_point_says_unavailable_with_the_reason(shared_sweep):
    """`hpml launch` of the tiny all-reduce preset: torchrun, gloo on the CPU, no sidecar, a valid result. The
    study contract's point (tests/test_study_contract.py), launched once per test run."""
    folder = point_dir(shared_sweep("experiment=tiny/allreduce", timeout=300), 0)
    doc = json.loads((folder / RESULT_FILE).read_text())
    assert doc["status"] == "ok" and validate_result(doc) == []
    assert doc["telemetry"] == {"status": "unavailable", "reason": NO_CUDA_REASON, "interval_ms": 100,
                                "sidecars": []}
    assert not list(folder.glob("telemetry.node*"))


@pytest.fixture
def cpu_point(tmp_path, compose_values, monkeypatch):
    """A point's config.yaml and the environment torchrun gives one worker (as tests/test_worker.py)."""
    def make(*overrides):
        directory = tmp_path / "points" / "0"
        directory.mkdir(parents=True)
        (directory / "config.yaml").write_text(yaml.safe_dump(compose_values(["workload=allreduce", *overrides])))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        for key, value in dict(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                               MASTER_PORT=str(port)).items():
            monkeypatch.setenv(key, value)
        return directory
    yield make
    if dist.is_initialized():
        dist.destroy_process_group()


def test_a_point_with_telemetry_off_says_disabled_and_its_marks_do_nothing(cpu_point):
    directory = cpu_point("telemetry.enabled=false")
    worker = start_worker(["--config", str(directory / "config.yaml")])
    assert isinstance(worker.telemetry, NullTelemetry)
    with worker.reporting({}) as body:
        with worker.telemetry.phase("size", index=1024, timed=True):
            body["derived"] = {"ran": True}
    doc = json.loads((directory / RESULT_FILE).read_text())
    assert doc["telemetry"] == {"status": "disabled", "reason": DISABLED_REASON, "interval_ms": 100,
                                "sidecars": []}
    assert doc["derived"] == {"ran": True} and validate_result(doc) == []


def test_without_nvml_a_cuda_node_is_unavailable_with_nvmls_reason():
    """This machine has pynvml but no NVIDIA driver: nvmlInit raises NVMLError_LibraryNotFound."""
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("NVML loads here (a GPU host): tests/test_telemetry_gpu.py covers it")
    telemetry = start_telemetry(TelemetryConfig(enabled=True, interval_ms=100), "cuda", 0, 1)
    assert isinstance(telemetry, NullTelemetry)
    assert telemetry.state() == {"node": 0, "status": "unavailable", "reason": "NVML: NVML Shared Library Not Found"}


@pytest.mark.parametrize("enabled, device, local_rank, state", [
    (True, "cpu", 0, {"node": 0, "status": "unavailable", "reason": NO_CUDA_REASON}),
    (False, "cuda", 0, {"node": 0, "status": "disabled", "reason": DISABLED_REASON}),
    (True, "cuda", 1, None),  # local rank 1 samples nothing: local rank 0 speaks for the node
])
def test_who_samples(enabled, device, local_rank, state):
    telemetry = start_telemetry(TelemetryConfig(enabled=enabled, interval_ms=100), device, local_rank, 1)
    assert isinstance(telemetry, NullTelemetry) and telemetry.state() == state


def ok(node):
    return {"node": node, "status": "ok", "reason": None}


def down(node, why):
    return {"node": node, "status": "unavailable", "reason": why}


@pytest.mark.parametrize("states, block", [
    ([ok(0), None, ok(1), None], {"status": "ok", "reason": None,
                                  "sidecars": ["telemetry.node0.json.gz", "telemetry.node1.json.gz"]}),
    ([ok(1), down(0, "NVML: Unknown Error")], {"status": "ok", "reason": "node 0: NVML: Unknown Error",
                                              "sidecars": ["telemetry.node1.json.gz"]}),
    ([down(0, "no CUDA device"), down(1, "no CUDA device")],
     {"status": "unavailable", "reason": "no CUDA device", "sidecars": []}),
    ([down(0, "a"), down(1, "b")], {"status": "unavailable", "reason": "node 0: a; node 1: b", "sidecars": []}),
    ([{"node": 0, "status": "disabled", "reason": DISABLED_REASON}],
     {"status": "disabled", "reason": DISABLED_REASON, "sidecars": []}),
])
def test_the_result_block_from_every_nodes_state(states, block):
    assert telemetry_block(states, 250) == {**block, "interval_ms": 250}


def test_rank_0s_final_state_replaces_its_nodes_start_state():
    final = down(0, "sidecar not written: OSError: disk full")
    assert telemetry_block([ok(0), ok(1)], 100, final) == {
        "status": "ok", "reason": "node 0: sidecar not written: OSError: disk full", "interval_ms": 100,
        "sidecars": ["telemetry.node1.json.gz"]}


def result_with(block):
    doc = json.loads(json.dumps(BASE))
    doc["telemetry"] = block
    return doc


BASE = {"schema_version": 1, "identity": {"sweep": "s", "point": 0, "repeat": 0, "seed": 0, "workload": "w"},
        "status": "ok", "reason": None,
        "config": {"sweep": {}, "resources": {"nodes": 1, "workers_per_node": 1}, "cluster": {},
                   "workload": {"name": "w"}},
        "environment": {"world_size": 1}, "timing": {}, "measurements": {}, "derived": {},
        "started_at": "t", "finished_at": "t"}


@pytest.mark.parametrize("block, errors", [
    ({"status": "ok", "reason": None, "interval_ms": 100, "sidecars": ["telemetry.node0.json.gz"]}, []),
    ({"status": "busy", "reason": None, "interval_ms": 100, "sidecars": []},
     ["telemetry.status: expected one of ok, unavailable, disabled, got 'busy'"]),
    ({"status": "ok", "reason": None, "interval_ms": 100, "sidecars": ["../../etc/passwd"]},
     ["telemetry.sidecars: expected a list of sidecar names telemetry.node<k>.json.gz, got ['../../etc/passwd']"]),
    ({"status": "ok", "reason": None, "interval_ms": 100, "sidecars": []},
     ["telemetry.sidecars: empty, but status is ok"]),
    ({"status": "unavailable", "reason": None, "interval_ms": 100, "sidecars": []},
     ["telemetry: status unavailable needs a reason and no sidecars"]),
    ({"status": "ok", "reason": None, "interval_ms": 0, "sidecars": ["telemetry.node0.json.gz"]},
     ["telemetry.interval_ms: expected a number > 0 (milliseconds), got 0"]),
])
def test_validation_of_the_block(block, errors):
    assert validate_result(result_with(block)) == errors
    assert validate_result(BASE) == []  # a result from before telemetry existed has no block, and passes
