"""One train result with an evaluation record -> one batch augmentation run record. Every number comes from the
raw arrays (measurements.evaluation, epoch_time_s, step_time_s), never from derived; derived.tta gives only the
target the run trained toward (a fraction, or null).

- variant: (M copies, accumulation chunks, Cutout holes, Cutout size). M and the chunks are what the result says
  ran (measurements.batch_augmentation, accumulation_chunks; results written before issue 23 have neither and
  ran one copy, whole steps); Cutout comes from the config (workload.cutout_holes, cutout_size).
- group: the configuration (analysis.tta.runs' rule: no sweep, cluster, resources but the worker shape, no
  hardware-describing keys) without the variant keys, plus the hardware and the data path that ran. Runs of one
  group differ only in the variant and the seed, so one table and one figure compare them.
- converged / epochs to target / TTA: the first evaluation at or above the target (analysis.tta.runs); best top-1
  and the clock at the last evaluation (the cap, or the stop) for a run that did not get there.
- epoch time: the mean of the run's timed epochs (contract.result_format: all but the cold ones); step time: the
  median of their steps (rank 0, step end to step end: the data phase included, where the device path makes the
  copies); samples/s: distinct samples of an epoch / epoch time; images/s: M x that (what the model processed).
- energy, energy per sample, GPU-hours and cost to target, and MLPerf's power-sampling check: analysis.tta.energy.
- GPU use: the point's first GPU over its timed window (analysis.telemetry: utilization.gpu and SM activity means,
  %); None where there is no telemetry (a CPU run, telemetry off).
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Mapping

from hpml.analysis.configuration import items_key
from hpml.analysis.telemetry.points import telemetry_numbers
from hpml.analysis.train.runs import data_path_of
from hpml.analysis.tta.runs import evaluation_arrays, first_at_target, hardware_of, to_target, tta_configuration
from hpml.contract.result_format import timed_epoch_indices

VARIANT_KEYS = ("workload.batch_augmentation", "workload.accumulation_chunks", "workload.cutout_holes",
                "workload.cutout_size")


def copies_of(doc: Mapping[str, Any]) -> int:
    return doc["measurements"].get("batch_augmentation", 1)  # results before issue 23 ran one copy


def cutout_of(doc: Mapping[str, Any]) -> int:
    return doc["config"]["workload"].get("cutout_holes", 0)


def _positive_int(value: Any, key: str) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"measurements.{key}: expected an integer >= 1, got {value!r}")
    return value


def ba_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    m, w = doc["measurements"], doc["config"]["workload"]
    arrays = evaluation_arrays(m["evaluation"])
    copies = _positive_int(copies_of(doc), "batch_augmentation")
    chunks = _positive_int(m.get("accumulation_chunks", 1), "accumulation_chunks")
    holes = cutout_of(doc)
    size = w.get("cutout_size", 0) if holes else 0
    target = doc["derived"]["tta"]["target"]
    hit = first_at_target(arrays["top1"], target) if target is not None else None
    timed = timed_epoch_indices(len(m["epoch_time_s"]), m.get("cold_epochs"))
    epoch_s = statistics.fmean(m["epoch_time_s"][i] for i in timed)
    steps = [s for i in timed for s in m["step_time_s"][i]]
    items = {k: v for k, v in tta_configuration(doc["config"]).items() if k not in VARIANT_KEYS}
    hardware, path = hardware_of(doc), data_path_of(m)
    top1 = arrays["top1"]
    gpu = telemetry_numbers(doc)
    best = max(range(len(top1)), key=top1.__getitem__) if top1 else None
    return {
        "path": doc["path"], "seed": doc["identity"]["seed"], "model": w["model"],
        "group_key": f"{items_key(items)}|{hardware}|{path}", "group_items": items,
        "hardware": hardware, "data_placement": path,
        "copies": copies, "chunks": chunks, "cutout_holes": holes, "cutout_size": size,
        "batch": m["global_batch"], "samples_per_step": m["global_batch"] * copies,
        "target": target, "converged": hit is not None,
        "epochs_to_target": arrays["epoch"][hit] if hit is not None else None,
        "tta_s": arrays["elapsed_s"][hit] if hit is not None else None,
        "best_top1": top1[best] if best is not None else None,
        "best_epoch": arrays["epoch"][best] if best is not None else None,
        "last_elapsed_s": arrays["elapsed_s"][-1] if top1 else None,
        "eval_epochs": list(arrays["epoch"]), "top1": list(top1),
        "epoch_time_s": epoch_s, "step_time_s": statistics.median(steps),
        "samples_per_s": m["samples_per_epoch"] / epoch_s,
        "images_per_s": m["samples_per_epoch"] * copies / epoch_s,
        "util_gpu": gpu["util_gpu_mean"], "sm_activity": gpu["sm_activity_mean"],
        **to_target(doc, arrays, hit),
    }
