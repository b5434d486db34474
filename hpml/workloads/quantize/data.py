"""The images: CIFAR-10's python files from workload.data_root (what `hpml data digits` writes), Fashion-MNIST's or
MNIST's files read through torchvision (1 channel, 28x28, zero-padded to the side the model takes), or scikit-learn's
digits built in memory (the same images, for runs without files: the tiny preset, CI), as float32 tensors
normalized the way the model was trained, and the calibration draw.

Both splits are small (digits: 1,438 + 359 images; CIFAR-10: 50,000 + 10,000 = 737 MB as float32) and are held
whole: every stage evaluates the same held-out tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from hpml.conf.workload.quantize import QuantDataset, QuantizeConfig
from hpml.contract.idx_data import IDX_DATASETS, IDX_SIDE


def idx_padding(cfg: QuantizeConfig) -> int:
    """Zero pixels a side that bring a 28x28 data set to the side hw5_cnn takes (0 for other data and models)."""
    from hpml.models.hw5_cnn import HW5_INPUT_SIDE

    if cfg.dataset.value not in IDX_DATASETS or cfg.model != "hw5_cnn":
        return 0
    return (HW5_INPUT_SIDE - IDX_SIDE) // 2


@dataclass
class Split:
    images: torch.Tensor  # N x C x H x W float32, normalized
    labels: torch.Tensor  # N int64
    classes: List[str]


def normalized(images_uint8: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """N x C x H x W uint8 -> float32 (x / 255 - mean) / std per channel: ToTensor then Normalize, as trained."""
    m = torch.tensor(mean, dtype=torch.float32).reshape(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).reshape(1, -1, 1, 1)
    return (images_uint8.float() / 255.0 - m) / s


def _cifar10(root: str, train: bool) -> Tuple[torch.Tensor, torch.Tensor, List[str]]:
    from hpml.workloads.common.cifar10 import (
        local_cifar10,  # the train workload's reader: the same files, the same checks
    )

    data = local_cifar10(root, transform=None, train=train)
    images = torch.from_numpy(data.data).permute(0, 3, 1, 2).contiguous()  # N x H x W x C -> N x C x H x W
    return images, torch.tensor(data.targets, dtype=torch.int64), list(data.classes)


def _digits() -> Tuple[Tuple[torch.Tensor, torch.Tensor], Tuple[torch.Tensor, torch.Tensor], List[str]]:
    """`hpml data digits`' images and split (seed 0), without the files: gray planes repeated as R, G, B."""
    from hpml.dataprep import digits_cifar as dc

    digits = dc.load_digits_32()
    split = dc.stratified_split(digits.labels, seed=0)

    def part(positions: np.ndarray) -> Tuple[torch.Tensor, torch.Tensor]:
        planes = torch.from_numpy(digits.planes[positions]).unsqueeze(1)
        return planes.expand(-1, 3, -1, -1).contiguous(), torch.from_numpy(digits.labels[positions])

    return part(split.train), part(split.test), list(dc.CLASS_NAMES)


def _idx(cfg: QuantizeConfig, train: bool) -> Tuple[torch.Tensor, torch.Tensor, List[str]]:
    from hpml.workloads.common.idx_images import local_idx

    data = local_idx(cfg.data_root, IDX_DATASETS[cfg.dataset.value], transform=None, train=train)
    return data.data.unsqueeze(1).contiguous(), data.targets.to(torch.int64), list(data.classes)


def load_splits(cfg: QuantizeConfig, mean: Sequence[float], std: Sequence[float],
                padding: int = 0) -> Tuple[Split, Split]:
    """(training split, held-out split); `padding` zero pixels around each image (the side the model takes)."""
    if cfg.dataset == QuantDataset.digits:
        (train_x, train_y), (test_x, test_y), classes = _digits()
    elif cfg.dataset.value in IDX_DATASETS:
        train_x, train_y, classes = _idx(cfg, train=True)
        test_x, test_y, _ = _idx(cfg, train=False)
    else:
        train_x, train_y, classes = _cifar10(cfg.data_root, train=True)
        test_x, test_y, _ = _cifar10(cfg.data_root, train=False)
    if len(classes) != cfg.num_classes:
        raise ValueError(f"workload.num_classes={cfg.num_classes} but the data set has {len(classes)} classes")
    if padding:
        train_x, test_x = (F.pad(x, (padding,) * 4) for x in (train_x, test_x))
    return (Split(normalized(train_x, mean, std), train_y, classes),
            Split(normalized(test_x, mean, std), test_y, classes))


def calibration_images(train: Split, count: int, seed: int) -> torch.Tensor:
    """`count` training images drawn without replacement by a generator seeded with the run's seed (all of them
    when the split is smaller). Training images: the held-out split only ever scores."""
    order = torch.randperm(len(train.images), generator=torch.Generator().manual_seed(seed))
    return train.images[order[:count]]
