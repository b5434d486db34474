"""workload.cuda_graphs with DDP: which workers turn NCCL's async error handling off (PyTorch's recipe for
capturing DDP's all-reduces). The capture itself runs on the GPU machine (docs/results/tta_gpus_fashion_mnist)."""

import pytest

from hpml.conf.schema import config_from_dict
from hpml.workloads.train.graphed_step import DDP_WARMUP_STEPS, WARMUP_STEPS


@pytest.mark.parametrize("overrides, expected", [
    (["workload.cuda_graphs=true", "workload.parallel=ddp"], True),
    (["workload.cuda_graphs=true", "workload.parallel=none"], False),
    (["workload.cuda_graphs=false", "workload.parallel=ddp"], False),
    (["workload.cuda_graphs=false", "workload.parallel=dp"], False)])
def test_only_a_captured_ddp_step_turns_async_error_handling_off(compose_values, overrides, expected):
    cfg = config_from_dict(compose_values(["resources.gpus_per_node=1", *overrides])).workload
    assert cfg.captures_collectives is expected


@pytest.mark.parametrize("workload", ["allreduce", "synthetic", "probe"])
def test_the_other_workloads_capture_nothing(compose_values, workload):
    assert config_from_dict(compose_values([f"workload={workload}"])).workload.captures_collectives is False


def test_ddp_warms_up_the_eleven_steps_pytorch_asks_for():
    assert (WARMUP_STEPS, DDP_WARMUP_STEPS) == (3, 11)
