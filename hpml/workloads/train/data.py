"""Training data: synthetic images, torchvision's CIFAR-10, Fashion-MNIST or MNIST from a local root, or an
ImageFolder.

Nothing is ever downloaded: a missing data set is an error that says where it was looked for.
`dataset=auto` takes CIFAR-10 when data_root holds it and synthetic data of the configured shape otherwise;
`resolve_dataset` says which, and the train workload records it in its result (measurements.dataset).
`dataset=synthetic_device` makes a few random batches once, on the training device (`DeviceBatches`):
no loader and no host-to-device copy, for compute benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from hpml.conf.data_on_disk import cifar10_on_disk
from hpml.conf.workload.train import Dataset as DatasetKind
from hpml.conf.workload.train import TrainConfig, per_worker_batch
from hpml.conf.workload.train_choices import DataPlacement
from hpml.conf.workload.train_data import REAL_DATASETS, idx_dataset
from hpml.workloads.common.cifar10 import local_cifar10
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.idx_images import FirstSamples, local_idx, normalization, padding_transform
from hpml.workloads.common.random_inputs import random_images, random_labels
from hpml.workloads.train.augment import Cutout
from hpml.workloads.train.copies import collate_of, with_copies
from hpml.workloads.train.image_files import load_image
from hpml.workloads.train.model import memory_format


def resolve_dataset(cfg: TrainConfig) -> Tuple[DatasetKind, Optional[str]]:
    """The data set this run really uses, and a note when it is not the one a reader would assume."""
    if cfg.dataset == DatasetKind.auto and not cifar10_on_disk(cfg.data_root):
        return DatasetKind.synthetic, (f"workload.dataset=auto found no CIFAR-10 under data_root={cfg.data_root!r}: "
                                       f"synthetic data of the same shape (3x{cfg.image_size}x{cfg.image_size}, "
                                       f"{cfg.num_classes} classes, {cfg.synthetic_samples} samples) was used; "
                                       "times are comparable, losses and accuracies are not")
    kind = DatasetKind.cifar10 if cfg.dataset == DatasetKind.auto else cfg.dataset
    if cfg.max_samples:
        return kind, (f"workload.max_samples={cfg.max_samples}: the first {cfg.max_samples} samples of each split "
                      "only (a slice, not the data set's accuracy)")
    return kind, None


class DeviceBatches:
    """`steps` batches per epoch, cycled from a small pool made once on `device` (random images, random
    labels). Iterating yields (images, labels) already on the device, so the loop's data and copy
    phases are near zero: what is timed is the model."""

    POOL = 2

    def __init__(self, steps: int, batch: int, num_classes: int, image_size: int, device: torch.device,
                 seed: int, memory_format: torch.memory_format = torch.contiguous_format):
        gen = torch.Generator().manual_seed(seed)
        self.steps = steps
        self.pool: List[Tuple[torch.Tensor, torch.Tensor]] = []
        for _ in range(min(steps, self.POOL)):
            images = random_images(batch, image_size, generator=gen)
            labels = random_labels(batch, num_classes, generator=gen)
            self.pool.append((images.to(device).contiguous(memory_format=memory_format), labels.to(device)))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        return (self.pool[i % len(self.pool)] for i in range(self.steps))


class SyntheticImages(Dataset):
    """`size` labelled random images. A pool of 256 distinct images is cycled so that building an item
    costs an index, not a random-number draw: the loader stays out of the measurement."""

    POOL = 256

    def __init__(self, size: int, num_classes: int, image_size: int, seed: int):
        gen = torch.Generator().manual_seed(seed)
        pool = min(size, self.POOL)
        self.images = random_images(pool, image_size, generator=gen)
        self.labels = random_labels(size, num_classes, generator=gen)
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        return self.images[index % len(self.images)], self.labels[index]


def build_dataset(cfg: TrainConfig, seed: int, kind: Optional[DatasetKind] = None) -> Dataset:
    """The data set of `kind` (default: the configured one; pass resolve_dataset's for dataset=auto), its first
    workload.max_samples samples where that is set."""
    kind = kind or cfg.dataset
    if kind in (DatasetKind.synthetic, DatasetKind.synthetic_device):
        return SyntheticImages(cfg.synthetic_samples, cfg.num_classes, cfg.image_size, seed)
    dataset = _real_dataset(cfg, kind)
    return FirstSamples(dataset, cfg.max_samples) if cfg.max_samples else dataset


def _real_dataset(cfg: TrainConfig, kind: DatasetKind) -> Dataset:
    import torchvision.transforms as T  # only the real data sets need torchvision's transforms

    normalize = T.Normalize(*normalization(idx_dataset(kind)))
    cutout = [Cutout(cfg.cutout_holes, cfg.cutout_size)] if cfg.cutout_holes else []  # after Normalize, as DeVries'
    idx = idx_dataset(kind)
    if idx:  # 1 x 28 x 28 as they are, zero-padded where the model was designed for 32 x 32; a flip where it fits
        augment = [T.RandomCrop(cfg.model_side, padding=cfg.crop_padding),
                   *([T.RandomHorizontalFlip()] if cfg.flip else [])] if cfg.augment else []
        transform = T.Compose([*padding_transform(cfg.fit_padding), *augment, T.ToTensor(), normalize, *cutout])
        return local_idx(cfg.data_root, idx, transform)
    if kind == DatasetKind.cifar10:
        # augment=false: no flip (it mirrors digits) and no crop, e.g. the digits written as CIFAR-10
        augment = [T.RandomCrop(32, padding=cfg.crop_padding), T.RandomHorizontalFlip()] if cfg.augment else []
        return local_cifar10(cfg.data_root, T.Compose([*augment, T.ToTensor(), normalize, *cutout]))
    from torchvision.datasets import ImageFolder

    root = Path(cfg.data_root) / "train"
    if not root.is_dir():
        raise FileNotFoundError(f"workload.data_root={cfg.data_root!r} has no train/ folder of class "
                                "sub-folders (torchvision ImageFolder layout)")
    augment = [T.RandomResizedCrop(cfg.image_size), T.RandomHorizontalFlip()] if cfg.augment else \
        [T.Resize(cfg.image_size), T.CenterCrop(cfg.image_size)]
    transform = T.Compose([*augment, *padding_transform(cfg.fit_padding), T.ToTensor(), normalize, *cutout])
    return ImageFolder(str(root), transform=transform, loader=load_image)  # one line naming a file that fails


def placement_used(cfg: TrainConfig, kind: DatasetKind) -> DataPlacement:
    """The data path that runs: device only for a real data set (dataset=auto that found no CIFAR-10 is synthetic
    data, made on the host; dataset=synthetic_device is the synthetic data made on the device)."""
    return DataPlacement.device if cfg.data_placement == DataPlacement.device and kind in REAL_DATASETS \
        else DataPlacement.host


def build_loader(cfg: TrainConfig, seed: int, ctx: DistContext, kind: DatasetKind):
    """The epoch's batches for this rank: a DataLoader over a DistributedSampler, or DeviceBatches."""
    batch = per_worker_batch(cfg, ctx.world_size)
    if kind == DatasetKind.synthetic_device:
        steps = cfg.synthetic_samples // (batch * ctx.world_size)
        loader: Any = DeviceBatches(steps, batch, cfg.num_classes, cfg.image_size, ctx.device,
                                    seed=seed + ctx.rank, memory_format=memory_format(cfg))
        size = cfg.synthetic_samples
    else:
        dataset = with_copies(build_dataset(cfg, seed=seed, kind=kind), cfg.batch_augmentation)  # copies.py
        sampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True,
                                     seed=seed, drop_last=True)
        loader = DataLoader(dataset, batch_size=batch, sampler=sampler, num_workers=cfg.loader_workers,
                            pin_memory=cfg.pin_memory and ctx.device.type == "cuda", drop_last=True,
                            persistent_workers=cfg.loader_workers > 0, collate_fn=collate_of(dataset))
        size = len(dataset)
    if len(loader) == 0:
        raise ValueError(f"no full batch per worker: {size} samples over {ctx.world_size} workers "
                         f"with batch {batch}; raise workload.synthetic_samples or lower workload.batch_size")
    return loader


def set_epoch(loader, epoch: int) -> None:
    """The host DataLoader's sampler and the device path's (workloads/train/device_data.py) alike."""
    if isinstance(getattr(loader, "sampler", None), DistributedSampler):
        loader.sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
