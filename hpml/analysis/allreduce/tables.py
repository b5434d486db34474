"""The allreduce workload's table, and the Patarasuk & Yuan ring model (also used by the train tables).

Units everywhere: bytes, seconds, and GB/s with 1 GB = 1e9 bytes (nccl-tests' convention, not GiB).

- algbw = S / T: the bytes of the message over the time of one all-reduce.
- busbw = algbw * 2(n-1)/n for all-reduce: what each rank's link carried per second in a ring (each rank sends
  and receives 2(n-1)/n * S bytes), so it is comparable with a link's per-direction peak at any n. 0 for n = 1.
- Ring all-reduce time (Patarasuk & Yuan 2009): T = 2(n-1) * alpha + 2(n-1)/n * S/B, alpha the per-step
  latency and B the per-direction link bandwidth.
- Utilization of a measured all-reduce: 2(n-1)/n * S/T / peak, i.e. busbw / peak. With NVLink SHARP (NCCL's
  NVLS, 8 GPUs) the switch reduces and busbw can exceed the link rate; at <= 4 GPUs NCCL uses rings.

algbw, busbw and the bus factor are contract.collectives' (the workload computes its `derived` block with
the same functions). `allreduce_table` recomputes every number from the raw per-rank arrays of allreduce result documents
(workloads/allreduce/, result schema v1); it never trusts the workload's own `derived` block.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, Iterable, List, NamedTuple, Optional

import pandas as pd

from hpml.analysis.results import WorkloadResults, where
from hpml.analysis.stats import population_std
from hpml.contract.collectives import GB, algbw_GBps, bus_factor

# The table's columns, in order. time_s is the mean over timed iterations of the slowest rank's iteration
# time; time_std_s is the population std (ddof=0) of those iteration times over `iters` iterations (NaN
# for impl=raw, which times only the whole loop).
COLUMNS = ["sweep", "point", "repeat", "world_size", "impl", "dtype", "link", "bytes", "iters", "time_s",
           "time_std_s", "algbw_GBps", "busbw_GBps", "utilization", "correct", "path"]


def ring_allreduce_time(nbytes: float, n: int, bandwidth_GBps: float, latency_s: float) -> float:
    """Seconds for a ring all-reduce of nbytes over n ranks (Patarasuk & Yuan):
    2(n-1) steps of latency plus 2(n-1)/n * S bytes through each rank's link at bandwidth_GBps."""
    if bandwidth_GBps <= 0:
        raise ValueError(f"bandwidth_GBps must be > 0, got {bandwidth_GBps}")
    return 2 * (n - 1) * latency_s + bus_factor("all_reduce", n) * nbytes / (bandwidth_GBps * GB)


def ring_utilization(nbytes: float, seconds: float, n: int, peak_GBps: float) -> float:
    """The share of the link's per-direction peak that a measured all-reduce used: 2(n-1)/n * S/T / peak."""
    if peak_GBps <= 0:
        raise ValueError(f"peak_GBps must be > 0, got {peak_GBps}")
    return algbw_GBps(nbytes, seconds) * bus_factor("all_reduce", n) / peak_GBps


def iteration_times(size: Dict[str, Any]) -> List[float]:
    """The per-iteration times of one size's record, each the slowest rank's (nccl-tests' -a 3).

    impl=raw records only each rank's loop time: one value, the slowest rank's loop / iters.
    """
    per_rank = size["iteration_time_s_per_rank"]
    if per_rank is None:
        return [max(size["loop_time_s_per_rank"]) / size["iters"]]
    if len({len(ranks) for ranks in per_rank}) != 1:
        raise ValueError(f"{size['bytes']} bytes: ranks recorded different numbers of iterations")
    return [max(ranks) for ranks in zip(*per_rank)]


def size_row(size: Dict[str, Any], n: int, peak_GBps: Optional[float]) -> Dict[str, Any]:
    """The derived numbers of one message size (the table's measured columns)."""
    times = iteration_times(size)
    time_s = statistics.fmean(times)
    alg = algbw_GBps(size["bytes"], time_s)
    per_iteration_timed = size["iteration_time_s_per_rank"] is not None
    return {
        "bytes": size["bytes"],
        "iters": size["iters"],
        "time_s": time_s,
        "time_std_s": population_std(times) if per_iteration_timed else math.nan,
        "algbw_GBps": alg,
        "busbw_GBps": alg * bus_factor("all_reduce", n),
        "utilization": ring_utilization(size["bytes"], time_s, n, peak_GBps) if peak_GBps else math.nan,
        "correct": size["correct"],
    }


def allreduce_rows(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per message size of an ok allreduce result document."""
    workload = doc["config"]["workload"]
    n = doc["environment"]["world_size"]
    point = {
        "sweep": doc["identity"]["sweep"], "point": doc["identity"]["point"],
        "repeat": doc["identity"]["repeat"], "world_size": n, "impl": workload["impl"],
        "dtype": workload["dtype"], "link": workload["link"], "path": doc.get("path"),
    }
    return [{**point, **size_row(size, n, workload["link_peak_GBps"])}
            for size in doc["measurements"]["sizes"]]


class BandwidthTable(NamedTuple):
    """rows: one per (result, message size), columns COLUMNS. skipped: ok allreduce results whose
    measurements could not be read, one line each (failed results and other workloads are not for this
    table; the report lists them)."""

    rows: pd.DataFrame
    skipped: List[str]


def allreduce_table(docs: Iterable[Dict[str, Any]]) -> BandwidthTable:
    """The all-reduce bandwidth table of result documents (e.g. analysis.results.load_results(...).rows)."""
    results = WorkloadResults("allreduce", [doc for doc in docs if doc["identity"]["workload"] == "allreduce"])
    table = pd.DataFrame(results.rows(allreduce_rows), columns=COLUMNS)
    table = table.sort_values(["sweep", "point", "repeat", "bytes"], kind="stable", ignore_index=True)
    return BandwidthTable(rows=table, skipped=[f"{where(doc)}: {why}" for doc, why in results.unreadable])
