"""The cuda_vecadd report's numbers, recomputed from each result's raw per-repetition arrays (never `derived`).

Per case (size K, launch shape, memory mode; the CPU's cases have shape "cpu"):
- total of a repetition = alloc + h2d + kernel + d2h + free (conf.workload.cuda_vecadd.repetition_totals; a
  part the mode lacks counts 0); median [min, max] over the timed repetitions, n = their count;
- each part: its median over the repetitions;
- kernel bandwidth = 3 x 4 x K bytes / median kernel time (reads a and b, writes c), GB/s with GB = 1e9 B;
- % of peak = kernel GB/s / the device's published memory bandwidth (result.json's measurements.gpu.peak,
  from conf/hardware/gpu_peaks.py; none: no entry for the device);
- % of copy = kernel GB/s / the device-to-device copy's GB/s at the same K in the same run, the copy's being
  2 x its bytes (read + written) / its median time.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, List, Mapping, Optional

from hpml.analysis.results import where
from hpml.contract.vecadd_format import copy_GBps, kernel_GBps, repetition_totals

PARTS = ("alloc_s", "fill_s", "h2d_s", "kernel_s", "kernel_resident_s", "d2h_s", "free_s")

IDENTITY = ["sweep", "point", "repeat", "result"]  # result: its result.json (analysis.results.where)
CASE_COLUMNS = (IDENTITY + ["device", "build", "elements", "K_m", "shape", "memory", "n",
                 "total_median_s", "total_min_s", "total_max_s", "kernel_min_s", "kernel_max_s"]
                + [f"{part[:-2]}_median_s" for part in PARTS]
                + ["kernel_GBps", "resident_GBps", "peak_GBps", "of_peak", "copy_GBps", "of_copy", "mismatches"])
COPY_COLUMNS = IDENTITY + ["elements", "K_m", "bytes", "n", "copy_median_s",
                "copy_GBps", "copy_min_GBps", "copy_max_GBps"]


def median_or_nan(values: Optional[List[float]]) -> float:
    return statistics.median(values) if values else math.nan


def _identity(doc: Mapping[str, Any]) -> Dict[str, Any]:
    identity = doc["identity"]
    return {"sweep": identity["sweep"], "point": identity["point"], "repeat": identity["repeat"],
            "result": where(doc)}


def copy_rows(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One row per size's device-to-device copy of an ok cuda_vecadd result ([] for a CPU point)."""
    gpu = doc["measurements"]["gpu"]
    rows = []
    for copy in gpu["copies"] if gpu else []:
        times = copy["copy_s"]
        rows.append({**_identity(doc), "elements": copy["elements"], "K_m": copy["elements"] / 1e6,
                     "bytes": copy["bytes"], "n": len(times), "copy_median_s": statistics.median(times),
                     "copy_GBps": copy_GBps(copy["bytes"], statistics.median(times)),
                     "copy_min_GBps": copy_GBps(copy["bytes"], max(times)),
                     "copy_max_GBps": copy_GBps(copy["bytes"], min(times))})
    return rows


def case_row(case: Mapping[str, Any], peak: Optional[float], copy: Optional[float]) -> Dict[str, Any]:
    """peak: the published memory GB/s; copy: the same run's copy GB/s at this size (None: none)."""
    totals = repetition_totals(case)
    kernel_s = statistics.median(case["kernel_s"])
    bandwidth = kernel_GBps(case["elements"], kernel_s)
    return {"elements": case["elements"], "K_m": case["elements"] / 1e6, "shape": case["shape"],
            "memory": case["memory"], "n": len(totals), "total_median_s": statistics.median(totals),
            "total_min_s": min(totals), "total_max_s": max(totals), "kernel_min_s": min(case["kernel_s"]),
            "kernel_max_s": max(case["kernel_s"]),
            **{f"{part[:-2]}_median_s": median_or_nan(case[part]) for part in PARTS},
            "kernel_GBps": bandwidth,
            "resident_GBps": kernel_GBps(case["elements"], statistics.median(case["kernel_resident_s"]))
            if case["kernel_resident_s"] else math.nan,
            "peak_GBps": peak or math.nan,
            "of_peak": bandwidth / peak if peak else math.nan,
            "copy_GBps": copy or math.nan, "of_copy": bandwidth / copy if copy else math.nan,
            "mismatches": sum(case["mismatches"])}


def case_rows(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One row per case of an ok cuda_vecadd result: the GPU grid's, then the CPU baseline's."""
    gpu, cpu = doc["measurements"]["gpu"], doc["measurements"]["cpu"]
    rows = []
    if gpu:
        peak = gpu["peak"]["memory_GBps"] if gpu["peak"] else None
        copies = {row["elements"]: row["copy_GBps"] for row in copy_rows(doc)}
        for case in gpu["cases"]:
            rows.append({**_identity(doc), "device": gpu["device"]["name"], "build": gpu["build"]["path"],
                         **case_row(case, peak, copies.get(case["elements"]))})
    for case in cpu["cases"] if cpu else []:
        rows.append({**_identity(doc), "device": "cpu", "build": cpu["build"]["path"],
                     **case_row(case, None, None)})
    return rows


INFO_COLUMNS = IDENTITY + ["device", "cc", "peak", "builds", "gpu_wall_s", "cpu_wall_s"]


def point_info(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One row per ok result: its device, published peak (or None), build records and programs' wall times."""
    gpu, cpu = doc["measurements"]["gpu"], doc["measurements"]["cpu"]
    return [{**_identity(doc), "device": gpu["device"]["name"] if gpu else "CPU",
             "cc": gpu["device"]["compute_capability"] if gpu else None, "peak": gpu["peak"] if gpu else None,
             "builds": [block["build"] for block in (gpu, cpu) if block],
             "gpu_wall_s": gpu["program_wall_s"] if gpu else None, "cpu_wall_s": cpu["program_wall_s"] if cpu else None}]
