"""Top-1 accuracy of one model on an image folder: batch-wise, under inference_mode, on CUDA when there is one."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader

BATCH = 256  # images per forward pass; memory, not the result, depends on it


@dataclass
class Score:
    correct: int
    images: int

    @property
    def top1(self) -> float:
        return self.correct / self.images


def evaluation_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def score(model: torch.nn.Module, data, device: torch.device) -> Score:
    """Counts the images whose highest logit is their folder's class. num_workers=0: the folders this is for
    are small, and a worker process would turn an unreadable image's one line into a traceback."""
    correct = images = 0
    with torch.inference_mode():
        for batch, labels in DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=0):
            predicted = model(batch.to(device)).argmax(dim=1).cpu()
            correct += int((predicted == labels).sum())
            images += len(labels)
    return Score(correct, images)
