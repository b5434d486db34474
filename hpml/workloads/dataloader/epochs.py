"""The loader study's epochs: every batch of the training set fetched and copied to the device as training would,
timed per epoch on every rank.

An epoch is the training loop without the model: after a barrier, `iter(batches)` (which starts the loader's
worker processes unless they persist), then per step `next()` and the copy of images and labels to the device
(`non_blocking=True`: asynchronous from pinned memory, as train's step does), and one device synchronize after the
last batch, so the copies are inside the epoch's time. Epoch 1 is warm-up (file caches, the first fork, CUDA's
first copies): contract.result_format's timed-epoch rule leaves it out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.timing import synchronize, wall_s

TIMING = {
    "epoch": ("wall clock (time.perf_counter) per rank from a barrier at the epoch's start, through iter(batches) "
              "(which starts the loader's worker processes unless persistent_workers) and every batch's copy to the "
              "device (non_blocking), to a device synchronize after the last batch; an epoch's time is its slowest "
              "rank's"),
    "first_batch": "wall clock per rank from the epoch's start to the first batch in the main process",
    "wait": ("rank 0, per step: host seconds blocked in next(batches) (on the device path: queuing the slicing and "
             "augmenting kernels, not running them)"),
    "setup": ("wall clock per rank to build the data set before epoch 1: the host path reads CIFAR-10's batches or "
              "scans the folder; the device path decodes the whole split and moves it to the device (synchronized)"),
}


@dataclass
class EpochLog:
    """This rank's raw numbers, one entry per epoch."""

    epoch_s: List[float] = field(default_factory=list)
    first_batch_s: List[Optional[float]] = field(default_factory=list)
    wait_s: List[List[float]] = field(default_factory=list)


def run_epoch(batches, device: torch.device, log: EpochLog) -> int:
    """One pass over `batches`, each batch copied to `device`; appends the epoch's times; returns the steps."""
    start = wall_s()
    iterator = iter(batches)
    waits: List[float] = []
    first: Optional[float] = None
    while True:
        before = wall_s()
        try:
            images, labels = next(iterator)
        except StopIteration:
            break
        arrived = wall_s()
        waits.append(arrived - before)
        first = arrived - start if first is None else first
        # the step's copies, as train's Stepper makes them (a no-op for batches already on the device)
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
    synchronize(device)
    log.epoch_s.append(wall_s() - start)
    log.first_batch_s.append(first)
    log.wait_s.append(waits)
    return len(waits)


def run_epochs(batches, epochs: int, samples_per_epoch: int, device: torch.device,
               telemetry: Telemetry = NO_TELEMETRY) -> EpochLog:
    """`epochs` passes; each a GPU-telemetry phase "epoch" (timed unless it is the warm-up)."""
    log = EpochLog()
    for epoch in range(epochs):
        set_epoch(batches, epoch)
        dist.barrier()
        with telemetry.phase("epoch", index=epoch, timed=epoch > 0, samples=samples_per_epoch):
            run_epoch(batches, device, log)
    return log


def set_epoch(batches, epoch: int) -> None:
    """A new shuffle each epoch, the same on every rank: the DataLoader's sampler and DeviceEpochs' alike."""
    batches.sampler.set_epoch(epoch)


def load_average() -> List[float]:
    """The host's 1, 5 and 15-minute load averages: on a shared machine, what else was running."""
    return list(os.getloadavg())


def usable_cpus() -> int:
    """The CPUs this process may run on (a cgroup, SLURM or taskset may allow fewer than the host has)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def gathered(per_rank: List[Dict], key: str) -> List[List]:
    """[epoch][rank] of one per-epoch list that every rank recorded."""
    return [list(values) for values in zip(*(rank[key] for rank in per_rank))]
