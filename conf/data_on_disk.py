"""What a data set on disk holds, read before any point runs: its training samples and its classes.

The launcher's checks use it to refuse a batch the training split cannot fill, or a model head whose classes differ
from the data's, in one line at compose time instead of a failed point. Read once per folder and launch (a sweep
composes every point; CIFAR-10's five batches are 150 MB to unpickle), keyed by the files' modification times so a
folder rewritten between two launches in one process is read again. None where the data is not there (a SLURM
login node may not see the compute nodes' data: the preflight says so separately).
Also whether the files can be read at all: CIFAR-10's batches unpickled, an image folder's files identified by PIL
from their headers (unreadable_image_folder; its cost and sampling policy are stated beside it).
"""

from __future__ import annotations

import functools
import os
import pickle
import random
import stat
import warnings
from pathlib import Path
from typing import List, NamedTuple, Optional, Tuple

CIFAR10_TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
# torchvision's CIFAR-10 python files under <data_root>/cifar-10-batches-py/ (the preflight and the worker's
# reader both look for exactly these)
CIFAR10_FILES = CIFAR10_TRAIN_BATCHES + ["test_batch", "batches.meta"]
# torchvision.datasets.folder.IMG_EXTENSIONS (not imported: this module must not load torchvision at compose time)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


class OnDisk(NamedTuple):
    train_samples: int
    classes: int


def _stamp(paths) -> Tuple[float, ...]:
    return tuple(os.stat(p).st_mtime_ns for p in paths)


def cifar10_on_disk(root: Optional[str]) -> bool:
    """Whether root holds torchvision's CIFAR-10 python files (root/cifar-10-batches-py/...)."""
    return bool(root) and not missing_cifar10_files(root)


def missing_cifar10_files(root: str) -> List[str]:
    folder = Path(root) / "cifar-10-batches-py"
    return [name for name in CIFAR10_FILES if not (folder / name).is_file()]


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


def classes_problem(num_classes: int, root: str, found: Optional[OnDisk]) -> Optional[str]:
    """One line when the data set at root (its contents `found`, None when unknown) has other classes than the
    model's head, else None."""
    if found is None or found.classes == num_classes:
        return None
    return (f"workload.num_classes={num_classes}: the data set at {root} has {found.classes} classes; set "
            f"workload.num_classes={found.classes}")


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


# --- image folders: every file ImageFolder would read, checked before launch -------------------------------------
# A file named like an image that is no image (a truncated download, a text file, an empty file, a broken link)
# used to fail in a DataLoader worker minutes into the point, after the sweep folder was written. The preflight
# opens each file's header with PIL (Image.open reads the header, never the pixels): measured 0.04 ms a file on
# 25,000 cached 32x32 JPEGs (docs/decisions.md has the command). Listing every file is needed anyway (the sample
# counts above); headers are read for all files of a split up to HEADER_CHECK_LIMIT (0.8 s warm), above it for
# a seeded sample of that many: ImageNet's 1.28 M files would take a minute warm and far longer on a cold network
# file system, at every launch. A bad file outside the sample, a pixel stream cut after an intact header, or a file
# changed after the launch ends the point in its worker with one line naming the file
# (workloads/train/image_files.py).
HEADER_CHECK_LIMIT = 20_000
HEADER_SAMPLE_SEED = 0  # the same sample at every launch of the same listing
SHOWN_BAD_FILES = 2


def unreadable_image_folder(key: str, root: Optional[str], held_out: bool = False) -> Optional[str]:
    """One line when root's train/ (and val/ with held_out) cannot be read as torchvision's ImageFolder will read
    it: no class folder, a class folder with no image file (ImageFolder refuses it), or image files that are not
    regular, non-empty, readable files whose header PIL identifies; None when all is well. A split that is not
    there is the caller's to report (None here)."""
    for split in ("train", "val") if held_out else ("train",):
        folder = Path(root or "") / split
        if not root or not folder.is_dir():
            continue
        problem = _split_problem(str(folder), _folder_stamp(folder))
        if problem:
            return f"{key}={root}: {problem}"
    return None


def _folder_stamp(folder: Path) -> Tuple[int, ...]:
    """The modification times of the split folder and of its class folders: a file added, removed or renamed in
    either is read again (a file rewritten in place is not: the worker's check catches that one)."""
    with os.scandir(folder) as entries:
        classes = sorted(entry.path for entry in entries if _is_dir(entry))
    return (os.stat(folder).st_mtime_ns,) + _stamp(classes)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # links followed, as ImageFolder does
    except OSError:
        return False


def image_files(class_folder: str) -> List[str]:
    """The files ImageFolder takes from one class folder: any depth, links followed, matched by extension."""
    return [os.path.join(folder, name) for folder, _, names in sorted(os.walk(class_folder, followlinks=True))
            for name in sorted(names) if name.lower().endswith(IMAGE_EXTENSIONS)]


def image_header_problem(path: str) -> Optional[str]:
    """Why the file at `path` cannot be opened as an image (its header only; the pixels are not decoded), or None."""
    from PIL import Image, UnidentifiedImageError

    try:
        info = os.stat(path)
    except OSError as error:
        return "a broken link" if os.path.islink(path) else f"cannot be read ({error.strerror or error})"
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read, a device never end
        return "not a regular file"
    if info.st_size == 0:
        return "zero bytes"
    try:
        f = open(path, "rb")
    except OSError as error:  # no read permission (as root, none is refused)
        return f"cannot be read ({error.strerror or error})"
    try:
        with f, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DecompressionBombWarning: the worker decodes it all the same
            Image.open(f)
    except UnidentifiedImageError:
        return "not an image PIL can identify"
    except Image.DecompressionBombError:  # so does the worker's Image.open
        return "more pixels than PIL opens (its decompression-bomb limit)"
    except Exception as error:  # noqa: BLE001 - PIL's plugins raise many types for a damaged header
        text = str(error).strip()
        return f"a damaged or cut header ({type(error).__name__}{': ' + text.splitlines()[0] if text else ''})"
    return None


@functools.lru_cache(maxsize=16)
def _split_problem(folder: str, stamp: Tuple[int, ...]) -> Optional[str]:
    """What is wrong with one split (train/ or val/), keyed by its folders' modification times (_folder_stamp)."""
    name = os.path.basename(folder)
    with os.scandir(folder) as entries:
        classes = sorted(entry.path for entry in entries if _is_dir(entry))
    if not classes:
        return f"{name}/ holds no class folders (ImageFolder reads {name}/<class>/<image>)"
    files = {class_folder: image_files(class_folder) for class_folder in classes}
    empty = [class_folder for class_folder, found in files.items() if not found]
    if empty:
        which = f"{empty[0]} holds" if len(empty) == 1 else f"{len(empty)} class folders hold ({_first(empty)})"
        return (f"{which} no image file (ImageFolder takes {' '.join(IMAGE_EXTENSIONS)} and refuses an empty class); "
                "add images or remove the folder")
    every = [path for found in files.values() for path in found]
    checked = every if len(every) <= HEADER_CHECK_LIMIT else \
        sorted(random.Random(HEADER_SAMPLE_SEED).sample(every, HEADER_CHECK_LIMIT))
    bad = [f"{path}: {problem}" for path in checked for problem in [image_header_problem(path)] if problem]
    if not bad:
        return None
    of = f"the {len(every)}" if checked is every else f"a sample of {len(checked)} of the {len(every)}"
    return (f"{len(bad)} of {of} image files under {name}/ cannot be read as images ({_first(bad, '; ')}); "
            "replace or remove them")


def _first(items: List[str], separator: str = ", ") -> str:
    """The first SHOWN_BAD_FILES items, and how many more."""
    more = len(items) - SHOWN_BAD_FILES
    return separator.join(items[:SHOWN_BAD_FILES]) + (f"{separator}{more} more" if more > 0 else "")
