"""The cuda_vecadd workload's numbers that its worker writes and its report recomputes: the bytes a vector add
moves, the bandwidths, and which parts of a repetition make up "the whole program".
"""

from __future__ import annotations

from typing import Any, List, Mapping

from hpml.contract.rates import GBps

FLOAT_BYTES = 4


def kernel_bytes(elements: int) -> int:
    """Bytes one vector add moves through memory: reads a and b, writes c, 4 bytes each: 3 x 4 x K."""
    return 3 * FLOAT_BYTES * elements


def kernel_GBps(elements: int, seconds: float) -> float:
    """The kernel's bandwidth: 3 x 4 x K bytes / its time, GB/s (1e9 B/s)."""
    return GBps(kernel_bytes(elements), seconds)


def copy_GBps(copied_bytes: int, seconds: float) -> float:
    """A device-to-device copy reads and writes its bytes: 2 x bytes / time, GB/s (1e9 B/s)."""
    return GBps(2 * copied_bytes, seconds)


# The parts of one repetition that make up "the whole program" (result.json's per-repetition arrays, in
# seconds); a part a memory mode lacks (null: no host-to-device copy under managed memory) counts 0. The
# host's fill of the inputs and the check of the sum are outside it. The worker's `derived` and the report
# both add them up here.
TOTAL_PARTS = ("alloc_s", "h2d_s", "kernel_s", "d2h_s", "free_s")


def repetition_totals(case: Mapping[str, Any]) -> List[float]:
    """Per timed repetition of a case: alloc + h2d + kernel + d2h + free, seconds."""
    columns = [case[part] for part in TOTAL_PARTS if case[part] is not None]
    if len({len(column) for column in columns}) != 1:
        raise ValueError(f"{case['shape']}/{case['memory']} at {case['elements']} elements: the parts have "
                         "different numbers of repetitions")
    return [sum(values) for values in zip(*columns)]
