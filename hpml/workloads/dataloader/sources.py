"""Where the loader study's batches come from: train's own readers, never a copy of them.

- host path: torchvision's reader of the data set (workloads.train.data.build_dataset: CIFAR-10's python batches
  through local_cifar10, or an ImageFolder of JPEGs) with train's transforms (random crop + flip + ToTensor +
  Normalize), under a DistributedSampler (shuffle, the run's seed, drop_last) and a DataLoader with the point's
  num_workers, pin_memory, persistent_workers and prefetch_factor, exactly as train's build_loader makes it;
- device path: the split decoded once onto the device and sliced there (workloads.train.device_data).

train's readers take a training config; `ReaderView` is the part of one they read, filled from the loader study's
config. A loader study has no model, so what only a model decides is fixed: inputs in fp32 (what ToTensor gives on
the host path), the default memory format, no Cutout (the time-to-accuracy study's regularizer, not part of the
usual pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import torch
from torch.utils.data import DataLoader, DistributedSampler

from hpml.conf.workload.dataloader import DataloaderConfig
from hpml.conf.workload.train import Dataset as DatasetKind
from hpml.conf.workload.train_choices import Precision
from hpml.conf.workload.train_data import flips
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train.data import build_dataset
from hpml.workloads.train.device_data import DeviceEpochs, decode_split, fit_problem, free_memory_bytes

DEFAULT_PREFETCH = 2  # PyTorch's prefetch_factor when num_workers > 0 and none is given


@dataclass(frozen=True)
class ReaderView:
    """The fields of a TrainConfig that build_dataset, decode_split and DeviceEpochs read."""

    dataset: DatasetKind
    data_root: str
    image_size: int
    augment: bool
    crop_padding: int
    cutout_holes: int = 0
    cutout_size: int = 0
    precision: Precision = Precision.fp32
    channels_last: bool = False
    max_samples: Optional[int] = None  # the whole split
    fit_padding: int = 0  # no model: the images as the data set holds them

    @property
    def model_side(self) -> int:
        return self.image_size

    @property
    def flip(self) -> bool:
        """The train workload's rule (TrainConfig.flip): never for MNIST's digits."""
        return self.augment and flips(self.dataset)


def reader_view(cfg: DataloaderConfig) -> ReaderView:
    return ReaderView(dataset=DatasetKind(cfg.dataset.value), data_root=cfg.data_root, image_size=cfg.image_size,
                      augment=cfg.augment, crop_padding=cfg.crop_padding)


def effective_prefetch(workers: int, prefetch_factor: Optional[int]) -> Optional[int]:
    """The prefetch factor the DataLoader uses: none in the main process, else the given one or PyTorch's 2."""
    if workers == 0:
        return None
    return DEFAULT_PREFETCH if prefetch_factor is None else prefetch_factor


def loader_settings(cfg: DataloaderConfig, device: torch.device) -> Dict[str, Any]:
    """The loader's options as they ran (result.json's measurements.loader): prefetch resolved as PyTorch does,
    pin_memory as it took effect (only a CUDA device pins; the schema refuses it on a CPU point)."""
    return {"num_workers": cfg.loader_workers, "pin_memory": cfg.pin_memory and device.type == "cuda",
            "persistent_workers": cfg.persistent_workers,
            "prefetch_factor": effective_prefetch(cfg.loader_workers, cfg.prefetch_factor)}


def host_loader(cfg: DataloaderConfig, ctx: DistContext, seed: int) -> Tuple[DataLoader, int]:
    """(this rank's DataLoader, the data set's size) over train's reader of the configured data set."""
    dataset = build_dataset(reader_view(cfg), seed=seed, kind=DatasetKind(cfg.dataset.value))
    sampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True, seed=seed,
                                 drop_last=True)
    settings = loader_settings(cfg, ctx.device)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, drop_last=True,
                        num_workers=settings["num_workers"], pin_memory=settings["pin_memory"],
                        persistent_workers=settings["persistent_workers"],
                        prefetch_factor=cfg.prefetch_factor)  # None: PyTorch's own default, as the schema says
    return loader, len(dataset)


def device_epochs(cfg: DataloaderConfig, ctx: DistContext, seed: int) -> Tuple[DeviceEpochs, int]:
    """(this rank's batches sliced and augmented on the device, the split's size): decoded once, checked against
    workload.device_data_share of the device's free memory, then moved there."""
    view = reader_view(cfg)
    split = decode_split(view, view.dataset, train=True)
    problem = fit_problem(split.nbytes, free_memory_bytes(ctx.device), cfg.device_data_share, ctx.device)
    if problem:
        raise ValueError(problem)
    return DeviceEpochs(split, cfg.batch_size, view, ctx, seed), len(split.labels)
