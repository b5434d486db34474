"""workload.cuda_graphs with DDP: which workers turn NCCL's async error handling off (PyTorch's recipe for
capturing DDP's all-reduces). The capture itself runs on the GPU machine (docs/results/tta_gpus_fashion_mnist)."""

from types import SimpleNamespace

import pytest

from hpml.conf.workload.train_choices import Parallel
from hpml.workloads.common.distributed import captures_collectives
from hpml.workloads.train.graphed_step import DDP_WARMUP_STEPS, WARMUP_STEPS


@pytest.mark.parametrize("graphs, parallel, expected", [
    (True, Parallel.ddp, True), (True, Parallel.none, False), (False, Parallel.ddp, False), (False, Parallel.dp, False)])
def test_only_a_captured_ddp_step_turns_async_error_handling_off(graphs, parallel, expected):
    assert captures_collectives(SimpleNamespace(cuda_graphs=graphs, parallel=parallel)) is expected


def test_a_workload_without_the_keys_captures_nothing():
    assert captures_collectives(SimpleNamespace()) is False  # e.g. the all-reduce or synthetic workloads


def test_ddp_warms_up_the_eleven_steps_pytorch_asks_for():
    assert (WARMUP_STEPS, DDP_WARMUP_STEPS) == (3, 11)
