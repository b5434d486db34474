"""The probe's tables from result documents: every rate recomputed from the raw per-repetition times.

Formulas (conf/hardware/gpu_peaks.py, the ones the workload uses): per repetition, TFLOP/s = 2 n^3 / t / 1e12
and GB/s = bytes moved / t / 1e9 (copy: 2 x the buffer, triad: 3 x an array, host transfers: the buffer);
a quantity's median, min and max are over its repetitions' rates (n of them). The published peak comes from the
result itself (measurements.devices[].published, the table entry as the run saw it) and is per board: a
device's share is the board's number / devices_per_board. percent of peak = median / that per-device peak.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, List, Mapping, Optional

import pandas as pd

from hpml.analysis.stats import median_spread
from hpml.contract.rates import GBps, tflops_per_s

BAR = 0.05  # issue 14: the probe's bf16 matmul within 5 % of torch.matmul timed by another method

POINT_KEYS = ["sweep", "point", "repeat", "rank", "gpu", "published", "warmup_s", "measure_s"]
PEAK_COLUMNS = POINT_KEYS + ["quantity", "unit", "n", "median", "min", "max", "peak", "of_peak", "path"]
REFERENCE_COLUMNS = POINT_KEYS + ["dtype", "n", "probe_tflops", "reference_tflops", "ratio", "within_bar", "path"]
TRANSFER_NAMES = {("h2d", True): "H2D pinned", ("h2d", False): "H2D pageable",
                  ("d2h", True): "D2H pinned", ("d2h", False): "D2H pageable"}


def rates(work: float, times_s: List[float], formula) -> List[float]:
    """One rate per repetition: formula(work, t)."""
    if not times_s:
        raise ValueError("no timed repetitions")
    return [formula(work, t) for t in times_s]


def per_device_peak(published: Optional[Mapping[str, Any]], key: str, dtype: Optional[str] = None) -> float:
    """The published peak of one CUDA device (the board's / devices_per_board); NaN where there is none."""
    if published is None:
        return math.nan
    value = published["tflops"][dtype] if dtype else published[key]
    return math.nan if value is None else value / published["devices_per_board"]


def _row(point: Dict[str, Any], quantity: str, unit: str, values: List[float], peak: float) -> Dict[str, Any]:
    summary = median_spread(values)
    return {**point, "quantity": quantity, "unit": unit, **summary, "peak": peak,
            "of_peak": summary["median"] / peak if peak > 0 else math.nan}


def _point(doc: Mapping[str, Any], device: Mapping[str, Any]) -> Dict[str, Any]:
    published, workload = device["published"], doc["config"]["workload"]
    return {"sweep": doc["identity"]["sweep"], "point": doc["identity"]["point"],
            "repeat": doc["identity"]["repeat"], "rank": device["rank"], "gpu": device["device"]["name"],
            "published": published["key"] if published else "none",
            # the warm-up and timed windows (seconds at least); NaN in results of the first probe version, which
            # had neither (warmup_s) or only the first (measure_s): docs/results/probe/README.md
            "warmup_s": workload.get("warmup_s", math.nan), "measure_s": workload.get("measure_s", math.nan),
            "path": doc.get("path")}


def peak_rows(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One row per (device, quantity) of an ok probe result: matmul per dtype, copy, triad, host transfers."""
    rows = []
    for device in doc["measurements"]["devices"]:
        point, published = _point(doc, device), device["published"]
        for dtype, both in device["matmul"].items():
            probe = both["probe"]
            rows.append(_row(point, f"matmul {dtype} (n={probe['n']})", "TFLOP/s",
                             rates(probe["flops"], probe["times_s"], tflops_per_s),
                             per_device_peak(published, "tflops", dtype)))
        for kind in ("copy", "triad"):
            rows.append(_row(point, f"memory {kind}", "GB/s",
                             rates(device[kind]["bytes_moved"], device[kind]["times_s"], GBps),
                             per_device_peak(published, "memory_GBps")))
        for transfer in device["transfers"] or []:
            rows.append(_row(point, TRANSFER_NAMES[transfer["direction"], transfer["pinned"]], "GB/s",
                             rates(transfer["bytes_moved"], transfer["times_s"], GBps),
                             per_device_peak(published, "host_link_GBps")))
    return rows


def reference_rows(doc: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Per device and dtype: the probe's matmul (CUDA events) against torch.matmul by wall clock, medians."""
    rows = []
    for device in doc["measurements"]["devices"]:
        point = _point(doc, device)
        for dtype, both in device["matmul"].items():
            probe = statistics.median(rates(both["probe"]["flops"], both["probe"]["times_s"], tflops_per_s))
            reference = statistics.median(rates(both["reference"]["flops"], both["reference"]["times_s"],
                                                tflops_per_s))
            ratio = probe / reference
            rows.append({**point, "dtype": dtype, "n": len(both["probe"]["times_s"]), "probe_tflops": probe,
                         "reference_tflops": reference, "ratio": ratio, "within_bar": abs(ratio - 1) <= BAR})
    return rows


def frame(rows: List[Dict[str, Any]], columns: List[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)
