"""Running and timing the stages on the held-out split, and what each stores (its size).

Each stage is a forward function from float images to logits (or int8 logits). It runs over the held-out split in
batches of workload.eval_batch_size under inference_mode: warm-up passes first (untimed), then timed passes,
each one wall-clock interval (time.perf_counter: CPU work is synchronous) around the whole held-out pass. The
predictions are those of the first pass (every pass computes the same).

Times are what this implementation costs on this CPU: hpml's simulated stages run float32 kernels plus the
quantize / dequantize of every tensor, and its integer-only inference runs torch's generic CPU integer matmul
(no int8 SIMD kernel), so neither is a deployment time; torch.ao's quantized modules run the engine's int8
kernels (fbgemm / oneDNN / QNNPACK).
"""

from __future__ import annotations

import io
from typing import Callable, Dict, List, Tuple

import torch

from hpml.workloads.common.timing import wall_s
from hpml.workloads.quantize.fixed_point import Requantizer, power_of_two_exponent
from hpml.workloads.quantize.quantized_net import QuantizedNet

Forward = Callable[[torch.Tensor], torch.Tensor]

TIMING_METHOD = ("per stage: workload.timing_warmup untimed passes over the held-out split, then "
                 "workload.timing_repetitions timed passes, each timed by time.perf_counter() around the whole pass "
                 "(batches of workload.eval_batch_size, inference_mode, torch.get_num_threads() threads)")


def predict(forward: Forward, images: torch.Tensor, batch: int) -> torch.Tensor:
    with torch.inference_mode():
        return torch.cat([forward(images[i:i + batch]).argmax(dim=1) for i in range(0, len(images), batch)])


def timed_passes(forward: Forward, images: torch.Tensor, batch: int, warmup: int,
                 repetitions: int) -> Tuple[List[int], List[float]]:
    """(predictions, seconds of each timed pass). The predictions come from an untimed pass of their own, which
    also warms up (so warmup=0 still runs it); then warmup - 1 more untimed passes."""
    predictions = predict(forward, images, batch)
    for _ in range(warmup - 1):
        predict(forward, images, batch)
    seconds = []
    for _ in range(repetitions):
        start = wall_s()
        predict(forward, images, batch)
        seconds.append(wall_s() - start)
    return predictions.tolist(), seconds


def _saved_size(tensors: Dict[str, torch.Tensor]) -> int:
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    return buffer.getbuffer().nbytes


def stored_tensors(net: QuantizedNet, stage: str) -> Dict[str, torch.Tensor]:
    """What a stage would keep to run, as tensors in their stored dtypes (float32 for floats and scales)."""
    tensors: Dict[str, torch.Tensor] = {}
    if stage in ("w8a8", "w8a8b32", "integer"):
        tensors["input.scale"] = torch.tensor([net.input_scale], dtype=torch.float32)
    for q in net.layers:
        name = q.layer.name
        if stage == "float":
            tensors.update({f"{name}.weight": q.layer.weight.float(), f"{name}.bias": q.layer.bias.float()})
            continue
        tensors[f"{name}.weight"] = q.weight_q
        tensors[f"{name}.bias"] = q.bias_q if stage in ("w8a8b32", "integer") else q.layer.bias.float()
        if stage == "integer":
            tensors.update(requantizer_tensors(q.requant, name))
        else:
            tensors[f"{name}.weight_scale"] = q.weight_scale.float()
        if stage in ("w8a8", "w8a8b32") or (stage == "integer" and q is net.layers[-1]):
            tensors[f"{name}.output_scale"] = torch.tensor([q.output_scale], dtype=torch.float32)
    return tensors


def requantizer_tensors(requant: Requantizer, name: str) -> Dict[str, torch.Tensor]:
    """The integer model's rescaling: a float32 M, a shift alone (power-of-two scales), or M0 and its shift."""
    if requant.kind == "float":
        return {f"{name}.multiplier": torch.tensor(requant.multiplier, dtype=torch.float32)}
    shift = torch.tensor(requant.shift, dtype=torch.int8) if requant.kind == "fixed_point" else \
        torch.tensor([-power_of_two_exponent(m) for m in requant.multiplier], dtype=torch.int8)
    tensors = {f"{name}.shift": shift}
    if requant.kind == "fixed_point":
        tensors[f"{name}.m0"] = torch.tensor(requant.m0, dtype=torch.int32)
    return tensors


def serialized_bytes(net: QuantizedNet, stage: str) -> int:
    """torch.save size of stored_tensors: the payload plus pickle's container overhead."""
    return _saved_size(stored_tensors(net, stage))
