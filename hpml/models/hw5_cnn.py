"""hw5_cnn: the small CNN of the post-training quantization study (HPML homework 5, part B), which is PyTorch's
CIFAR-10 tutorial network ("Training a Classifier"): conv 3->6 5x5, ReLU, max-pool 2, conv 6->16 5x5, ReLU,
max-pool 2, fully connected 400->120->84->10 with ReLU between. 62,006 parameters for 10 classes.

Written as two nn.Sequential chains (features, classifier) rather than the tutorial's one forward of named
layers: the quantize workload reads a model as the chain of its leaf modules in order (workloads/quantize/
plan.py), and torch.ao's fusion names modules by their path. Not in models/names.py: only the quantize workload
builds it (workloads/quantize/float_model.py). Its 400-input layer fixes the input at 32x32 (32 -> 28 -> 14 -> 10 -> 5):
a 28x28 data set (Fashion-MNIST) is zero-padded to 32x32, as LeNet-5 padded MNIST (HW5_INPUT_SIDE).
"""

from __future__ import annotations

import torch
from torch import nn

HW5_INPUT_SIDE = 32


class HW5CNN(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(in_channels, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
                                      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                        nn.Linear(84, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))
