"""Training data: synthetic images, torchvision's CIFAR-10 from a local root, or an ImageFolder.

Nothing is ever downloaded: a missing data set is an error that says where it was looked for.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import Dataset

from conf.schema import Dataset as DatasetKind
from conf.schema import TrainConfig

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


class SyntheticImages(Dataset):
    """`size` labelled random images. A pool of 256 distinct images is cycled so that building an item
    costs an index, not a random-number draw: the loader stays out of the measurement."""

    POOL = 256

    def __init__(self, size: int, num_classes: int, image_size: int, seed: int):
        gen = torch.Generator().manual_seed(seed)
        pool = min(size, self.POOL)
        self.images = torch.randn(pool, 3, image_size, image_size, generator=gen)
        self.labels = torch.randint(0, num_classes, (size,), generator=gen)
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        return self.images[index % len(self.images)], self.labels[index]


def build_dataset(cfg: TrainConfig, seed: int) -> Dataset:
    if cfg.dataset == DatasetKind.synthetic:
        return SyntheticImages(cfg.synthetic_samples, cfg.num_classes, cfg.image_size, seed)
    import torchvision.transforms as T  # only the real data sets need torchvision's transforms

    normalize = T.Normalize(CIFAR10_MEAN, CIFAR10_STD)
    if cfg.dataset == DatasetKind.cifar10:
        from torchvision.datasets import CIFAR10  # raises "Dataset not found" if data_root lacks it

        transform = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), normalize])
        return CIFAR10(cfg.data_root, train=True, download=False, transform=transform)
    from torchvision.datasets import ImageFolder

    root = Path(cfg.data_root) / "train"
    if not root.is_dir():
        raise FileNotFoundError(f"workload.data_root={cfg.data_root!r} has no train/ folder of class "
                                "sub-folders (torchvision ImageFolder layout)")
    transform = T.Compose([T.RandomResizedCrop(cfg.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                           normalize])
    return ImageFolder(str(root), transform=transform)
