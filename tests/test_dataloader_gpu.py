"""The data-loader study's CUDA path (`pytest -m gpu`; skipped without CUDA): pinned batches copied asynchronously,
the device path decoded onto the GPU, and a real one-GPU point through `hpml launch` whose telemetry sidecar has one
phase per epoch (the first not timed). docs/results/dataloader_workers/run.sh runs it before the study."""

from __future__ import annotations

import json
import os

import pytest
import torch

from hpml.conf.schema import config_from_dict
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.dataloader.sources import device_epochs, host_loader, loader_settings

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

CORES = min(16, len(os.sched_getaffinity(0)))


@pytest.fixture
def config(compose_values, digits_data):
    def _config(*overrides: str):
        return config_from_dict(compose_values([
            "experiment=dataloader_workers", f"workload.data_root={digits_data / 'cifar'}", "workload.epochs=2",
            f"resources.cpus_per_worker={CORES}", "workload.loader_workers=2", *overrides])).workload
    return _config


def cuda_ctx() -> DistContext:
    return DistContext(rank=0, local_rank=0, world_size=1, device=torch.device("cuda", 0), backend="nccl")


def test_pinned_batches_and_the_device_path_on_the_gpu(config):
    cfg = config("workload.pin_memory=true", "workload.persistent_workers=true")
    assert loader_settings(cfg, torch.device("cuda", 0))["pin_memory"] is True
    loader, _ = host_loader(cfg, cuda_ctx(), seed=0)
    images, labels = next(iter(loader))
    assert images.is_pinned() and labels.is_pinned()
    on_gpu = images.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    assert torch.equal(on_gpu.cpu(), images)
    batches, _ = device_epochs(config("workload.data_placement=device", "workload.loader_workers=0"), cuda_ctx(), 0)
    images, labels = next(iter(batches))
    assert images.is_cuda and labels.is_cuda and images.dtype == torch.float32


def test_a_gpu_point_records_an_epoch_phase_per_epoch(tmp_path, hpml_in, digits_data):
    done = hpml_in(tmp_path, "launch", "experiment=dataloader_workers", f"workload.data_root={digits_data / 'cifar'}",
                   f"resources.cpus_per_worker={CORES}", "workload.loader_workers=2", "workload.pin_memory=true",
                   "workload.epochs=3", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = point_dir((tmp_path / "sweeps" / "latest").resolve(), 0)
    result = json.loads((folder / RESULT_FILE).read_text())
    assert result["status"] == "ok", result["reason"]
    assert result["measurements"]["loader"]["pin_memory"] is True and result["measurements"]["device_type"] == "cuda"
    from hpml.workloads.common.telemetry.sidecar import read_sidecar

    epochs = [p for p in read_sidecar(folder / "telemetry.node0.json.gz")["phases"] if p["name"] == "epoch"]
    assert [(p["index"], p["timed"], p["samples"]) for p in epochs] == [(0, False, 1280), (1, True, 1280),
                                                                      (2, True, 1280)]
