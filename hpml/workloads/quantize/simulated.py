"""The simulated stages: the float network with some of its tensors replaced by what their int8 / int32 versions
hold (q * s), computed in float32. What each stage quantizes:

    float     nothing
    w8        the weights (int8, one scale per layer or per output channel)
    w8a8      + the input and every layer's output (int8; ReLU before the output is quantized)
    w8a8b32   + the biases (int32 with scale s_in * s_w)

A global average pool's output is put back on its input's grid (same scale) in the stages that quantize
activations: the integer-only inference averages int8 values into an int8 (integer_only.py), and this keeps the
two paths the same computation.
"""

from __future__ import annotations

from typing import Dict

import torch

from hpml.workloads.quantize.fixed_point import dequantize, fake_quantize
from hpml.workloads.quantize.plan import Layer, Pool
from hpml.workloads.quantize.quantized_net import QuantizedNet

SIMULATED: Dict[str, Dict[str, bool]] = {
    "float": {"weights": False, "activations": False, "biases": False},
    "w8": {"weights": True, "activations": False, "biases": False},
    "w8a8": {"weights": True, "activations": True, "biases": False},
    "w8a8b32": {"weights": True, "activations": True, "biases": True},
}


def simulated_forward(net: QuantizedNet, x: torch.Tensor, weights: bool, activations: bool,
                      biases: bool) -> torch.Tensor:
    """Logits (float32) of the stage that quantizes the named parts."""
    scale = net.input_scale
    if activations:
        x = fake_quantize(x, torch.tensor(scale))
    layers = iter(net.layers)
    for op in net.plan.ops:
        if isinstance(op, Layer):
            q = next(layers)
            w = dequantize(q.weight_q, q.weight_scale) if weights else None
            b = dequantize(q.bias_q, q.bias_scale) if biases else None
            x = op.float_forward(x, w, b)
            scale = q.output_scale
            if activations:
                x = fake_quantize(x, torch.tensor(scale))
        else:
            x = op.float_forward(x)
            if activations and isinstance(op, Pool) and op.kind == "global_avg":
                x = fake_quantize(x, torch.tensor(scale))
    return x


def stage_forward(net: QuantizedNet, stage: str):
    """forward(x) -> logits of one simulated stage."""
    parts = SIMULATED[stage]
    return lambda x: simulated_forward(net, x, **parts)
