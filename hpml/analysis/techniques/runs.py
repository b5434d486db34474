"""One ok train result -> the record the training-techniques sections read (docs/studies/training-techniques.md).

The arrays are the result's raw ones (rank 0 unless said): per epoch the loop's wall time (loop_time_s), its
evaluation time, each step's time and phases; the per-epoch training loss and the evaluations' top-1; the
allocator's peak per epoch; the batch probe. GPU telemetry (utilization, SM activity, power, energy per
sample) comes from the point's sidecars through analysis.telemetry, None where there is none (a CPU run).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping

from hpml.analysis.configuration import configuration_group, items_key
from hpml.analysis.telemetry.points import telemetry_numbers
from hpml.analysis.train.runs import per_device_batch_of
from hpml.contract.result_format import timed_epoch_indices

# the keys a technique varies: a comparison groups runs by the configuration without them
PRECISION_KEYS = ("workload.precision", "workload.tf32")
CHECKPOINTING_KEYS = ("workload.activation_checkpointing", "workload.batch_size", "workload.max_batch_probe")


def precision_label(doc: Mapping[str, Any]) -> str:
    """fp32 / tf32 / fp16 / bf16 as it ran: fp32 with TF32 in force (measurements.tf32, GPU only) is tf32."""
    m = doc["measurements"]
    # results written before measurements.precision existed: the config's (fp32 where even that is absent)
    precision = m.get("precision") or doc["config"].get("workload", {}).get("precision") or "fp32"
    return "tf32" if precision == "fp32" and m.get("tf32") else precision


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def technique_run(doc: Mapping[str, Any], with_telemetry: bool = False) -> Dict[str, Any]:
    """Every key the techniques add is optional: a result written before them gives a record whose sections stay
    empty (has_profile false, one precision, no checkpointing), never an unreadable result."""
    m = doc["measurements"]
    epochs = len(m["epoch_time_s"])
    timed = timed_epoch_indices(epochs, m.get("cold_epochs", [0]))
    evaluation = m.get("evaluation") or {}
    items, key = configuration_group(doc["config"])  # looked up, not recomputed, for a repeated configuration
    record = {
        "sweep": doc["identity"]["sweep"], "path": doc.get("path"), "config_items": items,
        "config_key": key, "precision": precision_label(doc),
        "activation_checkpointing": bool(m.get("activation_checkpointing", False)),
        "per_device_batch": per_device_batch_of(doc["config"]), "epochs": epochs, "timed": timed,
        "epoch_time_s": m["epoch_time_s"], "step_time_s": m.get("step_time_s"), "phase_time_s": m.get("phase_time_s"),
        "loop_time_s": m.get("loop_time_s"), "eval_time_s": m.get("eval_time_s"),
        "train_loss": m.get("train_loss") or [], "val_top1": evaluation.get("top1", []), "val_epoch": evaluation.get("epoch", []),
        "samples_per_epoch": m.get("samples_per_epoch"),
        # the timed epochs' allocator peaks: epoch 1's holds cuDNN's benchmark workspaces (tried once, then freed)
        "peak_allocated_bytes": [b for i, b in enumerate(m.get("peak_memory_allocated_bytes") or [])
                                 if b is not None and i in timed],
        "largest_fitting": (m.get("batch_probe") or {}).get("largest_fitting"),
        "batch_probe": m.get("batch_probe") is not None,
    }
    record["nonfinite_loss_epochs"] = [i + 1 for i, loss in enumerate(record["train_loss"]) if not finite(loss)]
    if with_telemetry:
        record.update(telemetry_numbers(doc))
    return record


def has_profile(record: Mapping[str, Any]) -> bool:
    """Results written before loop_time_s existed (or resumed from an older checkpoint) have no full profile."""
    loops, evals = record["loop_time_s"], record["eval_time_s"]
    return (isinstance(loops, list) and isinstance(evals, list) and len(loops) == len(evals) == record["epochs"]
            and record["step_time_s"] is not None and record["phase_time_s"] is not None)


def without_keys(items: Mapping[str, Any], keys) -> str:
    """The configuration key of `items` without `keys` (what a comparison holds fixed)."""
    return items_key({k: v for k, v in items.items() if k not in keys})


def mean_step_s(record: Mapping[str, Any]) -> float:
    steps: List[float] = [s for i in record["timed"] for s in record["step_time_s"][i]]
    return sum(steps) / len(steps)
