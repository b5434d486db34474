"""Fashion-MNIST and MNIST: what their files hold, where torchvision reads them, and whether they are there intact.

Both come as four files in LeCun's idx format (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-
idx3-ubyte, t10k-labels-idx1-ubyte; the official downloads gzip each). torchvision's `datasets.FashionMNIST(root)`
and `datasets.MNIST(root)` read the unpacked files from root/<class name>/raw/ (FashionMNIST/raw/, MNIST/raw/):
`hpml data fashion-mnist|mnist` puts them there (hpml/dataprep/idx_sets.py), the workloads read them through
torchvision (hpml/workloads/common/idx_images.py), and the launcher's preflight checks them here first.

An idx file: a 4-byte magic (two zero bytes, the element type 0x08 = unsigned byte, the number of dimensions),
one big-endian uint32 per dimension, then the values, row-major. Images: 3 dimensions (count, 28, 28); labels: 1.

The preflight's check (idx_problem) costs a stat and a header read per images file and the whole labels file
(60 kB): each a regular file of exactly the size its header says, the counts and shapes of the data set, the
labels within its 10 classes. Checksums are for the files as published (the .gz): `hpml data` checks them.
Standard library only: this runs at compose time, before torch is imported.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Dict, Optional, Tuple

from hpml.contract.files import NotReadable, open_regular

IDX_SIDE = 28
IDX_CLASSES = 10
UNSIGNED_BYTE = 0x08
# name -> (dimensions of the stored array); the training split then the test split, as torchvision names them
IDX_FILES: Dict[str, Tuple[int, ...]] = {
    "train-images-idx3-ubyte": (60000, IDX_SIDE, IDX_SIDE),
    "train-labels-idx1-ubyte": (60000,),
    "t10k-images-idx3-ubyte": (10000, IDX_SIDE, IDX_SIDE),
    "t10k-labels-idx1-ubyte": (10000,),
}
IDX_TRAIN_SAMPLES = IDX_FILES["train-images-idx3-ubyte"][0]


@dataclass(frozen=True)
class IdxDataSet:
    """One data set of the idx family: how hpml names it and what a training run needs to know of it."""

    key: str  # workload.dataset
    command: str  # `hpml data <command>`
    folder: str  # torchvision's class name: its data lives in root/<folder>/raw/
    classes: Tuple[str, ...]
    flip: bool  # a left-right mirror is still an image of its class (clothes yes, digits no)
    # the training split's pixel mean and std on the 0-1 scale (ToTensor); tests/test_fashion_mnist.py recomputes
    # Fashion-MNIST's from the files on disk
    mean: float
    std: float
    default_from: Optional[str]  # where a system package installs the .gz files; None: --from is required

    @property
    def raw(self) -> str:
        return f"{self.folder}/raw"


FASHION_MNIST = IdxDataSet(
    key="fashion_mnist", command="fashion-mnist", folder="FashionMNIST",
    classes=("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"),
    flip=True, mean=0.2860, std=0.3530,
    default_from="/usr/share/datasets/fashion-mnist",  # Debian's dataset-fashion-mnist
)
MNIST = IdxDataSet(
    key="mnist", command="mnist", folder="MNIST",
    classes=tuple(f"{digit} - {name}" for digit, name in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"))),
    # a mirrored 2, 3, 4, 5, 7 or 9 is no digit of its class
    # PyTorch's MNIST example's values: no MNIST files here to recompute them from (Fashion-MNIST's are recomputed)
    flip=False, mean=0.1307, std=0.3081,
    default_from=None,
)
IDX_DATASETS: Dict[str, IdxDataSet] = {data.key: data for data in (FASHION_MNIST, MNIST)}


class IdxProblem(Exception):
    """An idx file that is not what the data set needs; str() names the file and why, in one line."""


def read_header(stream: BinaryIO, name: str) -> Tuple[int, ...]:
    """The dimensions an idx stream's header declares (IdxProblem if it is no unsigned-byte idx header)."""
    magic = stream.read(4)
    if len(magic) < 4 or magic[:2] != b"\0\0" or magic[2] != UNSIGNED_BYTE:
        raise IdxProblem(f"{name}: not an idx file of unsigned bytes (its first bytes are {magic.hex() or 'none'})")
    raw = stream.read(4 * magic[3])
    if len(raw) < 4 * magic[3]:
        raise IdxProblem(f"{name}: its header is cut short")
    return struct.unpack(f">{magic[3]}I", raw)


def check_dimensions(name: str, found: Tuple[int, ...]) -> int:
    """The values the body must hold; IdxProblem when the header's shape is not the data set's."""
    expected = IDX_FILES[name]
    if found != expected:
        raise IdxProblem(f"{name}: its header says {' x '.join(map(str, found)) or 'nothing'}, not "
                         f"{' x '.join(map(str, expected))}")
    size = 1
    for dimension in expected:
        size *= dimension
    return size


def check_labels(name: str, body: bytes) -> None:
    bad = next((value for value in body if value >= IDX_CLASSES), None)
    if bad is not None:
        raise IdxProblem(f"{name}: label {bad} is not one of the {IDX_CLASSES} classes (0-{IDX_CLASSES - 1})")


def check_stream(stream: BinaryIO, name: str) -> None:
    """A whole idx stream (an unpacked file, or a .gz read through gzip): header, body size, labels in range."""
    size = check_dimensions(name, read_header(stream, name))
    body = stream.read(size)
    if len(body) < size:
        raise IdxProblem(f"{name}: truncated ({len(body):,} of its {size:,} values)")
    if stream.read(1):
        raise IdxProblem(f"{name}: more bytes than its header's {size:,} values")
    if "labels" in name:
        check_labels(name, body)


def _raw_file_problem(path: Path, name: str) -> None:
    """The unpacked file as torchvision will read it: regular, its header the data set's, exactly its size; a
    labels file is read whole (60 kB) for the label range, an images file only by its header and size."""
    try:
        with open_regular(path) as stream:
            size = check_dimensions(name, read_header(stream, name))
            length = path.stat().st_size - stream.tell()
            if length != size:
                raise IdxProblem(f"{name}: {'truncated' if length < size else 'longer than its header says'} "
                                 f"({length:,} bytes of values, not {size:,})")
            if "labels" in name:
                check_labels(name, stream.read(size))
    except NotReadable as error:
        raise IdxProblem(f"{name}: {error}") from None
    except OSError as error:
        raise IdxProblem(f"{name}: cannot be read ({error.strerror or error})") from None


def missing_idx_files(root: Optional[str], data: IdxDataSet) -> list:
    """The files of torchvision's layout that are not at root/<folder>/raw/ at all."""
    folder = Path(root or "") / data.raw
    return [name for name in IDX_FILES if not (folder / name).exists()]


def idx_problem(root: Optional[str], data: IdxDataSet) -> Optional[str]:
    """Why root does not hold `data` as torchvision reads it (the first file that is missing or wrong), or None."""
    absent = missing_idx_files(root, data)
    if absent:
        return (f"{data.raw}/ lacks {', '.join(absent)}; lay the files out with "
                f"`hpml data {data.command} --root {root}`")
    folder = Path(root or "") / data.raw
    try:
        for name in IDX_FILES:
            _raw_file_problem(folder / name, name)
    except IdxProblem as problem:
        return f"{data.raw}/{problem}; lay it out again with `hpml data {data.command} --root {root} --force`"
    return None


__all__ = ["FASHION_MNIST", "IDX_DATASETS", "IDX_FILES", "IDX_SIDE", "IDX_TRAIN_SAMPLES", "MNIST", "IdxDataSet",
           "IdxProblem", "check_stream", "idx_problem", "missing_idx_files"]
