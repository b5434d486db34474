"""The `train` workload's data set (conf/workload/train.py): which one, what it holds on disk, and whether the
configured one is there and large enough for the point's batch. Never downloaded: read from workload.data_root."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional, Protocol

from hpml.conf.data_on_disk import (
    CIFAR10_TRAIN_SAMPLES,
    OnDisk,
    cifar10_contents,
    classes_problem,
    image_folder_contents,
    missing_cifar10_files,
    unreadable_cifar10,
    unreadable_image_folder,
)
from hpml.conf.validation import require
from hpml.contract.idx_data import IDX_DATASETS, IDX_TRAIN_SAMPLES, IdxDataSet, idx_problem


class Dataset(str, Enum):
    synthetic = "synthetic"  # random images of the configured shape, generated per worker
    cifar10 = "cifar10"  # torchvision.datasets.CIFAR10 read from data_root (never downloaded)
    image_folder = "image_folder"  # torchvision.datasets.ImageFolder at data_root/train
    # cifar10 when data_root holds torchvision's CIFAR-10 files, else synthetic (the result says which)
    auto = "auto"
    # random batches made once on the training device: no loader, no host-to-device copy (a compute
    # benchmark, like Horovod's synthetic benchmark)
    synthetic_device = "synthetic_device"
    # torchvision.datasets.FashionMNIST / MNIST read from data_root/FashionMNIST/raw/ (MNIST/raw/), laid out by
    # `hpml data fashion-mnist|mnist`: 1 channel, 28x28 (contract/idx_data.py)
    fashion_mnist = "fashion_mnist"
    mnist = "mnist"


# read from data_root, with a held-out split
REAL_DATASETS = (Dataset.cifar10, Dataset.image_folder, Dataset.fashion_mnist, Dataset.mnist)
RGB_CHANNELS = 3  # CIFAR-10, image folders (converted to RGB) and the synthetic images


def idx_dataset(dataset: Dataset) -> Optional[IdxDataSet]:
    """Fashion-MNIST's or MNIST's description (contract/idx_data.py), None for the other data sets."""
    return IDX_DATASETS.get(dataset.value)


def input_channels(dataset: Dataset) -> int:
    """The channels of the data set's images, which the model's first layer takes as they are."""
    return 1 if idx_dataset(dataset) else RGB_CHANNELS


def flips(dataset: Dataset) -> bool:
    """Whether a left-right flip keeps an image in its class: not for digits (MNIST); CIFAR-10's and an image
    folder's photos, and Fashion-MNIST's clothes, yes (the digits written as CIFAR-10 turn augment off instead)."""
    data = idx_dataset(dataset)
    return data.flip if data else True


class TrainData(Protocol):
    """What of a TrainConfig these functions read (conf/workload/train.py imports this module, not the reverse)."""
    dataset: Dataset
    data_root: str
    synthetic_samples: int
    max_samples: Optional[int]
    num_classes: int
    eval_every: int
    batch_size: int


def on_disk(cfg: TrainData) -> Optional[OnDisk]:
    """What the configured real data set holds on disk (cifar10, or auto that found CIFAR-10; image_folder); None
    for synthetic data or data that is not there (the preflight says so)."""
    if cfg.dataset in (Dataset.cifar10, Dataset.auto):
        return cifar10_contents(cfg.data_root)
    if cfg.dataset == Dataset.image_folder:
        return image_folder_contents(cfg.data_root)
    data = idx_dataset(cfg.dataset)
    if data and idx_problem(cfg.data_root, data) is None:
        return OnDisk(IDX_TRAIN_SAMPLES, len(data.classes))
    return None


def epoch_samples(cfg: TrainData) -> Optional[int]:
    """Samples in one epoch: the data set's on disk where it is there, else what the config tells (CIFAR-10's
    50,000, the synthetic size; None for an image folder not there)."""
    if cfg.dataset in (Dataset.synthetic, Dataset.synthetic_device):
        return cfg.synthetic_samples
    found = on_disk(cfg)
    if found is not None:
        return min(found.train_samples, cfg.max_samples or found.train_samples)
    if cfg.dataset == Dataset.cifar10:
        return CIFAR10_TRAIN_SAMPLES
    if idx_dataset(cfg.dataset):
        return min(IDX_TRAIN_SAMPLES, cfg.max_samples or IDX_TRAIN_SAMPLES)
    return cfg.synthetic_samples if cfg.dataset == Dataset.auto else None


def check_batch_fits_data(cfg: TrainData, world: int, per_worker: int) -> None:
    """Every worker (`world` of them, `per_worker` distinct samples a step each) needs one full batch per epoch (the
    loader drops the last partial one), else the point would start and fail with no step run."""
    samples = epoch_samples(cfg)
    if samples is None:
        return
    synthetic = cfg.dataset in (Dataset.synthetic, Dataset.synthetic_device) or on_disk(cfg) is None and \
        cfg.dataset == Dataset.auto
    remedy = "raise workload.synthetic_samples" if synthetic else f"use a larger data set than {cfg.data_root}"
    require(per_worker * world <= samples, "workload.batch_size",
            f"a batch that fits the data: {world} worker(s) x {per_worker} samples per step is more than the "
            f"{samples} training samples of an epoch (workload.dataset={cfg.dataset.value}); lower "
            f"workload.batch_size or {remedy}", cfg.batch_size)


def data_problem(cfg: TrainData) -> Optional[str]:
    """Why the configured data set is not on disk in torchvision's layout (it is never downloaded)."""
    if cfg.dataset == Dataset.cifar10:
        absent = missing_cifar10_files(cfg.data_root)
        if absent:
            folder = Path(cfg.data_root) / "cifar-10-batches-py"
            return (f"workload.data_root={cfg.data_root}: no CIFAR-10 there ({folder} lacks "
                    f"{', '.join(absent[:3])}{'...' if len(absent) > 3 else ''}); put torchvision's "
                    "cifar-10-python files there or use workload.dataset=synthetic")
        damaged = unreadable_cifar10("workload.data_root", cfg.data_root)  # no read permission, not pickles
        if damaged:
            return damaged
    data = idx_dataset(cfg.dataset)
    if data:
        problem = idx_problem(cfg.data_root, data)
        if problem:
            return f"workload.data_root={cfg.data_root}: {problem}"
    if cfg.dataset == Dataset.image_folder and not (Path(cfg.data_root) / "train").is_dir():
        return (f"workload.data_root={cfg.data_root}: no train/ folder of class sub-folders "
                "(torchvision ImageFolder layout)")
    if cfg.dataset == Dataset.image_folder and cfg.eval_every and not (Path(cfg.data_root) / "val").is_dir():
        return (f"workload.data_root={cfg.data_root}: no val/ folder of class sub-folders to evaluate on "
                "(workload.eval_every > 0)")
    mismatch = classes_problem(cfg.num_classes, cfg.data_root, on_disk(cfg))
    if mismatch:
        return mismatch
    if cfg.dataset == Dataset.image_folder:  # every image file's header (a sample above 20,000 a split)
        return unreadable_image_folder("workload.data_root", cfg.data_root, held_out=cfg.eval_every > 0)
    return None
