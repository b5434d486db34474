"""A model read as the chain of operations the stages quantize: layers (a convolution or a linear layer, batch norm
folded in, ReLU attached) and the operations between them (max-pool, global average pool, flatten).

Why a chain of its own instead of the model's forward: every stage (float, simulated fixed point, integer only)
runs the same list of operations with its own arithmetic, and torch.ao's fusion groups come from the same list.
The model's leaf modules are read in registration order, which is the execution order of the models this
workload takes (models/hw5_cnn.py, models/small_cnn.py); `build_plan` checks that by running the chain in float
against the model's own forward, and refuses a model where they differ.

Batch norm (eval mode) is folded into the convolution before it, as every int8 engine does before quantizing:
w' = w * g / sqrt(var + eps) per output channel, b' = (b - mean) * g / sqrt(var + eps) + beta.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

SKIPPED = (nn.Dropout, nn.Identity)  # no-ops in eval mode


class PlanError(ValueError):
    """A model that is not a chain this workload can quantize; one line naming the module."""


@dataclass
class Layer:
    """A convolution or linear layer with its folded float weight and bias, and the ReLU after it."""

    name: str  # conv1, conv2, ..., fc1, ...: the report's names, counted per kind in order
    kind: str  # "conv" | "linear"
    weight: torch.Tensor
    bias: torch.Tensor
    relu: bool = False
    stride: tuple = (1, 1)
    padding: tuple = (0, 0)
    modules: List[str] = field(default_factory=list)  # the model's module paths fused into it (torch.ao groups)

    def float_forward(self, x: torch.Tensor, weight: Optional[torch.Tensor] = None,
                      bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The layer in float (weight and bias replaceable by their dequantized values), ReLU included."""
        w = self.weight if weight is None else weight
        b = self.bias if bias is None else bias
        y = F.conv2d(x, w, b, self.stride, self.padding) if self.kind == "conv" else F.linear(x, w, b)
        return torch.relu(y) if self.relu else y


@dataclass
class Pool:
    """max: MaxPool2d(kernel, stride) without padding; global_avg: AdaptiveAvgPool2d(1)."""

    kind: str
    kernel: tuple = (1, 1)
    stride: tuple = (1, 1)

    def float_forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "max":
            return F.max_pool2d(x, self.kernel, self.stride)
        return x.mean(dim=(2, 3), keepdim=True)


@dataclass
class Flatten:
    def float_forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(x, 1)


Op = Union[Layer, Pool, Flatten]


@dataclass
class Plan:
    ops: List[Op]

    @property
    def layers(self) -> List[Layer]:
        return [op for op in self.ops if isinstance(op, Layer)]

    def fusion_groups(self) -> List[List[str]]:
        """torch.ao.quantization.fuse_modules' groups: [conv, bn?, relu?] or [linear, relu] of each layer."""
        return [layer.modules for layer in self.layers if len(layer.modules) > 1]

    def float_forward(self, x: torch.Tensor) -> torch.Tensor:
        for op in self.ops:
            x = op.float_forward(x)
        return x


def _pair(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _fold_batch_norm(layer: Layer, bn: nn.BatchNorm2d, path: str) -> None:
    factor = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
    layer.weight = layer.weight * factor.reshape(-1, 1, 1, 1)
    layer.bias = (layer.bias - bn.running_mean) * factor + bn.bias.detach()
    layer.modules.append(path)


def _conv_layer(module: nn.Conv2d, path: str, index: int) -> Layer:
    if module.groups != 1 or _pair(module.dilation) != (1, 1) or module.padding_mode != "zeros" \
            or isinstance(module.padding, str):
        raise PlanError(f"{path}: only plain convolutions (groups=1, dilation=1, numeric zero padding) are quantized")
    bias = module.bias.detach() if module.bias is not None else torch.zeros(module.out_channels)
    return Layer(f"conv{index}", "conv", module.weight.detach().clone(), bias.clone(), stride=_pair(module.stride),
                 padding=_pair(module.padding), modules=[path])


def _pool(module: nn.Module, path: str) -> Pool:
    if isinstance(module, nn.MaxPool2d):
        if _pair(module.padding) != (0, 0) or _pair(module.dilation) != (1, 1) or module.ceil_mode:
            raise PlanError(f"{path}: only max-pooling without padding, dilation or ceil_mode is quantized")
        return Pool("max", _pair(module.kernel_size), _pair(module.stride or module.kernel_size))
    if _pair(module.output_size) != (1, 1):
        raise PlanError(f"{path}: only AdaptiveAvgPool2d(1) (a global average) is quantized")
    return Pool("global_avg")


def read_chain(model: nn.Module) -> Plan:
    """The model's leaf modules in order as a Plan; PlanError naming the first module it cannot take."""
    ops: List[Op] = []
    counts = {"conv": 0, "linear": 0}
    last: Optional[Layer] = None  # the layer a following batch norm or ReLU belongs to
    for path, module in model.named_modules():
        if list(module.children()) or isinstance(module, SKIPPED):
            continue
        if isinstance(module, nn.Conv2d):
            counts["conv"] += 1
            last = _conv_layer(module, path, counts["conv"])
            ops.append(last)
        elif isinstance(module, nn.Linear):
            counts["linear"] += 1
            if not any(isinstance(op, Flatten) for op in ops):
                ops.append(Flatten())
            last = Layer(f"fc{counts['linear']}", "linear", module.weight.detach().clone(),
                         module.bias.detach().clone() if module.bias is not None else torch.zeros(module.out_features),
                         modules=[path])
            ops.append(last)
        elif isinstance(module, nn.BatchNorm2d) and last is not None and last.kind == "conv" and not last.relu \
                and ops[-1] is last:
            _fold_batch_norm(last, module, path)
        elif isinstance(module, nn.ReLU) and last is not None and ops[-1] is last and not last.relu:
            last.relu = True
            last.modules.append(path)
        elif isinstance(module, (nn.MaxPool2d, nn.AdaptiveAvgPool2d)):
            ops.append(_pool(module, path))
        elif isinstance(module, nn.Flatten) and module.start_dim == 1 and module.end_dim == -1:
            ops.append(Flatten())
        else:
            raise PlanError(f"{path or 'the model'}: {type(module).__name__} cannot be quantized here (chains of "
                            "Conv2d [+ BatchNorm2d] [+ ReLU], Linear [+ ReLU], MaxPool2d, AdaptiveAvgPool2d(1), "
                            "Flatten)")
    if not ops or not isinstance(ops[-1], Layer):
        raise PlanError("the model does not end with a convolution or linear layer")
    return Plan(ops)


def build_plan(model: nn.Module, sample: torch.Tensor) -> Plan:
    """read_chain, checked: the chain in float must give the model's own outputs on `sample`."""
    model.eval()
    plan = read_chain(model)
    with torch.inference_mode():
        expected, got = model(sample), plan.float_forward(sample)
    if expected.shape != got.shape:
        raise PlanError(f"{type(model).__name__}'s forward is not the chain of its modules in order (its output "
                        f"has shape {tuple(expected.shape)}, the chain's {tuple(got.shape)})")
    if not torch.allclose(expected, got, rtol=1e-4, atol=1e-4):
        raise PlanError(f"{type(model).__name__}'s forward is not the chain of its modules in order (max difference "
                        f"{float((expected - got).abs().max()):.3g})")
    return plan
