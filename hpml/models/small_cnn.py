"""hpml_cnn: a small real CNN for 32x32 (or any size) inputs, RGB or grayscale (in_channels).

Big enough to learn the digits set to ~97 % in a few epochs, small enough that CI trains it on two CPU cores
in seconds (a time-to-accuracy preset must reach its target on every run, not on a lucky seed).
"""

from __future__ import annotations

import torch
from torch import nn


def conv_block(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(outputs),
                         nn.ReLU(inplace=True))


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 3):
        super().__init__()
        self.features = nn.Sequential(conv_block(in_channels, 32), nn.MaxPool2d(2), conv_block(32, 64), nn.MaxPool2d(2),
                                      conv_block(64, 128), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(128, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))
