"""The train workload's vocabulary, shared by its worker (workloads/train), its config (conf/workload/train.py), the
synthetic benchmark's config and the reports that read train results (analysis/train, analysis/techniques,
analysis/batch_aug): one home, standard library only (contract/).

Phases of a step, in order: `data` is host time waiting for the batch; the others are device time between CUDA
events (workloads/train/phases.py). A step's train time is its device phases.
"""

from __future__ import annotations

PHASES = ("data", "h2d", "forward", "backward", "optimizer")
DEVICE_PHASES = PHASES[1:]  # timed between device marks; "data" is host time
TRAIN_PHASES = DEVICE_PHASES  # a step's train time: all but data loading


def per_worker_batch(batch_size: int, scaling: str, world_size: int, devices_per_worker: int = 1) -> int:
    """Distinct samples per step in one worker process. Weak scaling fixes the per-device batch: batch_size x the
    devices the worker drives (DataParallel drives several); strong scaling fixes the global batch: batch_size
    split over the workers."""
    if scaling == "weak":
        return batch_size * devices_per_worker
    if scaling == "strong":
        return batch_size // world_size
    raise ValueError(f"scaling {scaling!r}: weak or strong")


def per_device_batch(batch_size: int, scaling: str, devices: int) -> int:
    """Samples per step on one device: batch_size (weak), or the global batch over the devices (strong)."""
    return per_worker_batch(batch_size, scaling, devices)
