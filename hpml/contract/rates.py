"""Rates in the units every report uses, shared by the workers that measure and the analysis that recomputes:
TFLOP/s (1e12 FLOP/s) and GB/s (1e9 B/s, not GiB/s), the units of datasheets and of nccl-tests' busbw.
"""

from __future__ import annotations

from hpml.contract.units import GB

TFLOP = 1e12  # FLOP/s per TFLOP/s
GFLOP = 1e9  # FLOPs per GFLOP, as the per-layer figures show a layer's work


def matmul_flops(n: int) -> int:
    """FLOPs of one square n x n x n matrix product: n^2 outputs, each n multiplies and n adds = 2 n^3."""
    return 2 * n ** 3


def tflops_per_s(flops: float, seconds: float) -> float:
    """TFLOP/s (1e12 FLOP/s) of `flops` done in `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return flops / seconds / TFLOP


def GBps(nbytes: float, seconds: float) -> float:
    """GB/s (1e9 B/s) of `nbytes` moved in `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return nbytes / seconds / GB
