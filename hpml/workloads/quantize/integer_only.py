"""The integer-only inference of the last stage (W8A8B32): integers from the quantized image to the int8 logits.

Per layer: the int8 input and int8 weights are multiplied and summed in int32 (a convolution as an int32 matrix
product of the input's patches, torch's CPU integer matmul: no float anywhere), the int32 bias is added, the
accumulator is rescaled by the layer's requantizer (fixed point: int64 product with M0 and a rounding shift; or a
pure shift with power-of-two scales; or float32, as fbgemm, when workload.requantize=float) and clamped to int8;
ReLU is max(q, 0) (the zero point is 0); max-pooling is the max of the integers; a global average is the
window's int sum divided by its size, rounded half to even, on the same grid. The only float is at the edges:
the image is quantized by its scale, and the int8 logits' argmax is the prediction.

Overflow: quantized_net.accumulator_bound proves per layer that no int8 input can push the int32 sum past 2^31
(the homework CNN: at most 6.5 M); torch's int32 matmul wraps silently, so that proof is what makes it exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from hpml.workloads.quantize.fixed_point import (
    INT8_MAX,
    INT8_MIN,
    check_integer_range,
    clipped_count,
    quantize,
    rounding_divide,
)
from hpml.workloads.quantize.plan import Layer, Pool
from hpml.workloads.quantize.quantized_net import QuantizedNet, QuantLayer


def int_conv2d(x: torch.Tensor, w: torch.Tensor, stride: tuple, padding: tuple) -> torch.Tensor:
    """Convolution of int32 tensors in int32: zero padding (0 is the integer of 0.0), the input's k x k patches
    (Tensor.unfold works on any dtype) times the weights as one int32 matrix product."""
    n, _, _, _ = x.shape
    out_channels, _, kh, kw = w.shape
    x = torch.nn.functional.pad(x, (padding[1], padding[1], padding[0], padding[0]))
    patches = x.unfold(2, kh, stride[0]).unfold(3, kw, stride[1])  # N x C x OH x OW x kh x kw
    oh, ow = patches.shape[2], patches.shape[3]
    rows = patches.permute(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, -1)
    acc = rows @ w.reshape(out_channels, -1).t()
    return acc.reshape(n, oh, ow, out_channels).permute(0, 3, 1, 2)


def int_max_pool(x: torch.Tensor, kernel: tuple, stride: tuple) -> torch.Tensor:
    return x.unfold(2, kernel[0], stride[0]).unfold(3, kernel[1], stride[1]).amax(dim=(-1, -2))


def int_global_average(x: torch.Tensor) -> torch.Tensor:
    window = x.shape[2] * x.shape[3]
    return rounding_divide(x.long().sum(dim=(2, 3), keepdim=True), window).to(torch.int32)


@dataclass
class Observed:
    """What the integer path produced, per tensor, over every image it saw: the output's dtype and extremes, how
    many requantized values left int8 and were clamped (saturation), and the largest |int32 accumulator| (below
    the layer's int32_bound by construction)."""

    dtype: Dict[str, torch.dtype] = field(default_factory=dict)
    min: Dict[str, int] = field(default_factory=dict)
    max: Dict[str, int] = field(default_factory=dict)
    values: Dict[str, int] = field(default_factory=dict)
    clipped: Dict[str, int] = field(default_factory=dict)
    max_abs_acc: Dict[str, int] = field(default_factory=dict)

    def add(self, name: str, out: torch.Tensor, clipped: int, acc: Optional[torch.Tensor] = None) -> None:
        self.dtype[name] = out.dtype
        self.min[name] = min(self.min.get(name, INT8_MAX), int(out.min()))
        self.max[name] = max(self.max.get(name, INT8_MIN), int(out.max()))
        self.values[name] = self.values.get(name, 0) + out.numel()
        self.clipped[name] = self.clipped.get(name, 0) + clipped
        if acc is not None:
            self.max_abs_acc[name] = max(self.max_abs_acc.get(name, 0), int(acc.long().abs().max()))

    def checks(self, net: QuantizedNet) -> List[dict]:
        """The range check of the quantized input and of every layer's int8 output; QuantizationError if one is
        not an int8 in range."""
        bounds = {f"{q.layer.name}.output": q.int32_bound for q in net.layers}
        rows = []
        for name in self.dtype:
            check = check_integer_range(name, torch.tensor([self.min[name], self.max[name]], dtype=self.dtype[name]),
                                        INT8_MIN, INT8_MAX, self.clipped[name])
            row = {**check.as_dict(), "values": self.values[name]}
            if name in bounds:
                row.update(max_abs_accumulator=self.max_abs_acc[name], int32_bound=bounds[name])
            rows.append(row)
        return rows


def int_layer(q: QuantLayer, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(int32 accumulator with the bias, requantized values before the clamp, int8 output) of one layer."""
    w = q.weight_q.to(torch.int32)
    if q.layer.kind == "conv":
        acc = int_conv2d(x.to(torch.int32), w, q.layer.stride, q.layer.padding) + q.bias_q.reshape(1, -1, 1, 1)
    else:
        acc = x.to(torch.int32) @ w.t() + q.bias_q.reshape(1, -1)
    requantized = q.requant.apply(acc, channel_dim=1)
    out = requantized.clamp(INT8_MIN, INT8_MAX)
    if q.layer.relu:
        out = out.clamp(min=0)
    return acc, requantized, out.to(torch.int8)


def integer_forward(net: QuantizedNet, images: torch.Tensor, observed: Optional[Observed] = None) -> torch.Tensor:
    """int8 logits of float images (quantized here with the input scale: the one float step at the edge)."""
    scale = torch.tensor(net.input_scale)
    x = quantize(images, scale)
    if observed is not None:
        observed.add("input", x, clipped_count(images, scale))
    layers = iter(net.layers)
    for op in net.plan.ops:
        if isinstance(op, Layer):
            q = next(layers)
            acc, requantized, x = int_layer(q, x)
            if observed is not None:
                clipped = int(((requantized < INT8_MIN) | (requantized > INT8_MAX)).sum())
                observed.add(f"{q.layer.name}.output", x, clipped, acc)
        elif isinstance(op, Pool):
            x = int_max_pool(x, op.kernel, op.stride) if op.kind == "max" else int_global_average(x).to(torch.int8)
        else:
            x = torch.flatten(x, 1)
    return x
