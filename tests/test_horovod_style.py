"""workloads/synthetic/horovod_style.py for real: 2 processes, a gloo process group on CPU, no mocks.

One pair of processes runs every scenario (starting processes is the slow part); each rank saves what it
ends with, and the tests compare in this process. The reference is DDP under the same seed and the same
per-rank data: after several SGD-with-momentum steps the parameters must be equal (tight tolerance; in
practice they are bitwise equal, on gloo and on NCCL). The `gpu` test repeats it with NCCL on 2 GPUs.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
from torch.nn.parallel import DistributedDataParallel

from hpml.workloads.synthetic.horovod_style import (
    MB,
    DistributedOptimizer,
    broadcast_optimizer_state,
    broadcast_parameters,
    plan_buckets,
)

WORLD = 2
STEPS = 4
TIGHT = dict(rtol=1e-6, atol=1e-7)

# MLP gradients, in bytes: W1 16x8 = 512, b1 = 64, W2 4x16 = 256, b2 = 16 (backward order: b2, W2, b1, W1)
SCENARIOS = {
    "no_fusion": dict(threshold_mb=0.0, passes=1),  # one all-reduce per gradient
    "smaller_than_any_gradient": dict(threshold_mb=8 / MB, passes=1),  # each gradient alone, too
    "some_fusion": dict(threshold_mb=600 / MB, passes=1),  # [b2, W2, b1] and [W1]
    "all_in_one_bucket": dict(threshold_mb=64.0, passes=1),  # Horovod's default threshold
    "two_backward_passes_per_step": dict(threshold_mb=600 / MB, passes=2),
    "fp16_compression": dict(threshold_mb=600 / MB, passes=1, fp16=True),
}


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def batch(rank: int, step: int, micro: int, device: torch.device):
    """Different data on every rank, step and micro-step; the same for both models."""
    generator = torch.Generator().manual_seed(1000 * step + 10 * micro + rank)
    x, y = torch.randn(6, 8, generator=generator), torch.randint(0, 4, (6,), generator=generator)
    return x.to(device), y.to(device)


def params_of(model: torch.nn.Module):
    return [p.detach().cpu().clone() for p in model.parameters()]


def train_both(rank: int, device: torch.device, threshold_mb: float, passes: int, fp16: bool = False) -> dict:
    """The same model trained Horovod-style and with DDP (no_sync on all but the last micro-step)."""
    torch.manual_seed(0)
    model = mlp().to(device)
    reference = DistributedDataParallel(copy.deepcopy(model),
                                        device_ids=[device.index] if device.type == "cuda" else None)
    if fp16:
        reference.register_comm_hook(None, fp16_compress_hook)
    initial = params_of(model)
    optimizer = DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                     fusion_threshold_mb=threshold_mb, backward_passes_per_step=passes,
                                     compression_fp16=fp16)
    broadcast_parameters(model, root=0)
    broadcast_optimizer_state(optimizer, root=0)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(STEPS):
        for micro in range(passes):
            x, y = batch(rank, step, micro, device)
            loss_fn(model(x), y).backward()
            if micro < passes - 1:
                with reference.no_sync():
                    loss_fn(reference(x), y).backward()
            else:
                loss_fn(reference(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    optimizer.remove_hooks()
    return {"initial": initial, "horovod_style": params_of(model), "ddp": params_of(reference.module)}


def broadcasts(rank: int, device: torch.device) -> dict:
    torch.manual_seed(100 + rank)  # every rank starts from different weights
    model = mlp().to(device)
    before = params_of(model)
    broadcast_parameters(model, root=0)
    after = params_of(model)
    # rank 0 has momentum buffers and lr 0.5; rank 1 a fresh optimizer with lr 0.1 and no state
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5 if rank == 0 else 0.1, momentum=0.9)
    if rank == 0:
        model(torch.ones(2, 8, device=device)).sum().backward()
        optimizer.step()
    broadcast_optimizer_state(optimizer, root=0)
    momentum = [optimizer.state[p]["momentum_buffer"].cpu().clone() for p in model.parameters()]
    return {"before": before, "after": after, "momentum": momentum,
            "lr": optimizer.param_groups[0]["lr"]}


def worker(rank: int, folder: str, backend: str) -> None:
    """One rank: gloo on CPU, or NCCL on GPU `rank`."""
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"file://{folder}/store", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    results = {name: train_both(rank, device, **kwargs) for name, kwargs in SCENARIOS.items()}
    results["broadcasts"] = broadcasts(rank, device)
    torch.save(results, Path(folder) / f"rank{rank}.pt")
    # both ranks reach the teardown together: a rank that closes its gloo pairs while the other still reads
    # them can abort the other (SIGABRT, seen once in CI beside the SLURM tests)
    dist.barrier()
    dist.destroy_process_group()


def run_ranks(folder: Path, backend: str) -> list:
    mp.spawn(worker, args=(str(folder), backend), nprocs=WORLD, join=True)
    return [torch.load(folder / f"rank{rank}.pt") for rank in range(WORLD)]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """What each of the 2 ranks (gloo, CPU) ended with, per scenario."""
    return run_ranks(tmp_path_factory.mktemp("horovod_style"), "gloo")


def assert_equal_to_ddp(ranks: list, scenario: str) -> None:
    for rank in range(WORLD):
        result = ranks[rank][scenario]
        for ours, ddp, initial in zip(result["horovod_style"], result["ddp"], result["initial"]):
            torch.testing.assert_close(ours, ddp, **TIGHT)
            assert not torch.equal(ours, initial)  # it did train
    for ours_0, ours_1 in zip(ranks[0][scenario]["horovod_style"], ranks[1][scenario]["horovod_style"]):
        torch.testing.assert_close(ours_0, ours_1, rtol=0, atol=0)  # the replicas stay identical


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_parameters_equal_ddp_after_training(ranks, scenario):
    assert_equal_to_ddp(ranks, scenario)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < WORLD, reason="needs 2 CUDA devices")
def test_parameters_equal_ddp_with_nccl_on_two_gpus(tmp_path):
    """The same scenarios with NCCL: hooks, casts and copies run on CUDA streams."""
    gpu_ranks = run_ranks(tmp_path, "nccl")
    for scenario in SCENARIOS:
        assert_equal_to_ddp(gpu_ranks, scenario)
    for a, b in zip(gpu_ranks[0]["broadcasts"]["after"], gpu_ranks[1]["broadcasts"]["after"]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_fp16_compression_changes_the_result_slightly(ranks):
    """fp16 really is used: the result differs from full precision, but only by fp16 rounding."""
    compressed = ranks[0]["fp16_compression"]["horovod_style"]
    full = ranks[0]["some_fusion"]["horovod_style"]
    assert any(not torch.equal(a, b) for a, b in zip(compressed, full))
    for a, b in zip(compressed, full):
        torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-3)


def test_broadcast_parameters_gives_every_rank_root_weights(ranks):
    root, other = ranks[0]["broadcasts"], ranks[1]["broadcasts"]
    assert any(not torch.equal(a, b) for a, b in zip(root["before"], other["before"]))
    for a, b in zip(root["after"], other["after"]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(root["after"], root["before"]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # root keeps its own


def test_broadcast_optimizer_state_fills_an_empty_state(ranks):
    root, other = ranks[0]["broadcasts"], ranks[1]["broadcasts"]
    assert other["lr"] == root["lr"] == 0.5
    for a, b in zip(root["momentum"], other["momentum"]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_fusion_buckets_follow_backward_order_and_the_threshold():
    w1, b1, w2, b2 = params_of(mlp())  # 512, 64, 256 and 16 bytes

    def layout(threshold_bytes):
        return [[tuple(p.shape) for p in bucket] for bucket in plan_buckets([w1, b1, w2, b2], threshold_bytes)]

    assert layout(0) == [[(4,)], [(4, 16)], [(16,)], [(16, 8)]]  # 0: no fusion
    assert layout(8) == layout(0)  # smaller than any gradient: each alone
    assert layout(600) == [[(4,), (4, 16), (16,)], [(16, 8)]]
    assert layout(300) == [[(4,), (4, 16)], [(16,)], [(16, 8)]]
    assert layout(64 * MB) == [[(4,), (4, 16), (16,), (16, 8)]]


def test_buckets_never_mix_dtypes():
    a, b = torch.zeros(4), torch.zeros(4, dtype=torch.float16)
    assert [len(bucket) for bucket in plan_buckets([a, b], 64 * MB)] == [1, 1]
