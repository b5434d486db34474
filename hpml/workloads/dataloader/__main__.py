"""The data-loader study: the training set iterated as training would iterate it, with no model.

Started by torchrun, one worker per GPU (or per CPU slot):
    python -m hpml.workloads.dataloader --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config.

One point is one loader setting: the data set read by train's own reader and transforms, batches of
workload.batch_size from a DistributedSampler, through a DataLoader with the point's num_workers, pin_memory,
persistent_workers and prefetch_factor (sources.py); or, with workload.data_placement=device, the split decoded
once onto the device and sliced and augmented there. workload.epochs passes (epochs.py), each batch copied to the
device, one synchronize at the epoch's end. Epoch 1 is warm-up; the report takes the mean and spread of the rest
(docs/studies/dataloader-workers.md). Why a workload of its own rather than a mode of train: docs/decisions.md,
"Data-loader study (issue 22)".
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Sequence

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.workload.dataloader import DataloaderConfig
from hpml.conf.workload.train_choices import DataPlacement
from hpml.contract.result_format import WARMUP_EPOCHS, timed_epoch_indices
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.timing import synchronize, wall_s
from hpml.workloads.common.worker import start_worker
from hpml.workloads.dataloader.epochs import TIMING, gathered, load_average, run_epochs, usable_cpus
from hpml.workloads.dataloader.sources import device_epochs, host_loader, loader_settings


def measure(cfg: DataloaderConfig, ctx: DistContext, seed: int, telemetry: Telemetry = NO_TELEMETRY) -> Dict:
    """The point's measurements (every rank's raw times) and the numbers derived from them."""
    torch.manual_seed(seed)
    on_device = cfg.data_placement == DataPlacement.device
    began = wall_s()
    batches, size = device_epochs(cfg, ctx, seed) if on_device else host_loader(cfg, ctx, seed)
    synchronize(ctx.device)
    setup_s = wall_s() - began
    if len(batches) == 0:
        raise ValueError(f"no full batch per worker: {size} samples over {ctx.world_size} worker(s) with "
                         f"workload.batch_size={cfg.batch_size}; lower the batch size")
    samples_per_epoch = len(batches) * cfg.batch_size * ctx.world_size
    load_before = load_average()
    log = run_epochs(batches, cfg.epochs, samples_per_epoch, ctx.device, telemetry)
    load_after = load_average()
    ranks = all_gather_objects({"epoch_s": log.epoch_s, "first_batch_s": log.first_batch_s, "setup_s": setup_s,
                                "cpus": usable_cpus()})
    epoch_s_per_rank = gathered(ranks, "epoch_s")
    measurements = {
        "dataset": cfg.dataset.value,
        "data_placement": cfg.data_placement.value,
        "device_type": ctx.device.type,
        "loader": None if on_device else loader_settings(cfg, ctx.device),
        "dataset_samples": size,
        "batch_size": cfg.batch_size,
        "steps_per_epoch": len(batches),
        "samples_per_epoch": samples_per_epoch,
        "epoch_time_s": [max(epoch) for epoch in epoch_s_per_rank],  # the slowest rank's
        "epoch_time_s_per_rank": epoch_s_per_rank,
        "first_batch_s_per_rank": gathered(ranks, "first_batch_s"),
        "wait_s": log.wait_s,
        "setup_s_per_rank": [rank["setup_s"] for rank in ranks],
        "cold_epochs": list(range(WARMUP_EPOCHS)),
        "cpus_per_rank": [rank["cpus"] for rank in ranks],
        "load_average": {"before": load_before, "after": load_after},  # rank 0's host: 1, 5, 15 minutes
    }
    return {"measurements": measurements, "derived": derive(measurements)}


def derive(measurements: Dict[str, Any]) -> Dict[str, Any]:
    """Mean and sample std (ddof=1) of the timed epochs, and the rate at the mean time; the report recomputes
    them from the raw arrays."""
    times = [measurements["epoch_time_s"][i] for i in
             timed_epoch_indices(len(measurements["epoch_time_s"]), measurements["cold_epochs"])]
    mean = statistics.fmean(times)
    return {"timed_epochs": len(times), "epoch_time_mean_s": mean,
            "epoch_time_std_s": statistics.stdev(times) if len(times) > 1 else 0.0,
            "samples_per_s": measurements["samples_per_epoch"] / mean}


def announce(cfg: DataloaderConfig, result: Dict) -> None:
    m, d = result["measurements"], result["derived"]
    setting = "device path" if m["loader"] is None else ", ".join(f"{k}={v}" for k, v in m["loader"].items())
    epochs = ", ".join(f"{t:.3f}" for t in m["epoch_time_s"])
    print(f"[rank 0] {cfg.dataset.value}, {setting}: {m['samples_per_epoch']} samples per epoch; epochs {epochs} s "
          f"(epoch 1 is warm-up); {d['samples_per_s']:.0f} samples/s over the timed epochs", flush=True)


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: DataloaderConfig = worker.workload
    with worker.reporting(TIMING) as body:
        body.update(measure(cfg, worker.ctx, worker.seed, worker.telemetry))
        if worker.ctx.is_main:
            announce(cfg, body)


if __name__ == "__main__":
    main()
