"""Augmentation as batched tensor operations, each sample its own draw (the device data path, device_data.py).

The same augmentations as the host path's torchvision transforms, in the same order, on a whole batch at once:

    random crop   zero padding of `padding` pixels on every side (torchvision RandomCrop's padding_mode
                  "constant", fill 0, on the uint8 image), then a size x size window at a random offset per sample
    flip          each sample mirrored left-right with probability 1/2 (RandomHorizontalFlip)
    normalize     (x / 255 - mean) / std per channel (ToTensor + Normalize), computed in fp32, stored in the
                  dtype the model takes
    Cutout        DeVries & Taylor 2017: per sample and hole, a centre drawn uniformly over the image, the square
                  [c - size // 2, c - size // 2 + size) clipped at the border (so it can cover less than size x size),
                  set to 0 after normalization (the data set's mean colour), as their reference code does. For an
                  even size (16 on CIFAR-10) that is their code's [c - size // 2, c + size // 2); for an odd size
                  their code covers (size - 1) x (size - 1), and nothing for size 1: here always size x size

`copies` > 1 is batch augmentation (Hoffer et al. 2019): every sample of the batch appears `copies` times in a
row, each copy with its own crop, flip and holes.

Random numbers come from the generator passed in (on the data's device), so a run with the same seed draws the
same augmentations again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class AugmentSpec:
    """What to apply to a training batch (workload.augment, crop_padding, cutout_holes, cutout_size)."""

    crop_padding: int = 0  # 0: no crop
    flip: bool = False
    cutout_holes: int = 0  # 0: no Cutout
    cutout_size: int = 0


def random_crop(images: torch.Tensor, padding: int, generator: Optional[torch.Generator]) -> torch.Tensor:
    """N x C x H x W -> the same shape: each sample's window of the zero-padded image at its own offset."""
    if padding == 0:
        return images
    n, _, height, width = images.shape
    padded = F.pad(images, (padding, padding, padding, padding))  # constant 0, as RandomCrop's default
    dy = torch.randint(0, 2 * padding + 1, (n, 1), device=images.device, generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (n, 1), device=images.device, generator=generator)
    return crop_at(padded, dy, dx, height, width)


def crop_at(padded: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """One gather: sample i's height x width window whose top-left corner is (dy[i], dx[i])."""
    rows = (dy + torch.arange(height, device=padded.device))[:, None, :, None]  # N x 1 x H x 1
    cols = (dx + torch.arange(width, device=padded.device))[:, None, None, :]  # N x 1 x 1 x W
    batch = torch.arange(padded.shape[0], device=padded.device)[:, None, None, None]
    channels = torch.arange(padded.shape[1], device=padded.device)[None, :, None, None]
    return padded[batch, channels, rows, cols]


def random_flip(images: torch.Tensor, generator: Optional[torch.Generator]) -> torch.Tensor:
    flip = torch.rand(images.shape[0], device=images.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], images.flip(3), images)


@dataclass(frozen=True)
class Normalization:
    """(x / 255 - mean) / std as x * scale + shift, scale = 1 / (255 std), shift = -mean / std: 1 x C x 1 x 1
    tensors on the data's device, made once (one fused multiply-add per batch instead of three operations)."""

    scale: torch.Tensor
    shift: torch.Tensor

    @classmethod
    def of(cls, mean: Sequence[float], std: Sequence[float], device: torch.device) -> "Normalization":
        mean_t = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
        std_t = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
        return cls((1 / (255 * std_t)).float().to(device), (-mean_t / std_t).float().to(device))


def normalize(images: torch.Tensor, norm: Normalization, dtype: torch.dtype) -> torch.Tensor:
    """uint8 images -> (x / 255 - mean) / std in `dtype` (the arithmetic in fp32)."""
    return torch.addcmul(norm.shift, images, norm.scale).to(dtype)  # uint8 x float32 promotes to float32: one kernel


def cutout_mask(n: int, height: int, width: int, holes: int, size: int, device: torch.device,
                generator: Optional[torch.Generator]) -> torch.Tensor:
    """N x 1 x H x W booleans, True where one of a sample's `holes` holes (centres drawn uniformly) covers it."""
    cy = torch.randint(0, height, (n, holes), device=device, generator=generator)
    cx = torch.randint(0, width, (n, holes), device=device, generator=generator)
    return holes_mask(cy, cx, height, width, size)


def holes_mask(cy: torch.Tensor, cx: torch.Tensor, height: int, width: int, size: int) -> torch.Tensor:
    """N x 1 x H x W: the union of the squares rows [cy - size // 2, cy - size // 2 + size) x the same for columns,
    clipped at the border (cy, cx: N x holes centres)."""
    rows = torch.arange(height, device=cy.device).view(1, 1, height, 1)
    cols = torch.arange(width, device=cy.device).view(1, 1, 1, width)
    top, left = cy[:, :, None, None] - size // 2, cx[:, :, None, None] - size // 2
    inside = (rows >= top) & (rows < top + size) & (cols >= left) & (cols < left + size)
    return inside.any(dim=1, keepdim=True)


def cutout(images: torch.Tensor, holes: int, size: int, generator: Optional[torch.Generator]) -> torch.Tensor:
    if holes == 0:
        return images
    n, _, height, width = images.shape
    mask = cutout_mask(n, height, width, holes, size, images.device, generator)
    return images.masked_fill(mask, 0)


def augment_batch(images: torch.Tensor, labels: torch.Tensor, spec: AugmentSpec, norm: Normalization,
                  dtype: torch.dtype, memory_format: torch.memory_format,
                  generator: Optional[torch.Generator], copies: int = 1) -> Tuple[torch.Tensor, torch.Tensor]:
    """uint8 N x C x H x W (and N labels) -> the model's input: copies x N samples, augmented, normalized."""
    if copies > 1:
        images, labels = images.repeat_interleave(copies, 0), labels.repeat_interleave(copies, 0)
    images = random_crop(images, spec.crop_padding, generator)
    if spec.flip:
        images = random_flip(images, generator)
    images = cutout(normalize(images, norm, dtype), spec.cutout_holes, spec.cutout_size, generator)
    return images.contiguous(memory_format=memory_format), labels


class Cutout:
    """The host path's Cutout: a transform on one normalized C x H x W tensor (after torchvision's Normalize),
    the same rule as the device path's, drawn from torch's global generator (seeded per loader worker)."""

    def __init__(self, holes: int, size: int):
        self.holes, self.size = holes, size

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return cutout(image[None], self.holes, self.size, None)[0]

    def __repr__(self) -> str:
        return f"Cutout(holes={self.holes}, size={self.size})"
