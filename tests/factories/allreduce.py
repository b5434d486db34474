"""All-reduce results (workloads/allreduce/) whose per-rank times per message size are chosen by the test."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from tests.factories import envelope


def allreduce_result(point: int, sizes: Sequence[Dict[str, Any]], *, world_size: int = 4, impl: str = "hpml",
                     link: str = "none", peak: Optional[float] = None, status: str = "ok", sweep: str = "bw",
                     dtype: str = "float32") -> Dict[str, Any]:
    """sizes: measurements.sizes, one record per message size ({bytes, iters, correct,
    loop_time_s_per_rank, iteration_time_s_per_rank})."""
    workload = {"name": "allreduce", "impl": impl, "dtype": dtype, "link": link, "link_peak_GBps": peak}
    doc = envelope(workload, point=point, sweep=sweep, workers_per_node=world_size, gpus_per_node=world_size,
                   status=status, reason=None if status == "ok" else "boom",
                   environment={"backend": "nccl", "device": "cuda"})
    if status == "ok":
        doc["measurements"] = {"dtype": dtype, "sizes": list(sizes)}
    doc["derived"] = {"sizes": [{"busbw_GBps": 1e9}]}  # wrong on purpose: the analysis must recompute
    return doc
