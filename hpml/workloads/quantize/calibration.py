"""What the float model's tensors look like: the activations over the calibration set and the weights, as the
numbers the scales come from (max|x|, mean, std) and the histograms the report draws.

Activations are the float model's own (not the quantized model's): the input image, and each layer's output
after its ReLU (before pooling: max-pooling picks values of the same grid, so the next layer's input has the same
scale). The values of the whole calibration set are kept in memory while their summary is made (the homework
CNN: 3.3 M floats for 512 images).
"""

from __future__ import annotations

from typing import Dict, List

import torch

from hpml.workloads.quantize.plan import Layer, Plan


def summary(values: torch.Tensor, bins: int) -> Dict:
    """{count, min, max, mean, std (ddof=0), max_abs, histogram: {lo, hi, counts}} over every value; the
    histogram has `bins` equal bins from min to max (both ends included)."""
    flat = values.detach().double().reshape(-1)
    lo, hi = float(flat.min()), float(flat.max())
    counts = torch.histc(flat, bins=bins, min=lo, max=hi if hi > lo else lo + 1.0)
    return {"count": flat.numel(), "min": lo, "max": hi, "mean": float(flat.mean()),
            "std": float(flat.std(unbiased=False)), "max_abs": float(flat.abs().max()),
            "histogram": {"lo": lo, "hi": hi if hi > lo else lo + 1.0, "counts": [int(c) for c in counts.tolist()]}}


def calibration_activations(plan: Plan, images: torch.Tensor, batch: int) -> List[torch.Tensor]:
    """[the input images, layer 1's output, layer 2's output, ...] over `images`, in float32 on the CPU."""
    outputs: List[List[torch.Tensor]] = [[] for _ in plan.layers]
    with torch.inference_mode():
        for start in range(0, len(images), batch):
            x = images[start:start + batch]
            index = 0
            for op in plan.ops:
                x = op.float_forward(x)
                if isinstance(op, Layer):
                    outputs[index].append(x)
                    index += 1
    return [images] + [torch.cat(chunks) for chunks in outputs]
