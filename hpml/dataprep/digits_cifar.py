"""scikit-learn's digits as a CIFAR-10-shaped data set, and an out-of-distribution folder of the same digits.

Why: the time-to-accuracy study (docs/studies/time-to-accuracy.md) must run on real data where nothing can be
downloaded (CI, compute nodes). scikit-learn ships 1,797 handwritten digits (8x8, intensities 0-16, 10
classes) inside the package. Written in CIFAR-10's python format, they go through exactly the reader that
real CIFAR-10 goes through (workloads.train.data.local_cifar10, torchvision's CIFAR10), at 32x32 RGB.

The files, under ROOT/cifar-10-batches-py/ (what torchvision.datasets.CIFAR10 reads):

    data_batch_1..5  the training split, shuffled, cut into 5 near-equal batches (np.array_split)
    test_batch       the test split, shuffled
    batches.meta     label_names "0".."9" (class i is digit i), num_cases_per_batch, num_vis

Each batch is a pickled dict as in the original archive read with pickle.load(f, encoding="latin1"), which is
how torchvision reads it: "data" a uint8 array N x 3072 (row-major 32x32 R plane, then G, then B), "labels"
a list of ints, "batch_label", "filenames" ("digit_0123.png": the index in load_digits()). The keys are
str: torchvision looks up entry["data"], so bytes keys (b"data", what the original Python 2 pickles give
under encoding="bytes") would not be found.

Image: each 8x8 digit's intensities x (0-16) become x * 255 / 16, are upscaled to 32x32 by PIL's bilinear
resize (on float values, then rounded and clipped to 0-255), and the same plane is written as R, G and B.

Split (fixed by the seed): per class, the class's indices in a random order (numpy.random.default_rng(seed));
the first round(0.2 x class size) are test, the rest train: 359 test and 1,438 train images, every class
80/20 to within one image. The two splits are then shuffled (same generator).

Out-of-distribution folder (ROOT_OOD/<digit>/digit_NNNN.png): 5 test-split digits per class (the first 5 of
the class in test_batch's order), 50 images, drawn differently from anything trained on: the 32x32 image
rotated 25 degrees counter-clockwise about its centre (bilinear, black fill), then its strokes thickened by a
3x3 maximum filter (PIL ImageFilter.MaxFilter(3): each pixel takes its brightest neighbour). Written as
8-bit grayscale PNG, 32x32; `hpml evaluate` converts to RGB and resizes.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

BATCH_FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = 5
TEST_FRACTION = 0.2
IMAGE_SIDE = 32
CLASS_NAMES = [str(digit) for digit in range(10)]
OOD_PER_CLASS = 5
OOD_ROTATION_DEG = 25.0  # counter-clockwise (PIL's positive angle)
OOD_MAX_FILTER = 3  # side of the square maximum filter that thickens the strokes
DIGITS_MAX = 16.0  # load_digits' intensity range is 0..16


class DataError(Exception):
    """A target that would be overwritten, or an unusable argument; the command prints it as one line."""


@dataclass
class Digits:
    """The 1,797 digits as 32x32 uint8 planes (N x 32 x 32), their labels, their indices in load_digits()."""

    planes: np.ndarray
    labels: np.ndarray
    index: np.ndarray


@dataclass
class Split:
    train: np.ndarray  # positions into Digits, in the order written
    test: np.ndarray


def upscale(image_8x8: np.ndarray) -> np.ndarray:
    """One 8x8 digit (0-16) -> a 32x32 uint8 plane (0-255): bilinear on the float values, rounded."""
    from PIL import Image

    scaled = Image.fromarray(np.asarray(image_8x8, dtype=np.float32) * np.float32(255.0 / DIGITS_MAX))  # mode F
    big = np.asarray(scaled.resize((IMAGE_SIDE, IMAGE_SIDE), Image.Resampling.BILINEAR), dtype=np.float32)
    return np.clip(np.rint(big), 0, 255).astype(np.uint8)


def load_digits_32() -> Digits:
    from sklearn.datasets import load_digits  # only this command needs scikit-learn

    digits = load_digits()
    planes = np.stack([upscale(image) for image in digits.images])
    return Digits(planes=planes, labels=np.asarray(digits.target, dtype=np.int64),
                  index=np.arange(len(digits.target)))


def stratified_split(labels: Sequence[int], seed: int, test_fraction: float = TEST_FRACTION) -> Split:
    """Per class: a random order, the first round(test_fraction x count) to test; both splits shuffled."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    train: List[int] = []
    test: List[int] = []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cut = int(round(test_fraction * len(members)))
        test += members[:cut].tolist()
        train += members[cut:].tolist()
    return Split(train=rng.permutation(np.array(train)), test=rng.permutation(np.array(test)))


def cifar_rows(planes: np.ndarray) -> np.ndarray:
    """N x 32 x 32 gray planes -> N x 3072 uint8 rows: the plane as R, then as G, then as B."""
    flat = planes.reshape(len(planes), IMAGE_SIDE * IMAGE_SIDE)
    return np.ascontiguousarray(np.concatenate([flat, flat, flat], axis=1), dtype=np.uint8)


def image_name(digit_index: int, copy: int, suffix: str) -> str:
    """digit_0123.png for the first copy (the default split's names), digit_0123_copy2.png for later ones."""
    return f"digit_{digit_index:04d}" + (f"_copy{copy}" if copy else "") + suffix


def _batch(digits: Digits, positions: np.ndarray, label: str, copies: Optional[np.ndarray] = None) -> dict:
    """copies: each entry's copy number in an enlarged split (dataprep.digits_loader_data); None: all first copies."""
    copies = np.zeros(len(positions), dtype=np.int64) if copies is None else copies
    return {"batch_label": label, "labels": [int(v) for v in digits.labels[positions]],
            "data": cifar_rows(digits.planes[positions]),
            "filenames": [image_name(int(i), int(k), ".png") for i, k in zip(digits.index[positions], copies)]}


def _dump(path: Path, obj: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        # protocol 4, not the original's 2: protocol 2 stores the uint8 bytes as latin-1 text, 30 % larger
        pickle.dump(obj, f, protocol=4)
    tmp.replace(path)


def _non_empty(folder: Path) -> bool:
    return folder.exists() and (not folder.is_dir() or any(folder.iterdir()))


def check_targets(root: Path, ood: Path | None, force: bool) -> None:
    """Refuses, before writing anything, a target folder that already holds something (unless force)."""
    for folder in [root, root / BATCH_FOLDER] + ([ood] if ood is not None else []):
        if folder.exists() and not folder.is_dir():
            raise DataError(f"{folder} exists and is not a directory")
        if folder != root and _non_empty(folder) and not force:  # the root may hold other data sets
            raise DataError(f"{folder} is not empty; choose another directory or pass --force to overwrite "
                            "the files this command writes")


def write_cifar(digits: Digits, split: Split, root: Path,
                train: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> Tuple[Path, List[int]]:
    """The five training batches, the test batch and batches.meta; returns the folder and the batch sizes.
    train: (positions, copy numbers) of an enlarged training split (dataprep.digits_loader_data.repeated);
    None: the split's training images once."""
    folder = root / BATCH_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    positions, copies = train if train is not None else (split.train, np.zeros(len(split.train), dtype=np.int64))
    parts, part_copies = np.array_split(positions, TRAIN_BATCHES), np.array_split(copies, TRAIN_BATCHES)
    for i, (part, part_copy) in enumerate(zip(parts, part_copies), start=1):
        _dump(folder / f"data_batch_{i}", _batch(digits, part, f"training batch {i} of {TRAIN_BATCHES}", part_copy))
    _dump(folder / "test_batch", _batch(digits, split.test, "testing batch 1 of 1"))
    _dump(folder / "batches.meta", {"label_names": list(CLASS_NAMES), "num_vis": 3 * IMAGE_SIDE * IMAGE_SIDE,
                                    "num_cases_per_batch": int(len(parts[0]))})
    return folder, [len(part) for part in parts]


def draw_differently(plane: np.ndarray) -> np.ndarray:
    """A 32x32 digit rotated OOD_ROTATION_DEG counter-clockwise, then thickened by the maximum filter."""
    from PIL import Image, ImageFilter

    image = Image.fromarray(np.asarray(plane, dtype=np.uint8))  # 2-D uint8: mode L
    rotated = image.rotate(OOD_ROTATION_DEG, resample=Image.Resampling.BILINEAR, fillcolor=0)
    return np.asarray(rotated.filter(ImageFilter.MaxFilter(OOD_MAX_FILTER)))


def ood_positions(digits: Digits, split: Split) -> List[int]:
    """The first OOD_PER_CLASS test images of each class, in test_batch's order."""
    chosen: List[int] = []
    for label in range(len(CLASS_NAMES)):
        chosen += [int(p) for p in split.test if digits.labels[p] == label][:OOD_PER_CLASS]
    return chosen


def write_ood(digits: Digits, split: Split, folder: Path) -> int:
    """ROOT_OOD/<digit>/digit_NNNN.png for the chosen test digits; an earlier run's PNGs in those class
    folders are removed first (only with --force can the folder hold any), so the folder is exactly this set."""
    from PIL import Image

    positions = ood_positions(digits, split)
    for name in CLASS_NAMES:
        class_dir = folder / name
        class_dir.mkdir(parents=True, exist_ok=True)
        for stale in class_dir.glob("*.png"):
            stale.unlink()
    for p in positions:
        path = folder / CLASS_NAMES[digits.labels[p]] / f"digit_{int(digits.index[p]):04d}.png"
        Image.fromarray(draw_differently(digits.planes[p])).save(path)
    return len(positions)
