"""workloads/common/worker.py in a real one-process gloo group: what result.json says after a body that
succeeds, fails or runs out of memory, that the exception still leaves the worker, and that before_init runs
before the process group exists."""

from __future__ import annotations

import json
import os
import socket

import pytest
import torch
import torch.distributed as dist
import yaml

from hpml.workloads.common.worker import start_worker


@pytest.fixture
def point(tmp_path, compose_values, monkeypatch):
    """A point's config.yaml (points/3/) and the environment torchrun gives one worker."""
    directory = tmp_path / "points" / "3"
    directory.mkdir(parents=True)
    values = compose_values(["workload=allreduce"])
    (directory / "config.yaml").write_text(yaml.safe_dump(values))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in dict(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                           MASTER_PORT=str(port), OMP_NUM_THREADS="1").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NCCL_ALGO", raising=False)
    yield directory, values
    if dist.is_initialized():  # a failed body leaves the group to the process exit; this process goes on
        dist.destroy_process_group()


def result_of(directory):
    return json.loads((directory / "result.json").read_text())


def argv(directory):
    return ["--config", str(directory / "config.yaml")]


def test_a_body_that_succeeds_writes_its_numbers_and_destroys_the_group(point):
    directory, values = point
    worker = start_worker(argv(directory))
    assert dist.is_initialized() and worker.ctx.world_size == 1 and worker.ctx.backend == "gloo"
    with worker.reporting({"loop": "words"}) as body:
        body.update({"measurements": {"sizes": [1, 2]}, "derived": {"best": 2}})
    assert not dist.is_initialized()
    result = result_of(directory)
    assert (result["status"], result["reason"]) == ("ok", None)
    assert result["measurements"] == {"sizes": [1, 2]} and result["derived"] == {"best": 2}
    assert result["timing"] == {"loop": "words"}
    assert result["config"] == values
    assert result["identity"]["point"] == 3 and result["identity"]["workload"] == "allreduce"
    assert result["environment"]["world_size"] == 1 and result["environment"]["backend"] == "gloo"
    assert result["environment"]["ranks"][0]["rank"] == 0
    assert result["started_at"] == worker.started_at <= result["finished_at"]


def test_a_failing_body_is_recorded_raised_and_keeps_what_it_had_measured(point):
    directory, _ = point
    worker = start_worker(argv(directory))
    error = ValueError("the sum was wrong at 1024 bytes")
    with pytest.raises(ValueError) as raised:
        with worker.reporting({}) as body:
            body.update({"measurements": {"sizes": [1024]}, "derived": {"all_correct": False}})
            raise error
    assert raised.value is error
    assert dist.is_initialized()  # left to the process exit
    result = result_of(directory)
    assert (result["status"], result["reason"]) == ("failed", "ValueError: the sum was wrong at 1024 bytes")
    assert result["measurements"] == {"sizes": [1024]} and result["derived"] == {"all_correct": False}


def test_an_interrupted_body_is_a_failure_not_an_empty_ok(point):
    directory, _ = point
    worker = start_worker(argv(directory))
    with pytest.raises(KeyboardInterrupt):
        with worker.reporting({}):
            raise KeyboardInterrupt()
    assert (result_of(directory)["status"], result_of(directory)["reason"]) == \
        ("failed", "KeyboardInterrupt: interrupted (SIGINT)")


def test_the_reason_of_a_failure_is_one_line_whatever_the_message(point):
    directory, _ = point
    worker = start_worker(argv(directory))
    with pytest.raises(RuntimeError):
        with worker.reporting({}):
            raise RuntimeError("\n  CUDA error: no kernel image\nCUDA kernel errors might be reported later\n" + "x" * 900)
    assert result_of(directory)["reason"] == "RuntimeError: CUDA error: no kernel image"


def test_out_of_memory_records_the_first_line_and_the_oom_measurements(point):
    directory, _ = point
    worker = start_worker(argv(directory))
    with pytest.raises(torch.OutOfMemoryError):
        with worker.reporting({}, oom_measurements=lambda: {"batch_probe": None, "dataset": "synthetic"}) as body:
            body["derived"] = {"kept": True}
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")
    result = result_of(directory)
    assert result["status"] == "oom"
    assert result["reason"] == "out of memory: CUDA out of memory. Tried to allocate 2.00 GiB"  # the first line
    assert result["measurements"] == {"batch_probe": None, "dataset": "synthetic"}
    assert result["derived"] == {"kept": True}


@pytest.mark.parametrize("error, status", [
    (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 GiB"), "oom"),
    (RuntimeError("shape mismatch"), "failed"),
])
def test_a_cpu_allocation_failure_counts_as_out_of_memory_in_every_workload(point, error, status):
    directory, _ = point
    worker = start_worker(argv(directory))
    with pytest.raises(RuntimeError):
        with worker.reporting({}):
            raise error
    result = result_of(directory)
    assert result["status"] == status
    assert result["measurements"] == {} and result["derived"] == {}  # no oom_measurements given


def test_before_init_runs_before_the_process_group_and_its_environment_is_recorded(point):
    directory, _ = point
    seen = []

    def before_init(workload):
        seen.append((workload.name, dist.is_initialized()))
        os.environ["NCCL_ALGO"] = "allreduce:ring"  # as synthetic's export_nccl_algo does

    worker = start_worker(argv(directory), before_init=before_init)
    try:
        assert seen == [("allreduce", False)]
        assert worker.environment["env"]["NCCL_ALGO"] == "allreduce:ring"
    finally:
        os.environ.pop("NCCL_ALGO", None)
