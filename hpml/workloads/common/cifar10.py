"""CIFAR-10 from a local root, and its normalization: the one reader of every workload that reads CIFAR-10 files
(train, quantize, the dataloader study) and of the tools. Nothing is ever downloaded (no network on compute
nodes): a missing data set is an error that says where it was looked for."""

from __future__ import annotations

import pickle
from pathlib import Path

from torch.utils.data import Dataset

from hpml.conf.data_on_disk import cifar10_on_disk, cifar10_problem, irregular_cifar10_file, missing_cifar10_files
from hpml.contract.files import one_line

# The per-channel mean and std of CIFAR-10's training images (the values torchvision's examples use)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


def local_cifar10(root: str, transform, train: bool = True) -> Dataset:
    """torchvision's CIFAR10 reader on files already on disk.

    torchvision checks each file's MD5 against the official archive's, which only makes sense right
    after its own download; hpml never downloads, so presence is checked instead (the preflight has already
    said which file is missing, and read every one of them) and the files are read as they are."""
    from torchvision.datasets import CIFAR10

    class LocalCIFAR10(CIFAR10):
        def _check_integrity(self) -> bool:
            return cifar10_on_disk(self.root)

        def _load_meta(self) -> None:
            with open(Path(self.root) / self.base_folder / self.meta["filename"], "rb") as f:
                self.classes = pickle.load(f, encoding="latin1")[self.meta["key"]]
            self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    if not root or missing_cifar10_files(root):
        raise FileNotFoundError(f"workload.data_root={root}: no CIFAR-10 (cifar-10-batches-py) there")
    irregular = irregular_cifar10_file(root)  # a FIFO would block torchvision's read forever
    if irregular:
        raise DataFileError(f"workload.data_root={root}: {irregular}")
    try:
        data = LocalCIFAR10(root, train=train, download=False, transform=transform)
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, TypeError, AttributeError, IndexError,
            OSError) as error:  # the files changed since the preflight read them: say which one, not only how
        raise DataFileError(f"workload.data_root={root}: {cifar10_problem(root) or one_line(error)}") from None
    classes = len(data.classes)
    # torchvision reads images and labels apart: a batch whose counts disagree fails only at a sample's index
    if len(data.data) != len(data.targets) or any(not 0 <= label < classes for label in data.targets):
        raise DataFileError(f"workload.data_root={root}: {cifar10_problem(root) or 'images and labels disagree'}")
    return data


class DataFileError(RuntimeError):
    """A data file a worker cannot read; the message names the file (the point's reason is its first line)."""
