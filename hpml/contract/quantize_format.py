"""What the quantize workload's result holds and the formulas its worker and its report share (the report
recomputes every number from the raw arrays with these).

measurements (result.json), besides the model, data and training records:

    labels                    the held-out labels, in order
    stages.<stage>            {"predictions": [class per held-out image], "inference_s": [seconds per timed
                              held-out pass], "serialized_bytes": torch.save size of what the stage stores}
    input                     the image's activation summary (count, min, max, mean, std, max_abs, histogram)
                              with its "scale" and "range"
    layers[i]                 name, kind, weight_shape, relu, "weight" and "output" summaries, "weight_scale"
                              (1 value, or one per output channel), "weight_range", "input_scale", "output_scale",
                              "output_range", "bias_scale", "requantize" {kind, multiplier, m0, shift},
                              "int32_bound", "weights" and "biases" (counts)
    checks                    every quantized tensor's range check {tensor, dtype, lo, hi, min, max, values,
                              clipped, integer, in_range}
    torch_ao                  {"available", "reason" (one line when not), "engine", "notes"}; when available also
                              "engine_reason" (why that engine, one line) and "engines_exact" ({engine: whether
                              it computes full-range int8 sums exactly on this CPU}; torch_ao.computes_exactly)

Stages: STAGES are hpml's (simulated in float32, then the integer-only inference), TORCH_AO_STAGES the
cross-check's (workloads/quantize/torch_ao.py).
"""

from __future__ import annotations

from typing import Mapping, Sequence

STAGES = ("float", "w8", "w8a8", "w8a8b32", "integer")
TORCH_AO_STAGES = ("torch_ao_own", "torch_ao_hpml")
STAGE_TITLES = {
    "float": "float (fp32)",
    "w8": "W8: int8 weights",
    "w8a8": "W8A8: + int8 activations",
    "w8a8b32": "W8A8B32: + int32 biases",
    "integer": "integer-only (W8A8B32 in integer arithmetic)",
    "torch_ao_own": "torch.ao, its own observers",
    "torch_ao_hpml": "torch.ao with hpml's scales",
}

FLOAT_BYTES = 4  # float32 weights, biases and scales
INT8_BYTES = 1
INT32_BYTES = 4  # int32 biases, fixed-point multipliers M0
SHIFT_BYTES = 1  # a requantization shift (0..62)


def requantizer_bytes(kind: str) -> int:
    """Bytes per multiplier of the integer-only model: M0 and its shift, a shift alone, or a float32 M."""
    return {"fixed_point": INT32_BYTES + SHIFT_BYTES, "shift": SHIFT_BYTES, "float": FLOAT_BYTES}[kind]


def payload_bytes(stage: str, layers: Sequence[Mapping]) -> int:
    """Bytes of the numbers a stage must store (tensor contents only, no container overhead); each layer gives
    "weights" and "biases" (counts), "weight_scale" (its list) and "requantize"["kind"]:

        float     4 (W + B)
        w8        W + 4 B + 4 S                      S: the weight scales, 1 per layer or 1 per output channel
        w8a8      W + 4 B + 4 S + 4 (L + 1)          L + 1 activation scales (the input and each layer's output)
        w8a8b32   the same: an int32 bias is as large as a float32 one, and its scale s_in s_w is not stored
        integer   W + 4 B + m S + 4 + 4              m bytes per requantizer (requantizer_bytes), the input scale
                                                     (to quantize the image) and the output scale (logits)
    """
    weights = sum(layer["weights"] for layer in layers)
    biases = sum(layer["biases"] for layer in layers)
    scales = sum(len(layer["weight_scale"]) for layer in layers)
    if stage == "float":
        return FLOAT_BYTES * (weights + biases)
    packed = INT8_BYTES * weights + FLOAT_BYTES * biases  # int32 biases: the same 4 bytes
    if stage == "w8":
        return packed + FLOAT_BYTES * scales
    if stage in ("w8a8", "w8a8b32"):
        return packed + FLOAT_BYTES * (scales + len(layers) + 1)
    if stage == "integer":
        per_multiplier = sum(requantizer_bytes(layer["requantize"]["kind"]) * len(layer["weight_scale"])
                             for layer in layers)
        return packed + per_multiplier + 2 * FLOAT_BYTES
    raise ValueError(f"no payload formula for stage {stage!r}")


def top1(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """The share of predictions equal to their label (0-1)."""
    if len(predictions) != len(labels) or not labels:
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    return sum(int(p) == int(y) for p, y in zip(predictions, labels)) / len(labels)


def agreement(a: Sequence[int], b: Sequence[int]) -> float:
    """The share of images two stages predict the same class for (0-1)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"{len(a)} predictions against {len(b)}")
    return sum(int(x) == int(y) for x, y in zip(a, b)) / len(a)
