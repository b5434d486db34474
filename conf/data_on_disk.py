"""What a data set on disk holds, read before any point runs: its training samples and its classes.

The launcher's checks use it to refuse a batch the training split cannot fill, or a model head whose classes differ
from the data's, in one line at compose time instead of a failed point. Read once per folder and launch (a sweep
composes every point; CIFAR-10's five batches are 150 MB to unpickle), keyed by the files' modification times so a
folder rewritten between two launches in one process is read again. None where the data is not there (a SLURM
login node may not see the compute nodes' data: the preflight says so separately).
"""

from __future__ import annotations

import functools
import os
import pickle
from pathlib import Path
from typing import NamedTuple, Optional, Tuple

CIFAR10_TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
# torchvision.datasets.folder.IMG_EXTENSIONS (not imported: this module must not load torchvision at compose time)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


class OnDisk(NamedTuple):
    train_samples: int
    classes: int


def _stamp(paths) -> Tuple[float, ...]:
    return tuple(os.stat(p).st_mtime_ns for p in paths)


def cifar10_contents(root: Optional[str]) -> Optional[OnDisk]:
    """Training samples (the labels of data_batch_1..5) and classes (batches.meta's label_names); None when a file
    is missing or unreadable."""
    if not root:
        return None
    folder = Path(root) / "cifar-10-batches-py"
    files = [folder / name for name in CIFAR10_TRAIN_BATCHES + ["batches.meta"]]
    try:
        return _read_cifar10(str(folder), _stamp(files))
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, AttributeError):
        return None


def unreadable_cifar10(key: str, root: str) -> Optional[str]:
    """One line when root holds CIFAR-10's files (the caller checked they are there) but they cannot be read as
    CIFAR-10 (no read permission, truncated or not pickles), else None: the worker would fail on them after start-up."""
    if cifar10_contents(root) is not None:
        return None
    return (f"{key}={root}: the files under cifar-10-batches-py/ cannot be read as CIFAR-10's python batches (no read "
            "permission, or damaged); rewrite them, e.g. `hpml data digits --root DIR --force`")


@functools.lru_cache(maxsize=16)
def _read_cifar10(folder: str, stamp: Tuple[float, ...]) -> OnDisk:
    samples = 0
    for name in CIFAR10_TRAIN_BATCHES:
        with open(Path(folder) / name, "rb") as f:
            samples += len(pickle.load(f, encoding="latin1")["labels"])
    with open(Path(folder) / "batches.meta", "rb") as f:
        classes = len(pickle.load(f, encoding="latin1")["label_names"])
    return OnDisk(samples, classes)


def image_folder_contents(root: Optional[str]) -> Optional[OnDisk]:
    """Images under train/<class>/ (ImageFolder's extensions, any depth) and the class folders; None without
    train/."""
    if not root or not (Path(root) / "train").is_dir():
        return None
    train = Path(root) / "train"
    try:
        return _read_image_folder(str(train), os.stat(train).st_mtime_ns)
    except OSError:
        return None


@functools.lru_cache(maxsize=16)
def _read_image_folder(train: str, stamp: int) -> OnDisk:
    classes = [entry.path for entry in os.scandir(train) if entry.is_dir()]
    samples = sum(1 for folder in classes for _, _, files in os.walk(folder)
                  for name in files if name.lower().endswith(IMAGE_EXTENSIONS))
    return OnDisk(samples, len(classes))
