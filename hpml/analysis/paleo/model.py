"""PALEO's per-layer time model and the numbers the report derives from measured times (one home, tested in
tests/test_paleo_model.py against hand-computed values).

Qi, Sparks and Talwalkar, "Paleo: A Performance Model for Deep Neural Networks", ICLR 2017: a layer's time is
the time of its arithmetic at the platform's share of the peak, plus the time to move its data at the memory
bandwidth:

    predicted = FLOPs / (PPP x peak FLOP/s)  +  bytes / bandwidth
    bytes     = input bytes + parameter bytes + output (activation) bytes

Memory traffic counts each tensor once: the layer reads its inputs and its parameters once and writes its
output once (no cache reuse, no re-reads; PALEO's code, TalwalkarLab/paleo flops_profiler.py, sums the same
three). PALEO's code also divides the memory term by a PPP; here PPP scales the compute term only.

PPP, the platform percent of peak, is the share of the peak FLOP/s that a layer (or a network) reaches:

    achieved PPP = FLOPs / (measured seconds x peak FLOP/s)

defined only where there are FLOPs (a ReLU or a pooling layer does no counted FLOPs: None). The error of a
prediction is signed and relative to the measurement: (predicted - measured) / measured (-0.5: predicted half
the measured time; +1.0: twice).

The study's back-of-the-envelope inference time is the FLOPs of one image at a GPU's published peak:
FLOPs per image / peak FLOP/s (no PPP, no memory term: the fastest the arithmetic could go).

Units: seconds, FLOPs, bytes; peaks in TFLOP/s (1e12 FLOP/s) and GB/s (1e9 B/s), as conf/hardware writes them;
measured rates (matmul TFLOP/s, copy GB/s) are conf.hardware.gpu_peaks' tflops_per_s and GBps.
"""

from __future__ import annotations

import math
from typing import Optional

from hpml.contract.rates import GB, TFLOP


def memory_bytes(input_bytes: int, param_bytes: int, activation_bytes: int) -> int:
    """The bytes a layer moves: its inputs and parameters read once, its output written once."""
    return input_bytes + param_bytes + activation_bytes


def compute_time_s(flops: float, peak_tflops: float, ppp: float) -> float:
    """FLOPs / (PPP x peak): the arithmetic's time at a share PPP of the peak."""
    if peak_tflops <= 0 or not 0 < ppp <= 1:
        raise ValueError(f"need peak_tflops > 0 and 0 < ppp <= 1, got {peak_tflops}, {ppp}")
    return flops / (ppp * peak_tflops * TFLOP)


def memory_time_s(nbytes: float, bandwidth_GBps: float) -> float:
    """bytes / bandwidth."""
    if bandwidth_GBps <= 0:
        raise ValueError(f"bandwidth_GBps must be > 0, got {bandwidth_GBps}")
    return nbytes / (bandwidth_GBps * GB)


def predicted_time_s(flops: float, nbytes: float, peak_tflops: float, bandwidth_GBps: float, ppp: float) -> float:
    """PALEO's layer time: FLOPs / (PPP x peak) + bytes / bandwidth."""
    return compute_time_s(flops, peak_tflops, ppp) + memory_time_s(nbytes, bandwidth_GBps)


def achieved_ppp(flops: float, seconds: float, peak_tflops: float) -> Optional[float]:
    """FLOPs / (seconds x peak): the share of the peak reached; None without FLOPs."""
    if flops <= 0:
        return None
    if seconds <= 0 or peak_tflops <= 0:
        raise ValueError(f"need seconds > 0 and peak_tflops > 0, got {seconds}, {peak_tflops}")
    return flops / (seconds * peak_tflops * TFLOP)


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured, signed."""
    if measured <= 0:
        raise ValueError(f"measured must be > 0, got {measured}")
    return (predicted - measured) / measured


def time_per_image_s(flops_per_image: float, peak_tflops: float) -> float:
    """The study's inference time per image: FLOPs of one image / the published peak FLOP/s."""
    if peak_tflops <= 0:
        raise ValueError(f"peak_tflops must be > 0, got {peak_tflops}")
    return flops_per_image / (peak_tflops * TFLOP)


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0 (a table cell, not a crash)."""
    return numerator / denominator if denominator else math.nan
