"""The digits made large enough to measure a data loader: the training split repeated to N images, and both splits
as an image folder of JPEGs (`hpml data digits --train-size N --jpeg-folder DIR`).

Why: the data-loader study (docs/studies/dataloader-workers.md) times the iteration over a training set of at least
50,000 images (CIFAR-10's size), decoding real files. scikit-learn's digits are 1,438 training images; repeating
them gives a training split of any size whose files are read exactly as real ones are. The repeats are copies of the
same images: such a split measures the loader, not learning (a model would see every image ~35 times an epoch).

Repetition (`repeated`): position j of the enlarged split is image j mod n of the training split as written by
default (n = 1,438), so the first n are the default split in its order, and each image appears floor(N / n) or
floor(N / n) + 1 times; copy k (k = j // n) of digit i is named digit_IIII_copyK.png in the batches' filenames
(copy 0 keeps the default name). The CIFAR-10 batches are cut as by default (5 near-equal batches, np.array_split):
50,000 gives 5 x 10,000, as CIFAR-10.

Image folder (`write_jpeg_folder`), torchvision's ImageFolder layout:

    DIR/train/<digit>/digit_IIII[_copyK].jpg   the training split as written to the CIFAR batches (enlarged or not)
    DIR/val/<digit>/digit_IIII.jpg             the test split

Each image is the 32x32 plane of the CIFAR batches as RGB (three equal channels, as in the batches), JPEG quality
JPEG_QUALITY with PIL's default 4:2:0 chroma subsampling. JPEG is lossy: a pixel read back differs from the batch's by
a few levels (tests/test_dataprep_loader_data.py bounds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Tuple

import numpy as np

from hpml.dataprep.digits_cifar import CLASS_NAMES, DataError, Digits, Split, image_name

JPEG_QUALITY = 90  # about what photo data sets are stored at (ImageNet's JPEGs mostly 90-96); PIL's default is 75
JPEG_SPLITS = ("train", "val")  # ImageFolder roots: the training split, and the test split held out
# The largest training split written: 20 times CIFAR-10's 50,000, far past what the data-loader study times; it is
# 3 GB of CIFAR batches (32x32x3 bytes an image) and as many JPEG files. A larger N was a numpy
# ArrayMemoryError traceback (a trillion positions) before anything was written.
MAX_TRAIN_SIZE = 1_000_000


def repeated(train: np.ndarray, size: int) -> Tuple[np.ndarray, np.ndarray]:
    """(positions into Digits, copy number of each) of a training split of `size` images: position j is
    train[j mod n], copy j // n."""
    if not len(train) <= size <= MAX_TRAIN_SIZE:
        raise DataError(f"--train-size must be at least {len(train)} (the training split's size: it grows by "
                        f"repeating the images, never by dropping some) and at most {MAX_TRAIN_SIZE} (20 times "
                        f"CIFAR-10's 50,000 images; 3 GB of batches), got {size}")
    index = np.arange(size)
    return train[index % len(train)], index // len(train)


def check_jpeg_target(folder: Path, force: bool) -> None:
    """Refuses, before anything is written, a folder that holds files (unless force) or is a file."""
    if folder.exists() and not folder.is_dir():
        raise DataError(f"{folder} exists and is not a directory")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise DataError(f"{folder} is not empty; choose another directory or pass --force to overwrite the "
                        "files this command writes")


def _clear_class_folders(folder: Path) -> None:
    """An earlier run's JPEGs in the class folders are removed (only --force lets the folder hold any), so each
    split is exactly this run's images."""
    for split in JPEG_SPLITS:
        for name in CLASS_NAMES:
            class_dir = folder / split / name
            class_dir.mkdir(parents=True, exist_ok=True)
            for stale in class_dir.glob("*.jpg"):
                stale.unlink()


def write_jpeg_folder(digits: Digits, split: Split, train_positions: np.ndarray, train_copies: np.ndarray,
                      folder: Path) -> Tuple[int, int]:
    """DIR/train/<digit>/*.jpg (the given training positions and copy numbers) and DIR/val/<digit>/*.jpg (the test
    split); returns (training images, validation images)."""
    from PIL import Image

    _clear_class_folders(folder)
    entries = [("train", p, c) for p, c in zip(train_positions, train_copies)] + [("val", p, 0) for p in split.test]
    for split_name, position, copy in entries:
        plane = digits.planes[position]
        label = CLASS_NAMES[digits.labels[position]]
        path = folder / split_name / label / image_name(int(digits.index[position]), int(copy), ".jpg")
        Image.fromarray(np.stack([plane, plane, plane], axis=-1)).save(path, quality=JPEG_QUALITY)
    return len(train_positions), len(split.test)
