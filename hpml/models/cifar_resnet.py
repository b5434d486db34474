"""The CIFAR ResNets of He et al. 2016 ("Deep Residual Learning for Image Recognition", sec. 4.2): 6n + 2 layers.

    conv 3x3, 16                          32 x 32
    n basic blocks of 16 channels         32 x 32   (layer1)
    n basic blocks of 32 channels         16 x 16   (layer2; its first block has stride 2)
    n basic blocks of 64 channels          8 x  8   (layer3; its first block has stride 2)
    global average pool, fully connected (num_classes)

A basic block is two 3x3 convolutions, each followed by batch norm, ReLU after the first and after the sum.

Shortcut option A (the paper's choice for CIFAR-10): where a block halves the resolution and doubles the channels,
the shortcut is the identity subsampled by 2 with the new channels filled with zeros, so it has no parameters.
The published parameter counts (ResNet-20 0.27 M, 32 0.46 M, 44 0.66 M, 56 0.85 M, 110 1.7 M; Table 6) are option
A's: option B (1x1 projections) would add parameters at the two stage transitions. Exactly, with 10 classes,
a depth 6n + 2 network has 97,216 n - 21,926 parameters (tests/test_batch_augmentation.py derives it).

Weights: convolutions He-initialised (He et al. 2015, "Delving deep into rectifiers"; torchvision's ResNets use
the same kaiming_normal_ with fan_out), batch norm at weight 1 and bias 0, the last layer as nn.Linear's default.

The stages are named layer1..layer3 as torchvision's ResNets name theirs, so activation checkpointing
(workloads/train/checkpointing.py) finds them. models/names.py's CIFAR_RESNET_DEPTHS are the depths hpml registers
(workload.model=cifar_resnet44, ...): He et al.'s five, and depth 8 (n = 1), small enough for tests on a CPU.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

STAGE_CHANNELS = (16, 32, 64)


def blocks_per_stage(depth: int) -> int:
    """n of a 6n + 2 layer network (ValueError for other depths)."""
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"a CIFAR ResNet has 6n + 2 layers (8, 20, 32, 44, 56, 110, ...), not {depth}")
    return (depth - 2) // 6


class ZeroPadShortcut(nn.Module):
    """Option A: x subsampled by `stride`, then zero channels on both sides up to `outputs` channels."""

    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.stride, self.pad = stride, outputs - inputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, ::self.stride, ::self.stride]
        # F.pad pads the last dimensions first: (W left, W right, H top, H bottom, C front, C back)
        return F.pad(x, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))


class BasicBlock(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        changes_shape = stride != 1 or inputs != outputs
        self.shortcut = ZeroPadShortcut(inputs, outputs, stride) if changes_shape else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, depth: int, num_classes: int = 10, in_channels: int = 3):
        super().__init__()
        n = blocks_per_stage(depth)
        self.conv1 = nn.Conv2d(in_channels, STAGE_CHANNELS[0], 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(STAGE_CHANNELS[0])
        stages, inputs = [], STAGE_CHANNELS[0]
        for index, outputs in enumerate(STAGE_CHANNELS):
            first_stride = 1 if index == 0 else 2
            stages.append(nn.Sequential(*(BasicBlock(inputs if b == 0 else outputs, outputs, first_stride if b == 0 else 1)
                                          for b in range(n))))
            inputs = outputs
        self.layer1, self.layer2, self.layer3 = stages
        self.fc = nn.Linear(STAGE_CHANNELS[-1], num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
