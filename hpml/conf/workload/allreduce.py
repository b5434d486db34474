"""Schema of the `allreduce` workload (conf/workload/allreduce.yaml; the worker: workloads/allreduce/).

All-reduce bandwidth micro-benchmark, like nccl-tests' all_reduce_perf. No rules against the resources
beyond the shared device/backend ones, and no preflight: WorkloadConfig's hooks as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from hpml.conf.dtypes import DTYPE_BYTES, DType
from hpml.conf.validation import MISSING, require, require_buffer, require_repeats
from hpml.conf.workload_contract import WorkloadConfig


class AllreduceImpl(str, Enum):
    hpml = "hpml"  # hpml's loop: each iteration timed (CUDA events on GPU), no synchronize per iteration
    raw = "raw"  # a bare all_reduce loop timed by wall clock around the whole loop: the reference


@dataclass
class AllreduceConfig(WorkloadConfig):
    """All-reduce bandwidth micro-benchmark (workloads/allreduce/), like nccl-tests' all_reduce_perf."""

    min_bytes: int = MISSING  # smallest message; sizes double from min_bytes up to max_bytes
    max_bytes: int = MISSING  # largest message: min_bytes * 2**k
    dtype: DType = MISSING
    warmup_iters: int = MISSING  # per size, not timed
    iters: int = MISSING  # per size, timed
    impl: AllreduceImpl = MISSING
    # Set together by the `hardware` config group (conf/hardware/<link>.yaml), never by hand:
    link: str = MISSING  # the hardware table's entry; "none" when no peak is known
    link_peak_GBps: Optional[float] = MISSING  # the link's peak per direction, GB/s (1e9 B/s); null: unknown

    def __post_init__(self) -> None:
        element = DTYPE_BYTES[self.dtype]
        require(self.min_bytes >= element and self.min_bytes % element == 0, "workload.min_bytes",
                f"a positive multiple of {element} bytes (one {self.dtype.value} element)", self.min_bytes)
        ratio = self.max_bytes // self.min_bytes
        require(self.max_bytes >= self.min_bytes and self.max_bytes % self.min_bytes == 0
                and ratio & (ratio - 1) == 0, "workload.max_bytes",
                f"workload.min_bytes={self.min_bytes} times a power of 2 (sizes double from min to max)",
                self.max_bytes)
        require_buffer("workload.max_bytes", self.max_bytes, self.max_bytes, "the largest message")
        require(self.warmup_iters >= 0, "workload.warmup_iters", "an integer >= 0", self.warmup_iters)
        require(self.iters >= 1, "workload.iters", "an integer >= 1", self.iters)
        require_repeats(self, ("warmup_iters", "iters"))
        require((self.link == "none") == (self.link_peak_GBps is None), "workload.link_peak_GBps",
                "null exactly when workload.link=none; choose the link with hardware=<name> "
                "(conf/hardware/), which sets both", self.link_peak_GBps)
        require(self.link_peak_GBps is None or self.link_peak_GBps > 0, "workload.link_peak_GBps",
                "a number > 0 (GB/s per direction) or null", self.link_peak_GBps)

    @property
    def sizes_bytes(self) -> List[int]:
        """Every message size, doubling from min_bytes to max_bytes."""
        sizes = [self.min_bytes]
        while sizes[-1] < self.max_bytes:
            sizes.append(sizes[-1] * 2)
        return sizes
