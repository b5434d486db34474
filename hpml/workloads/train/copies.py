"""Batch augmentation on the host path (workload.batch_augmentation = M > 1; Hoffer et al. 2019, "Augment your
batch"): M copies of every sample in a step, each copy its own draw of the data set's augmentation.

The copies are made where the host path makes every augmentation, in the DataLoader's workers (or the main
process with loader_workers=0): `AugmentedCopies` decodes a sample once and runs the data set's transform on it M
times (each run draws its own crop, flip and holes from the worker's torch generator); `collate_copies` turns a
batch of B such items into M x B samples laid out as the device path lays them out (workloads/train/augment.py's
`augment_batch(copies=M)`): sample i's copies in rows i*M .. i*M + M - 1, its label repeated M times.

The loader's batch stays B (the sampler's indices, DistributedSampler's epoch order, drop_last): an epoch is still
one pass over the data set; a step carries M x B samples.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch.utils.data import Dataset, default_collate


class AugmentedCopies(Dataset):
    """Item i: (M x C x H x W, label), M independent transforms of sample i. Takes over the data set's `transform`
    (torchvision data sets apply it in __getitem__), so the image is read and decoded once, transformed M times."""

    def __init__(self, dataset: Dataset, copies: int):
        self.dataset, self.copies = dataset, copies
        # a data set without a transform (synthetic images under dataset=auto) gives M identical copies
        self.transform: Optional[Callable] = getattr(dataset, "transform", None)
        if self.transform is not None:
            dataset.transform = None

    @property
    def classes(self) -> Optional[List[str]]:
        return getattr(self.dataset, "classes", None)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Tuple[torch.Tensor, Any]:
        image, label = self.dataset[index]
        views = [self.transform(image) for _ in range(self.copies)] if self.transform else [image] * self.copies
        return torch.stack(views), label


def collate_copies(items: Sequence[Tuple[torch.Tensor, Any]]) -> Tuple[torch.Tensor, torch.Tensor]:
    """B items of M views -> (M*B x C x H x W, M*B labels), each sample's copies in consecutive rows."""
    images, labels = default_collate(items)  # B x M x C x H x W, B
    copies = images.shape[1]
    return images.flatten(0, 1), labels.repeat_interleave(copies)


def with_copies(dataset: Dataset, copies: int) -> Dataset:
    """The data set itself for M = 1 (nothing changes), else its AugmentedCopies."""
    return dataset if copies == 1 else AugmentedCopies(dataset, copies)


def collate_of(dataset: Dataset) -> Optional[Callable]:
    """The DataLoader's collate_fn for `dataset`: collate_copies for copies, else None (torch's default)."""
    return collate_copies if isinstance(dataset, AugmentedCopies) else None
