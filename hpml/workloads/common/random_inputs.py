"""Random inputs of the image models, made one way everywhere (synthetic data, throughput benchmarks, probes):
N x 3 x S x S standard-normal images and uniform class labels, from the caller's generator and on its device."""

from __future__ import annotations

from typing import Optional

import torch

from hpml.contract.limits import IMAGE_CHANNELS


def random_images(count: int, image_size: int, *, generator: Optional[torch.Generator] = None,
                  device: Optional[torch.device] = None) -> torch.Tensor:
    return torch.randn(count, IMAGE_CHANNELS, image_size, image_size, generator=generator, device=device)


def random_labels(count: int, num_classes: int, *, generator: Optional[torch.Generator] = None,
                  device: Optional[torch.device] = None) -> torch.Tensor:
    return torch.randint(0, num_classes, (count,), generator=generator, device=device)
