"""The paleo workload's tables, recomputed from the raw arrays of its results (never from `derived`).

One result (a model, batch and dtype on one device) gives one `PointTables`: a row per layer call, one summary
row, one row of platform peaks and one row of the study's reference-GPU answer. The formulas are
analysis.paleo.model's; the statistic of repeated times is the median, with min and max and n beside it.

Peaks, per result, two sources:
- published: conf/hardware/gpu_peaks.py's entry of the device (recorded by the worker): the dense TFLOP/s of
  the run's matmul dtype (fp32 with TF32 off, tf32, bf16, fp16) and the memory GB/s. None off a known GPU or
  where the GPU has no rate for the dtype.
- measured: the same run's n x n x n matmul in that dtype, 2 n^3 FLOPs / its median time, and its device copy,
  2 x bytes / its median time (workloads/common/device_peaks.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from hpml.analysis.paleo.model import (
    achieved_ppp,
    compute_time_s,
    memory_bytes,
    predicted_time_s,
    ratio,
    relative_error,
    time_per_image_s,
)
from hpml.analysis.stats import median_spread
from hpml.contract.rates import GBps, tflops_per_s

SOURCES = ("published", "measured")
REFERENCE_PRECISIONS = ("fp32", "fp64")  # the study's single and double precision

LAYER_COLUMNS = ["sweep", "point", "repeat", "model", "batch", "dtype", "channels_last", "index", "name", "type", "flops", "bytes",
                 "n", "time_median_s", "time_min_s", "time_max_s", "wall_median_s"] + [
    f"{what}_{source}" for source in SOURCES for what in ("predicted_s", "ppp", "error")]


@dataclass(frozen=True)
class Peak:
    """A platform's compute peak (TFLOP/s) and memory bandwidth (GB/s), and where they come from."""

    tflops: float
    GBps: float
    label: str


def platform_peaks(peaks: Mapping[str, Any]) -> Dict[str, Optional[Peak]]:
    """{"published": Peak or None, "measured": Peak} from a result's measurements.peaks."""
    dtype = peaks["dtype"]
    matmul, copy = peaks["matmul"], peaks["copy"]
    measured = Peak(tflops_per_s(matmul["flops"], statistics.median(matmul["times_s"])),
                    GBps(copy["bytes_moved"], statistics.median(copy["times_s"])),
                    f"measured: {matmul['n']}^3 {dtype} matmul, {copy['buffer_bytes']} B copy (medians)")
    record = peaks["published"]
    published = None
    if record is not None and record["tflops"].get(dtype):
        published = Peak(record["tflops"][dtype], record["memory_GBps"], f"published: {record['name']} ({dtype})")
    return {"published": published, "measured": measured}


def paleo_columns(flops: int, nbytes: int, seconds: float, peak: Optional[Peak], ppp: float, source: str
                  ) -> Dict[str, float]:
    """predicted_s, ppp (achieved) and error of one layer (or one network) against one peak; NaN without it."""
    if peak is None:
        return {f"predicted_s_{source}": math.nan, f"ppp_{source}": math.nan, f"error_{source}": math.nan}
    predicted = predicted_time_s(flops, nbytes, peak.tflops, peak.GBps, ppp)
    achieved = achieved_ppp(flops, seconds, peak.tflops)
    return {f"predicted_s_{source}": predicted, f"ppp_{source}": math.nan if achieved is None else achieved,
            f"error_{source}": relative_error(predicted, seconds)}


def layer_row(index: int, layer: Mapping[str, Any], peaks: Mapping[str, Optional[Peak]], ppp: float) -> Dict[str, Any]:
    times = median_spread(layer["time_s"])
    nbytes = memory_bytes(layer["input_bytes"], layer["param_bytes"], layer["activation_bytes"])
    row = {"index": index, "name": layer["name"], "type": layer["type"], "flops": layer["flops"], "bytes": nbytes,
           "n": times["n"], "time_median_s": times["median"], "time_min_s": times["min"], "time_max_s": times["max"],
           "wall_median_s": statistics.median(layer["wall_s"])}
    for source in SOURCES:
        row.update(paleo_columns(layer["flops"], nbytes, times["median"], peaks[source], ppp, source))
    return row


def summary_row(measurements: Mapping[str, Any], layers: List[Dict[str, Any]],
                peaks: Mapping[str, Optional[Peak]], ppp: float) -> Dict[str, Any]:
    """The network: the whole forward against the sum of its layers, its PPP, PALEO's total and its error."""
    forward = median_spread(measurements["forward_time_s"])
    layer_sum = math.fsum(row["time_median_s"] for row in layers)
    flops = sum(row["flops"] for row in layers) + 2 * measurements["outside_leaf_macs"]
    row = {"layer_calls": len(layers), "flops": flops, "bytes": sum(r["bytes"] for r in layers),
           "forward_median_s": forward["median"], "forward_min_s": forward["min"],
           "forward_max_s": forward["max"], "n": forward["n"],
           "forward_wall_median_s": statistics.median(measurements["forward_wall_s"]),
           "layer_sum_s": layer_sum, "layer_wall_sum_s": math.fsum(r["wall_median_s"] for r in layers),
           "layer_sum_over_forward": ratio(layer_sum, forward["median"])}
    for source in SOURCES:
        peak = peaks[source]
        # Work the counter saw outside every leaf module (attention's products in a ViT) is in no layer row:
        # its compute time at the same PPP joins the network's prediction, as its FLOPs join the network's PPP.
        outside_s = compute_time_s(2 * measurements["outside_leaf_macs"], peak.tflops, ppp) if peak else 0.0
        predicted = math.fsum([r[f"predicted_s_{source}"] for r in layers] + [outside_s]) if peak else math.nan
        achieved = achieved_ppp(flops, forward["median"], peak.tflops) if peak else None
        row.update({f"peak_tflops_{source}": peak.tflops if peak else math.nan,
                    f"peak_GBps_{source}": peak.GBps if peak else math.nan,
                    f"network_ppp_{source}": math.nan if achieved is None else achieved,
                    f"predicted_s_{source}": predicted,
                    f"error_{source}": relative_error(predicted, forward["median"]) if peak else math.nan,
                    f"error_vs_layer_sum_{source}": relative_error(predicted, layer_sum) if peak else math.nan})
    return row


def reference_row(measurements: Mapping[str, Any], flops: int, batch: int) -> Dict[str, Any]:
    """The study's question: one image's FLOPs at the reference GPU's published fp32 and fp64 peaks, for the
    whole board and for one of its CUDA devices (a K80 board is two)."""
    reference = measurements["peaks"]["reference"]
    board, device = reference["board"], reference["device"]
    row: Dict[str, Any] = {"reference_gpu": board["key"], "reference_name": board["name"],
                           "devices_per_board": board.get("devices_per_board", 1), "flops_per_image": flops / batch}
    for precision in REFERENCE_PRECISIONS:
        for where, record in (("board", board), ("device", device)):
            peak = record["tflops"][precision]
            row[f"{precision}_tflops_{where}"] = peak if peak else math.nan
            row[f"{precision}_s_per_image_{where}"] = time_per_image_s(flops / batch, peak) if peak else math.nan
    return row


@dataclass
class PointTables:
    """Everything the report shows of one result."""

    identity: Dict[str, Any]
    peaks: Dict[str, Optional[Peak]]
    layers: List[Dict[str, Any]] = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
    reference: Dict[str, Any] = field(default_factory=dict)


def point_tables(doc: Mapping[str, Any]) -> List[PointTables]:
    """The tables of one ok paleo result (a list of one, for WorkloadResults.rows)."""
    measurements, workload = doc["measurements"], doc["config"]["workload"]
    identity = {"sweep": doc["identity"]["sweep"], "point": doc["identity"]["point"],
                "repeat": doc["identity"]["repeat"], "path": doc.get("path"), "model": measurements["model"],
                "batch": measurements["input_shape"][0], "image_size": measurements["input_shape"][-1],
                "dtype": measurements["dtype"], "peak_dtype": measurements["peaks"]["dtype"],
                "channels_last": measurements["channels_last"],
                "device_type": doc["environment"]["device"], "device_name": measurements["device_name"],
                "ppp": workload["ppp"], "repetitions": len(measurements["forward_time_s"])}
    peaks = platform_peaks(measurements["peaks"])
    layers = [layer_row(i, layer, peaks, workload["ppp"]) for i, layer in enumerate(measurements["layers"])]
    if not layers:
        raise ValueError("no layer calls recorded")
    summary = summary_row(measurements, layers, peaks, workload["ppp"])
    return [PointTables(identity, peaks, layers, summary,
                        reference_row(measurements, summary["flops"], identity["batch"]))]


def identity_columns(point: PointTables) -> Dict[str, Any]:
    """The columns that say which result a CSV row belongs to."""
    keys = ("sweep", "point", "repeat", "model", "batch", "dtype", "channels_last")
    return {key: point.identity[key] for key in keys}


def precision_text(point: PointTables) -> str:
    """The run's matmul dtype (fp32 means TF32 off), and NHWC where the run used channels_last."""
    return point.identity["peak_dtype"] + (", NHWC" if point.identity["channels_last"] else "")


def label(point: PointTables) -> Tuple[str, str]:
    """(heading, file-name stem) of one result."""
    ident = point.identity
    heading = (f"point {ident['point']}: {ident['model']}, batch {ident['batch']}, {precision_text(point)}, "
               f"{ident['device_name']}" + (f", repeat {ident['repeat']}" if ident["repeat"] else ""))
    stem = f"{ident['sweep']}_{ident['point']}" + (f"_r{ident['repeat']}" if ident["repeat"] else "")
    return heading, "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)
