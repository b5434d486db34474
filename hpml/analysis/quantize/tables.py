"""Run records (analysis.quantize.runs) -> the quantize report's frames, full precision (the CSV files):

    run_frame      per run: its seed and point, top-1 of every stage, the integer path's agreement
    stage_frame    per stage: top-1 mean ± sample std (ddof=1) over the runs (n), its difference from the float
                   stage taken run by run (paired), bytes stored, inference time
    bar_frame      the study's two bars: integer-only within 1 point of float; hpml W8A8 within 0.5 point of
                   torch.ao (own observers and hpml's scales), by the difference of the means
    scale_frame    per layer of one run: ranges, scales, bias scale, requantizer, the int32 bound
    check_frame    per quantized tensor over every run: dtype, allowed and observed range, clipped values
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.stats import sample_std
from hpml.contract.quantize_format import STAGE_TITLES

FLOAT_BAR_POINTS = 1.0  # the bar: the fully quantized model within 1 point of the float mean
TORCH_AO_BAR_POINTS = 0.5  # and hpml's W8A8 within 0.5 point of torch.ao's on the same models


def _spread(values: List[float]) -> Dict[str, float]:
    return {"mean": statistics.fmean(values), "std": sample_std(values), "min": min(values), "max": max(values)}


def stage_frame(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """One row per stage present in every run of the list (one configuration)."""
    stages = [s for s in runs[0]["stages"] if all(s in run["stages"] for run in runs)]
    rows = []
    for stage in stages:
        top = _spread([run[f"top1_{stage}"] * 100 for run in runs])
        delta = _spread([(run[f"top1_{stage}"] - run["top1_float"]) * 100 for run in runs])
        seconds = [run[f"inference_s_{stage}"] for run in runs]
        payload = [run[f"payload_bytes_{stage}"] for run in runs]
        rows.append({
            "stage": stage, "title": STAGE_TITLES[stage], "runs": len(runs),
            **{f"top1_pct_{k}": v for k, v in top.items()}, **{f"delta_pts_{k}": v for k, v in delta.items()},
            "payload_bytes": None if payload[0] is None else int(statistics.median(payload)),
            "serialized_bytes": int(statistics.median(run[f"serialized_bytes_{stage}"] for run in runs)),
            "inference_ms_median": statistics.median(seconds) * 1e3, "inference_ms_min": min(seconds) * 1e3,
            "inference_ms_max": max(seconds) * 1e3, "test_samples": runs[0]["test_samples"],
        })
    return pd.DataFrame(rows)


def run_frame(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """One row per run (by seed): where it came from and its top-1 per stage (%)."""
    rows = []
    for run in sorted(runs, key=lambda r: (r["seed"], r["sweep"], r["point"])):
        row = {"sweep": run["sweep"], "point": run["point"], "seed": run["seed"]}
        row.update({f"top1_pct_{stage}": run[f"top1_{stage}"] * 100 for stage in run["stages"]})
        row.update({key: run[key] for key in ("integer_agrees_w8a8b32", "integer_agrees_torch_ao_hpml") if key in run})
        rows.append(row)
    return pd.DataFrame(rows)


def bar_frame(stages: pd.DataFrame) -> pd.DataFrame:
    """The bars that the stages present allow (a run without torch.ao has only the first)."""
    mean = dict(zip(stages["stage"], stages["top1_pct_mean"]))
    checks = [(f"integer-only vs float: means within {FLOAT_BAR_POINTS:g} point", "integer", "float",
               FLOAT_BAR_POINTS),
              (f"hpml W8A8 vs torch.ao (own observers): means within {TORCH_AO_BAR_POINTS:g} point", "w8a8",
               "torch_ao_own", TORCH_AO_BAR_POINTS),
              (f"hpml W8A8 vs torch.ao (hpml's scales): means within {TORCH_AO_BAR_POINTS:g} point", "w8a8",
               "torch_ao_hpml", TORCH_AO_BAR_POINTS)]
    rows = [{"bar": text, "stage": a, "reference": b, "difference_pts": mean[a] - mean[b], "threshold_pts": limit,
             "passes": abs(mean[a] - mean[b]) <= limit}
            for text, a, b, limit in checks if a in mean and b in mean]
    return pd.DataFrame(rows)


def _values(values: List[float], fmt: str = ".6g") -> str:
    """One value, or the smallest and largest of per-channel values (and how many)."""
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(min(values), fmt)} .. {format(max(values), fmt)} ({len(values)})"


def scale_frame(run: Dict[str, Any]) -> pd.DataFrame:
    rows = [{"layer": "input", "kind": "image", "shape": "", "range": run["input"]["range"], "weight_range": "",
             "weight_scale": "", "input_scale": "", "output_scale": run["input"]["scale"], "bias_scale": "",
             "requantize": "", "multiplier": "", "m0": "", "shift": "", "int32_bound": None}]
    for layer in run["layers"]:
        r = layer["requantize"]
        rows.append({"layer": layer["name"], "kind": layer["kind"] + (" + ReLU" if layer["relu"] else ""),
                     "shape": "x".join(str(d) for d in layer["weight_shape"]), "range": layer["output_range"],
                     "weight_range": _values(layer["weight_range"]), "weight_scale": _values(layer["weight_scale"]),
                     "input_scale": layer["input_scale"], "output_scale": layer["output_scale"],
                     "bias_scale": _values(layer["bias_scale"]), "requantize": r["kind"],
                     "multiplier": _values(r["multiplier"]), "m0": _values(r["m0"], "d"),
                     "shift": _values(r["shift"], "d"),
                     "int32_bound": layer["int32_bound"]})
    return pd.DataFrame(rows)


def check_frame(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    by_tensor: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        for check in run["checks"]:
            by_tensor.setdefault(check["tensor"], []).append(check)
    rows = []
    for tensor, checks in by_tensor.items():
        rows.append({"tensor": tensor, "dtype": checks[0]["dtype"], "lo": checks[0]["lo"], "hi": checks[0]["hi"],
                     "min": min(c["min"] for c in checks), "max": max(c["max"] for c in checks),
                     "values": sum(c["values"] for c in checks), "clipped": sum(c["clipped"] for c in checks),
                     "runs": len(checks), "runs_in_range": sum(bool(c["in_range"]) for c in checks),
                     "max_abs_accumulator": max((c.get("max_abs_accumulator") or 0) for c in checks) or None,
                     "int32_bound": max((c.get("int32_bound") or 0) for c in checks) or None})
    return pd.DataFrame(rows)
