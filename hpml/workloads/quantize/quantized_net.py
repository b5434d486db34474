"""The quantized network: per layer the int8 weights and their scales, the input and output scales from the
calibration activations, the int32 bias with scale s_in * s_w, and the requantizer M = s_in * s_w / s_out.

The activation scales chain: layer 1's input scale is the image's, and layer l+1's input scale is layer l's
output scale (the tensor between them is one tensor, whatever pooling does to it). So there are L + 1 activation
scales for L layers: "an input scale and one output scale per layer".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import torch

from hpml.workloads.quantize.fixed_point import (
    INT8_MAX,
    INT8_MIN,
    INT32_MAX,
    INT32_MIN,
    RangeCheck,
    Requantizer,
    bias_scale,
    check_integer_range,
    clipped_count,
    quantize,
    quantize_bias,
    requantizer,
    scale_from_range,
    value_range,
)
from hpml.workloads.quantize.plan import Layer, Plan


@dataclass(frozen=True)
class ScaleRule:
    """How a range becomes a scale (conf/workload/quantize.py holds the keys)."""

    method: str  # "maxabs" | "sigma"
    k: float
    power_of_two: bool
    per_channel_weights: bool
    requantize: str  # "fixed_point" | "float"

    def scale(self, values: torch.Tensor, per_channel: bool = False) -> tuple:
        """(range, scale), one per tensor or one per index of dim 0."""
        r = value_range(values, self.method, self.k, per_channel)
        return r, scale_from_range(r, self.power_of_two)


@dataclass
class QuantLayer:
    layer: Layer
    weight_q: torch.Tensor  # int8
    weight_scale: torch.Tensor  # float64, 1 value or one per output channel
    weight_range: torch.Tensor
    weight_clipped: int
    input_scale: float
    output_scale: float
    output_range: float
    bias_scale: torch.Tensor  # s_in * s_w
    bias_q: torch.Tensor  # int32
    requant: Requantizer
    int32_bound: int  # the largest |accumulator| any int8 input could give: sum |q_w| * 128 + |q_b|, per channel max

    @property
    def per_channel(self) -> bool:
        return self.weight_scale.numel() > 1


@dataclass
class QuantizedNet:
    plan: Plan
    input_scale: float
    input_range: float
    layers: List[QuantLayer]
    checks: List[RangeCheck]  # the weights' and biases' range checks


def accumulator_bound(weight_q: torch.Tensor, bias_q: torch.Tensor) -> int:
    """max over output channels of sum_j |q_w[c, j]| * 128 + |q_b[c]|: no int8 input (|q_x| <= 128) can push the
    int32 accumulator past it, so when it is below 2^31 the int32 sums cannot overflow, on any data."""
    per_channel = weight_q.long().abs().reshape(weight_q.shape[0], -1).sum(dim=1) * 128 + bias_q.long().abs()
    return int(per_channel.max())


def quantize_layer(layer: Layer, rule: ScaleRule, input_scale: float, output: torch.Tensor) -> QuantLayer:
    w_range, w_scale = rule.scale(layer.weight, rule.per_channel_weights)
    o_range, o_scale = rule.scale(output)
    s_out = float(o_scale)
    w_q = quantize(layer.weight, w_scale)
    b_scale = bias_scale(input_scale, w_scale)
    b_q = quantize_bias(layer.bias, b_scale, f"{layer.name}.bias")
    bound = accumulator_bound(w_q, b_q)
    if bound > INT32_MAX:
        raise OverflowError(f"{layer.name}: an int32 accumulator could reach {bound} (> 2^31 - 1)")
    multipliers = (input_scale * w_scale / s_out).tolist()
    return QuantLayer(layer, w_q, w_scale, w_range, clipped_count(layer.weight, w_scale), input_scale, s_out,
                      float(o_range), b_scale, b_q, requantizer(multipliers, rule.requantize), bound)


def quantize_net(plan: Plan, activations: List[torch.Tensor], rule: ScaleRule) -> QuantizedNet:
    """activations: calibration.calibration_activations' list (the input, then each layer's output)."""
    in_range, in_scale = rule.scale(activations[0])
    layers: List[QuantLayer] = []
    scale = float(in_scale)
    for layer, output in zip(plan.layers, activations[1:]):
        layers.append(quantize_layer(layer, rule, scale, output))
        scale = layers[-1].output_scale
    checks = []
    for q in layers:
        checks.append(check_integer_range(f"{q.layer.name}.weight", q.weight_q, INT8_MIN, INT8_MAX, q.weight_clipped))
        checks.append(check_integer_range(f"{q.layer.name}.bias", q.bias_q, INT32_MIN, INT32_MAX))
    return QuantizedNet(plan, float(in_scale), float(in_range), layers, checks)


def layer_record(q: QuantLayer) -> Dict:
    """The scales and the requantizer of one layer, as result.json keeps them."""
    return {"weight_scale": q.weight_scale.tolist(), "weight_range": q.weight_range.tolist(),
            "input_scale": q.input_scale, "output_scale": q.output_scale, "output_range": q.output_range,
            "bias_scale": q.bias_scale.tolist(), "requantize": q.requant.as_dict(), "int32_bound": q.int32_bound,
            "weights": q.weight_q.numel(), "biases": q.bias_q.numel(), "weight_clipped": q.weight_clipped}
