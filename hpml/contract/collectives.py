"""Bus bandwidth of collectives, as nccl-tests defines it (doc/PERFORMANCE.md of NVIDIA/nccl-tests).

algbw = bytes / time (GB/s, 1 GB = 1e9 B); busbw = algbw x the collective's bus factor, the share of the
message each rank's link carries, so busbw compares with the link's peak whatever the rank count:

    all_reduce                  2(n-1)/n
    all_gather, reduce_scatter   (n-1)/n
    broadcast, reduce            1
    all_to_all                   (n-1)/n

The factors with (n-1) are 0 for one rank (nccl-tests prints busbw 0 there); broadcast and reduce keep 1, as
nccl-tests' broadcast.cu and reduce.cu do.
"""

from __future__ import annotations

from typing import Callable, Dict

from hpml.contract.units import GB

BUS_FACTORS: Dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def bus_factor(collective: str, n: int) -> float:
    """The factor busbw = algbw x bus_factor(collective, n) for n ranks."""
    if n < 1:
        raise ValueError(f"the number of ranks must be >= 1, got {n}")
    if collective not in BUS_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; one of {sorted(BUS_FACTORS)}")
    return BUS_FACTORS[collective](n)


def algbw_GBps(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth in GB/s: the message's bytes over the time of one collective."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return nbytes / seconds / GB


def busbw_GBps(collective: str, nbytes: float, seconds: float, n: int) -> float:
    """Bus bandwidth in GB/s of one collective of nbytes over n ranks that took `seconds`."""
    return algbw_GBps(nbytes, seconds) * bus_factor(collective, n)
