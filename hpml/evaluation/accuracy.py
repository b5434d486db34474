"""Top-1 accuracy of one model on an image folder: batch-wise, under inference_mode, on CUDA when there is one."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader

BATCH = 256  # images per forward pass at most; memory, not the result, depends on it
BATCH_PIXELS = BATCH * 128 * 128  # fewer images per pass for larger inputs: 83 at 224 x 224, 4 at 1024 x 1024


@dataclass
class Score:
    correct: int
    images: int

    @property
    def top1(self) -> float:
        return self.correct / self.images


def evaluation_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def batch_size(image_size: int) -> int:
    """Images per forward pass for image_size x image_size inputs: memory grows with the pixels of a batch."""
    return max(1, min(BATCH, BATCH_PIXELS // image_size ** 2))


def score(model: torch.nn.Module, data, device: torch.device, batch: int = BATCH) -> Score:
    """Counts the images whose highest logit is their folder's class. num_workers=0: the folders this is for
    are small, and a worker process would turn an unreadable image's one line into a traceback."""
    correct = images = 0
    with torch.inference_mode():
        for batch, labels in DataLoader(data, batch_size=batch, shuffle=False, num_workers=0):
            predicted = model(batch.to(device)).argmax(dim=1).cpu()
            correct += int((predicted == labels).sum())
            images += len(labels)
    return Score(correct, images)
