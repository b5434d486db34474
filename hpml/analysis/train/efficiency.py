"""How far each train result's step is from the GPU's limit: MFU and what bounds the step (issue 44), recomputed
from the inputs the result recorded (measurements.efficiency; the rules: contract/step_efficiency.py), never read
from its `derived`.

One home per number in a report: a table of MFU and the verdict per configuration appears once.
- Runs that differ in a technique (precision, channels_last, compile, cuda_graphs) get the techniques section's
  "Step efficiency by technique" table (analysis/techniques/sections.py), with the setup costs beside;
- evaluated runs (time to accuracy) get MFU and the verdict as columns of the time-to-accuracy table;
- the others, the scaling study's, get the train section's "How far from the GPU's limit" table.
A result written before MFU existed (schema version 1) reads n/a, "not recorded".
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional

import pandas as pd

from hpml.contract.result_format import timed_epoch_indices
from hpml.contract.step_efficiency import bound_of_record, mfu
from hpml.report_kit.numbers import number

NOT_RECORDED = "not recorded (the result predates MFU: schema version 1)"
TECHNIQUE_KEYS = ("precision", "channels_last", "compile", "cuda_graphs")
EFFICIENCY_COLUMNS = ["label", "model", "precision", "channels_last", "compile", "cuda_graphs", "devices",
                      "per_device_batch", "runs", "step_median_s", "achieved_tflops", "mfu", "mfu_na", "bound",
                      "busy_share", "data_share", "comm_share", "first_step_extra_s", "graph_capture_s", "knob"]


def efficiency_of(measurements: Mapping[str, Any], settings: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """MFU, achieved TFLOP/s, the verdict and its shares of one result, from its recorded inputs; settings (the
    result's techniques_of) make the knob name only what the run did not use already."""
    record = measurements.get("efficiency")
    if not isinstance(record, Mapping):
        return {"mfu": None, "mfu_na": NOT_RECORDED, "achieved_tflops": None, "bound": None, "knob": None,
                "shares": {"busy": None, "data": None, "comm": None}}
    inputs, flops, peak = record["bound_inputs"], record["flops"], record["peak"]
    rates = mfu(flops["flops_per_sample"], record["samples_per_step"], inputs["step_s"], record["devices"],
                peak["peak_tflops_per_device"], flops.get("error") or peak.get("na"))
    if settings is not None:  # the device path's batch_prep, recorded in measurements (not a technique column)
        settings = {**settings, "batch_prep": measurements.get("batch_prep")}
    bound = bound_of_record(inputs, settings)
    return {"mfu": rates["mfu"], "mfu_na": rates["na"], "achieved_tflops": rates["achieved_tflops"],
            "bound": bound["verdict"], "knob": bound["knob"], "shares": bound["shares"]}


def setup_of(doc: Mapping[str, Any]) -> Dict[str, Optional[float]]:
    """What epoch 1 paid before the steady step: its first step over the steady median (compilation, capture,
    cuDNN tuning) and the graph capture's own time, from the raw step times."""
    m = doc["measurements"]
    steps = m["step_time_s"]
    timed = timed_epoch_indices(len(steps), m.get("cold_epochs"))
    steady = statistics.median(s for i in timed for s in steps[i])
    capture = ((doc.get("derived") or {}).get("setup") or {}).get("graph_capture_s")
    return {"first_step_extra_s": steps[0][0] - steady if steps and steps[0] else None, "graph_capture_s": capture,
            "step_median_s": steady}


def techniques_of(doc: Mapping[str, Any]) -> Dict[str, Any]:
    w, m = (doc.get("config") or {}).get("workload") or {}, doc.get("measurements") or {}  # a hand-made doc: none
    precision = w.get("precision", "fp32")
    compile_mode = w.get("compile", "none")
    return {"precision": "tf32" if precision == "fp32" and m.get("tf32") else precision,
            "channels_last": bool(w.get("channels_last", False)),
            "compile": {False: "none", True: "default"}.get(compile_mode, compile_mode),  # schema 1: a bool
            "cuda_graphs": bool(w.get("cuda_graphs", False))}


def differs_in_technique(docs: List[Mapping[str, Any]]) -> bool:
    """The results differ in a technique setting: a techniques study, whose section holds the table."""
    return len({tuple(techniques_of(d).values()) for d in docs}) > 1


def _mean(values: List[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known and len(known) == len(values) else None


def efficiency_table(docs: List[Mapping[str, Any]], label_of) -> pd.DataFrame:
    """One row per configuration (label_of(doc)), devices, per-device batch and technique, repeats pooled: the mean MFU and
    TFLOP/s, the median step, the most common verdict (its shares the mean of the runs that have it)."""
    groups: Dict[tuple, List[Mapping[str, Any]]] = {}
    for doc in docs:
        m = doc["measurements"]
        key = (label_of(doc), doc["config"]["workload"]["model"], m.get("devices", 1), m.get("per_device_batch"),
               *techniques_of(doc).values())
        groups.setdefault(key, []).append(doc)
    rows = []
    for (label, model, devices, batch, *_), members in sorted(groups.items(), key=lambda item: str(item[0])):
        found = [efficiency_of(d["measurements"], techniques_of(d)) for d in members]
        setups = [setup_of(d) for d in members]
        verdicts = Counter(f["bound"] for f in found if f["bound"])
        verdict = verdicts.most_common(1)[0][0] if verdicts else None
        agreeing = [f for f in found if f["bound"] == verdict]
        rows.append({
            "label": label, "model": model, **techniques_of(members[0]), "devices": devices,
            "per_device_batch": batch, "runs": len(members),
            "step_median_s": statistics.median(s["step_median_s"] for s in setups),
            "achieved_tflops": _mean([f["achieved_tflops"] for f in found]), "mfu": _mean([f["mfu"] for f in found]),
            "mfu_na": next((f["mfu_na"] for f in found if f["mfu_na"]), None), "bound": verdict,
            **{f"{share}_share": _mean([f["shares"][share] for f in agreeing]) if agreeing else None
               for share in ("busy", "data", "comm")},
            "first_step_extra_s": _mean([s["first_step_extra_s"] for s in setups]),
            "graph_capture_s": _mean([s["graph_capture_s"] for s in setups]),
            "knob": agreeing[0]["knob"] if agreeing else None})
    return pd.DataFrame(rows, columns=EFFICIENCY_COLUMNS)




MFU_INTRO = ("MFU: model FLOPs per sample (forward + backward, FlopCounterMode: 2 FLOPs per MAC, no recomputation, "
             "no optimizer) x samples per step / median timed step / (devices x the GPU's dense peak for the "
             "precision: conf/hardware/gpu_peaks.py). Bound: the first of GPU-bound (kernels other than NCCL's busy "
             "≥ 80 % of the wall time of the steps torch.profiler timed after training), data-bound (loader wait "
             "≥ 25 %), communication-bound (DDP's exposed all-reduce ≥ 25 %), CPU-bound (no GPU), else host-bound "
             "(contract/step_efficiency.py). n/a: why, below the table.")


def na_lines(table: pd.DataFrame) -> str:
    reasons = sorted({r for r in table["mfu_na"] if r})
    return "".join(f"\n\nMFU n/a: {reason}." for reason in reasons)


def _share_cells(r: Mapping[str, Any]) -> List[str]:
    return [number(r[f"{share}_share"], ".1f", 100, " %", missing="n/a") for share in ("busy", "data", "comm")]


def scaling_cells(r: Mapping[str, Any]) -> List[Any]:
    return [r["label"], r["model"], r["devices"], r["per_device_batch"], r["runs"], number(r["step_median_s"], ".2f", 1e3),
            number(r["achieved_tflops"], ".1f"), number(r["mfu"], ".1f", 100, " %", missing="n/a"), r["bound"] or "n/a", *_share_cells(r),
            r["knob"] or ""]


SCALING_HEADERS = ["configuration", "model", "devices", "per-device batch", "runs", "step [ms]", "TFLOP/s", "MFU",
                   "bound", "GPU busy", "data wait", "exposed comm", "what would move it"]


def technique_cells(r: Mapping[str, Any]) -> List[Any]:
    return [r["label"], r["model"], r["precision"], "yes" if r["channels_last"] else "no", r["compile"],
            "yes" if r["cuda_graphs"] else "no", r["per_device_batch"], r["runs"], number(r["step_median_s"], ".2f", 1e3),
            number(r["achieved_tflops"], ".1f"), number(r["mfu"], ".1f", 100, " %", missing="n/a"), r["bound"] or "n/a", *_share_cells(r),
            number(r["first_step_extra_s"], ".2f"), number(r["graph_capture_s"], ".1f", 1e3)]


TECHNIQUE_HEADERS = ["configuration", "model", "precision", "channels_last", "compile", "CUDA graph", "batch", "runs",
                     "step [ms]", "TFLOP/s", "MFU", "bound", "GPU busy", "data wait", "exposed comm",
                     "first step extra [s]", "capture [ms]"]
