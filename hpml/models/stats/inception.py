"""GoogLeNet's inception module, naive vs with 1x1 reductions: output size and multiplies.

Filter counts of inception (3a), Szegedy et al. 2015, "Going deeper with convolutions", Table 1:
#1x1 64, #3x3 reduce 96, #3x3 128, #5x5 reduce 16, #5x5 32, pool proj 32.

- naive (the paper's Figure 2a): 1x1, 3x3 and 5x5 convolutions and a 3x3 max pool side by side on the
  input, outputs concatenated; the pool passes all input channels through.
- with reductions (Figure 2b): a 1x1 convolution to #3x3 reduce / #5x5 reduce channels before the 3x3 and
  the 5x5, and a 1x1 "pool proj" after the pool.

Every branch keeps the spatial size ("same" padding, stride 1). A KxK convolution from C_in to C_out
channels on an HxW map does H * W * C_in * K * K * C_out multiplies (biases, ReLUs and the max pool do
none). `compare` gives both variants by that formula and by building the modules (without biases) and
counting them with torch's FlopCounterMode (multiplies = its FLOPs / 2); the tests hold the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# Szegedy et al. 2015, Table 1, row "inception (3a)"
INCEPTION_3A: Dict[str, int] = {"1x1": 64, "3x3 reduce": 96, "3x3": 128, "5x5 reduce": 16, "5x5": 32,
                                 "pool proj": 32}


@dataclass(frozen=True)
class Conv:
    """One convolution of a branch: kernel x kernel, in_channels -> out_channels."""

    branch: str
    kernel: int
    in_channels: int
    out_channels: int

    def multiplies(self, height: int, width: int) -> int:
        return height * width * self.in_channels * self.kernel * self.kernel * self.out_channels


@dataclass(frozen=True)
class Variant:
    name: str
    convs: List[Conv]
    output_shape: Tuple[int, int, int]   # (C, H, W)
    multiplies: int                      # by the formula
    counted_multiplies: int              # torch's FlopCounterMode on the built module, / 2
    weights: int                         # convolution weights (no biases)


@dataclass(frozen=True)
class Comparison:
    input_shape: Tuple[int, int, int]
    naive: Variant
    reduced: Variant

    @property
    def saving(self) -> float:
        """The share of the naive module's multiplies that the reductions save."""
        return 1 - self.reduced.multiplies / self.naive.multiplies


def naive_convs(in_channels: int, filters: Dict[str, int] = INCEPTION_3A) -> List[Conv]:
    return [Conv("1x1", 1, in_channels, filters["1x1"]), Conv("3x3", 3, in_channels, filters["3x3"]),
            Conv("5x5", 5, in_channels, filters["5x5"])]


def reduced_convs(in_channels: int, filters: Dict[str, int] = INCEPTION_3A) -> List[Conv]:
    return [Conv("1x1", 1, in_channels, filters["1x1"]),
            Conv("3x3", 1, in_channels, filters["3x3 reduce"]),
            Conv("3x3", 3, filters["3x3 reduce"], filters["3x3"]),
            Conv("5x5", 1, in_channels, filters["5x5 reduce"]),
            Conv("5x5", 5, filters["5x5 reduce"], filters["5x5"]),
            Conv("pool", 1, in_channels, filters["pool proj"])]


class InceptionModule(nn.Module):
    """The branches of `convs` (convolutions of one branch run in order) and a 3x3 max pool branch, which a
    "pool" convolution follows when there is one; outputs concatenated along the channels."""

    def __init__(self, convs: Sequence[Conv]):
        super().__init__()
        branches: Dict[str, List[nn.Module]] = {"1x1": [], "3x3": [], "5x5": [],
                                                "pool": [nn.MaxPool2d(3, stride=1, padding=1)]}
        for conv in convs:
            branches[conv.branch].append(nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel,
                                                   padding=conv.kernel // 2, bias=False))
        self.branches = nn.ModuleList(nn.Sequential(*layers) for layers in branches.values())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], dim=1)


def _variant(name: str, convs: List[Conv], input_shape: Tuple[int, int, int]) -> Variant:
    channels, height, width = input_shape
    with torch.device("meta"):
        module = InceptionModule(convs)
    with FlopCounterMode(display=False) as counter:
        output = module(torch.zeros((1, *input_shape), device="meta"))
    return Variant(name=name, convs=convs, output_shape=tuple(output.shape[1:]),
                   multiplies=sum(conv.multiplies(height, width) for conv in convs),
                   counted_multiplies=counter.get_total_flops() // 2,
                   weights=sum(p.numel() for p in module.parameters()))


def compare(input_shape: Tuple[int, int, int] = (256, 32, 32), filters: Dict[str, int] = INCEPTION_3A) -> Comparison:
    """Naive vs reduced inception module on a (C, H, W) input."""
    channels = input_shape[0]
    return Comparison(input_shape=tuple(input_shape),
                      naive=_variant("naive", naive_convs(channels, filters), input_shape),
                      reduced=_variant("with 1x1 reductions", reduced_convs(channels, filters), input_shape))
