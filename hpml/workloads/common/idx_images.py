"""Fashion-MNIST and MNIST read through torchvision (datasets.FashionMNIST / datasets.MNIST) from the files
`hpml data fashion-mnist|mnist` laid out under root/<FashionMNIST|MNIST>/raw/; never downloaded. The workloads'
one reader of these data sets (train, quantize, the DataLoader study), and the normalization of every data set.

torchvision hands out 1 x 28 x 28 images (mode "L"): no workload turns them into RGB. A model designed for 32 x 32
gets them zero-padded (conf TrainConfig.fit_padding; pad_to below on the host path's PIL images).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from torch.utils.data import Dataset, Subset

from hpml.contract.idx_data import IdxDataSet, idx_problem
from hpml.workloads.common.cifar10 import CIFAR10_MEAN, CIFAR10_STD, DataFileError


def normalization(idx: Optional[IdxDataSet]) -> Tuple[Sequence[float], Sequence[float]]:
    """(mean, std) per channel of the data set's training images on the 0-1 scale: Fashion-MNIST's or MNIST's
    one channel (contract/idx_data.py, tested against the files), else CIFAR-10's three (also an image folder's)."""
    if idx is not None:
        return (idx.mean,), (idx.std,)
    return CIFAR10_MEAN, CIFAR10_STD


def local_idx(root: str, data: IdxDataSet, transform, train: bool = True) -> Dataset:
    """torchvision's reader of `data` on the files already at root (the preflight checked them; a file changed
    since is one line naming it)."""
    import torchvision.datasets

    problem = idx_problem(root, data)
    if problem:
        raise DataFileError(f"workload.data_root={root}: {problem}")
    reader = getattr(torchvision.datasets, data.folder)
    try:
        return reader(root, train=train, transform=transform, download=False)
    except (RuntimeError, OSError, ValueError) as error:
        raise DataFileError(f"workload.data_root={root}: {data.raw}/ cannot be read by torchvision.datasets."
                            f"{data.folder} ({error})") from None


class FirstSamples(Subset):
    """The first n samples of a data set (workload.max_samples: a slice), keeping its class names."""

    def __init__(self, dataset: Dataset, n: Optional[int]):
        super().__init__(dataset, range(min(n, len(dataset)) if n else len(dataset)))
        self.classes = getattr(dataset, "classes", None)


def padding_transform(pixels: int) -> list:
    """[torchvision Pad(pixels) with zeros] to bring an image to the model's side, or [] when none is needed."""
    if pixels == 0:
        return []
    import torchvision.transforms as T

    return [T.Pad(pixels, fill=0)]
