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
from typing import Any, List, NamedTuple, Optional, Tuple

from hpml.contract.files import NotReadable, one_line, open_regular, regular_file_problem

CIFAR10_TRAIN_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]
# torchvision's CIFAR-10 python files under <data_root>/cifar-10-batches-py/ (the preflight and the worker's
# reader both look for exactly these)
CIFAR10_FILES = CIFAR10_TRAIN_BATCHES + ["test_batch", "batches.meta"]
CIFAR10_TRAIN_SAMPLES = 50000  # the training split's size (5 batches of 10,000)
CIFAR10_SIDE = 32  # its images are 32 x 32
# torchvision.datasets.folder.IMG_EXTENSIONS (not imported: this module must not load torchvision at compose time)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


class OnDisk(NamedTuple):
    train_samples: int
    classes: int


def _stamp(paths) -> Tuple[float, ...]:
    return tuple(os.stat(p).st_mtime_ns for p in paths)


CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_IMAGE_VALUES = 3 * 32 * 32  # one row of a batch's "data": 32 x 32 pixels, 3 channels, uint8


class DataFileProblem(Exception):
    """A data file that cannot be read as what it should be; str() names the file and why, in one line."""


def cifar10_on_disk(root: Optional[str]) -> bool:
    """Whether root holds torchvision's CIFAR-10 python files (root/cifar-10-batches-py/...), each a regular file
    (a FIFO there would block whoever reads it)."""
    if not root or missing_cifar10_files(root):
        return False
    folder = Path(root) / CIFAR10_FOLDER
    return all(regular_file_problem(folder / name) is None for name in CIFAR10_FILES)


def irregular_cifar10_file(root: str) -> Optional[str]:
    """'cifar-10-batches-py/<name>: not a regular file (...)' for the first file of the layout that is there but no
    regular file, else None; opens nothing."""
    folder = Path(root) / CIFAR10_FOLDER
    for name in CIFAR10_FILES:
        problem = regular_file_problem(folder / name) if (folder / name).exists() else None
        if problem:
            return f"{CIFAR10_FOLDER}/{name}: {problem}"
    return None


def missing_cifar10_files(root: str) -> List[str]:
    """The files of torchvision's layout that are not there at all (one that is there but no regular file is
    unreadable, not missing: cifar10_problem names it)."""
    folder = Path(root) / CIFAR10_FOLDER
    return [name for name in CIFAR10_FILES if not (folder / name).exists()]


def cifar10_contents(root: Optional[str]) -> Optional[OnDisk]:
    """Training samples (the labels of data_batch_1..5) and classes (batches.meta's label_names); None when a file
    is missing or unreadable."""
    if not root:
        return None
    try:
        return _read_cifar10(*_cifar10_key(root))
    except (OSError, DataFileProblem):
        return None


def cifar10_problem(root: str) -> Optional[str]:
    """Why a file of the CIFAR-10 at root cannot be read as torchvision reads it, naming the file, or None: each
    file a regular file, a pickle of the right shape, a batch's images and labels as many, every label one of
    batches.meta's classes. The held-out test_batch too, which training reads only at its first evaluation."""
    try:
        _read_cifar10(*_cifar10_key(root))
    except DataFileProblem as problem:
        return str(problem)
    except OSError as error:
        return f"{CIFAR10_FOLDER}/: cannot be read ({error.strerror or error})"
    return None


def _cifar10_key(root: str) -> Tuple[str, Tuple[float, ...]]:
    folder = Path(root) / CIFAR10_FOLDER
    return str(folder), _stamp([folder / name for name in CIFAR10_FILES])


def classes_problem(num_classes: int, root: str, found: Optional[OnDisk]) -> Optional[str]:
    """One line when the data set at root (its contents `found`, None when unknown) has other classes than the
    model's head, else None."""
    if found is None or found.classes == num_classes:
        return None
    return (f"workload.num_classes={num_classes}: the data set at {root} has {found.classes} classes; set "
            f"workload.num_classes={found.classes}")


def unreadable_cifar10(key: str, root: str) -> Optional[str]:
    """One line when root holds CIFAR-10's files (the caller checked they are there) but one cannot be read as
    CIFAR-10 (not a regular file, no read permission, truncated, not a pickle, images and labels that disagree),
    naming it, else None: the worker would fail on it after start-up, or block on a FIFO."""
    problem = cifar10_problem(root)
    if problem is None:
        return None
    return f"{key}={root}: {problem}; rewrite it, e.g. `hpml data digits --root DIR --force`"


def _load_pickle(folder: str, name: str) -> Any:
    path = f"{CIFAR10_FOLDER}/{name}"
    try:
        with open_regular(Path(folder) / name) as f:
            return pickle.load(f, encoding="latin1")
    except NotReadable as error:
        raise DataFileProblem(f"{path}: {error}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError,
            MemoryError) as error:
        raise DataFileProblem(f"{path}: not a CIFAR-10 python pickle ({one_line(error)})") from None
    except OSError as error:
        raise DataFileProblem(f"{path}: cannot be read ({one_line(error)})") from None


def _batch_samples(folder: str, name: str, classes: int) -> int:
    """A batch's sample count, after checking what torchvision's reader and the training loop assume of it."""
    path = f"{CIFAR10_FOLDER}/{name}"
    batch = _load_pickle(folder, name)
    if not isinstance(batch, dict) or "data" not in batch or "labels" not in batch:
        raise DataFileProblem(f"{path}: not a CIFAR-10 batch (a mapping with 'data' and 'labels')")
    data, labels = batch["data"], batch["labels"]
    try:
        images = len(data)
        values = getattr(data, "size", None)
    except TypeError:
        raise DataFileProblem(f"{path}: its 'data' is no array of images") from None
    if not isinstance(labels, (list, tuple)):
        raise DataFileProblem(f"{path}: its 'labels' is no list")
    if values is not None and values != images * CIFAR10_IMAGE_VALUES:
        raise DataFileProblem(f"{path}: its 'data' holds {values:,} values, not {images:,} images of "
                              f"{CIFAR10_IMAGE_VALUES:,} (32 x 32 x 3)")
    if images != len(labels):
        raise DataFileProblem(f"{path}: {images:,} images but {len(labels):,} labels")
    bad = next((label for label in labels if not (type(label) is int and 0 <= label < classes)), None)
    if bad is not None:
        raise DataFileProblem(f"{path}: label {bad!r:.40} is not one of the {classes} classes of batches.meta")
    return images


@functools.lru_cache(maxsize=16)
def _read_cifar10(folder: str, stamp: Tuple[float, ...]) -> OnDisk:
    meta = _load_pickle(folder, "batches.meta")
    names = meta.get("label_names") if isinstance(meta, dict) else None
    if not isinstance(names, (list, tuple)) or not names:
        raise DataFileProblem(f"{CIFAR10_FOLDER}/batches.meta: no list of label_names")
    samples = sum(_batch_samples(folder, name, len(names)) for name in CIFAR10_TRAIN_BATCHES)
    _batch_samples(folder, "test_batch", len(names))  # read at the first evaluation: checked before launch too
    return OnDisk(samples, len(names))


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
