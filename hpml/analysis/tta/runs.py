"""One train result with an evaluation record -> one time-to-accuracy run record (contract/saved_model.py).

Every number is recomputed from measurements.evaluation (the raw per-evaluation arrays), never copied from
derived.tta; derived.tta gives only the target the run trained toward ("target": a fraction, or null when
the run evaluated without one). Definitions (Coleman et al. 2019; MLPerf):

- converged: some evaluation's top-1 >= target.
- TTA (tta_s): elapsed_s of the first such evaluation: wall-clock since training started, evaluation time
  included. tta_train_s: the same evaluation's train_elapsed_s (evaluation time left out).
- epochs / steps to target: that evaluation's epoch and step.
A run that never reached the target is "not converged": it has no TTA (None), never a time.

Grouping: a run's configuration is its config without where and how it ran (analysis.configuration drops
sweep.*, cluster.* and resources.*) with the worker shape put back (resources.nodes and
resources.workers_per_node change how fast a run trains), and without the keys that only describe the
hardware or its price (HARDWARE_KEYS): the hardware is the report's other axis, read from the result's
environment, so an H100 run and an H200 run of one preset are one configuration on two hardware types.
The data path that ran (measurements.data_placement, analysis.train.runs.data_path_of: host for results without
it) is recorded beside the configuration: the configured workload.data_placement is in the configuration, but
the path that ran can differ from it (dataset=auto without CIFAR-10 runs on the host), so the table groups by it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from hpml.analysis.configuration import configuration_items, items_key
from hpml.analysis.train.efficiency import efficiency_of, techniques_of
from hpml.analysis.train.runs import data_path_of
from hpml.analysis.tta.energy import run_fields

CPU = "cpu"
# set by the hardware and pricing config groups: they describe the machine (the hardware axis), not the run
HARDWARE_KEYS = ("workload.link", "workload.link_peak_GBps", "workload.price_name", "workload.gpu_hour_usd")
SHAPE_KEYS = ("nodes", "workers_per_node")
CURVE_KEYS = ("epoch", "step", "top1", "elapsed_s", "train_elapsed_s")  # the arrays TTA is computed from


def has_evaluation(doc: Mapping[str, Any]) -> bool:
    return doc["status"] == "ok" and "evaluation" in doc["measurements"]


def hardware_of(doc: Mapping[str, Any]) -> str:
    """The first GPU's model name from the result's environment; "cpu" for a run without a GPU."""
    gpus = doc["environment"]["gpus"]
    return gpus[0] if gpus else CPU


def tta_configuration(config: Mapping[str, Any]) -> Dict[str, Any]:
    items = {key: value for key, value in configuration_items(config).items() if key not in HARDWARE_KEYS}
    items.update({f"resources.{key}": config["resources"][key] for key in SHAPE_KEYS})
    return dict(sorted(items.items()))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def evaluation_arrays(evaluation: Any) -> Dict[str, List[float]]:
    """The arrays TTA needs, checked: lists of numbers of one length (ValueError naming the key). They may be
    empty: a run whose epochs ended before its first evaluation evaluated nothing (with a target: not converged)."""
    if not isinstance(evaluation, dict):
        raise ValueError("measurements.evaluation: expected an object of per-evaluation lists")
    arrays = {}
    for key in CURVE_KEYS:
        values = evaluation.get(key)
        if not (isinstance(values, list) and all(_is_number(v) for v in values)):
            raise ValueError(f"measurements.evaluation.{key}: expected a list of numbers")
        arrays[key] = values
    lengths = {key: len(values) for key, values in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"measurements.evaluation: lists of different lengths ({lengths})")
    return arrays


def first_at_target(top1: List[float], target: float) -> Optional[int]:
    """The index of the first evaluation at or above the target; None when none is."""
    return next((i for i, value in enumerate(top1) if value >= target), None)


def tta_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """One ok train result with measurements.evaluation -> its record."""
    arrays = evaluation_arrays(doc["measurements"]["evaluation"])
    target = doc["derived"]["tta"]["target"]
    if target is not None and not (_is_number(target) and 0 < target <= 1):
        raise ValueError(f"derived.tta.target: expected a fraction in (0, 1] or null, got {target!r}")
    items = tta_configuration(doc["config"])
    hit = first_at_target(arrays["top1"], target) if target is not None else None
    return {
        "path": doc["path"], "sweep": doc["identity"]["sweep"], "point": doc["identity"]["point"],
        "repeat": doc["identity"]["repeat"], "seed": doc["identity"]["seed"],
        "hardware": hardware_of(doc), "config_key": items_key(items), "config_items": items,
        "model": doc["config"]["workload"]["model"], "target": target,
        "data_placement": data_path_of(doc["measurements"]),
        "converged": hit is not None, "target_index": hit,
        "tta_s": arrays["elapsed_s"][hit] if hit is not None else None,
        "tta_train_s": arrays["train_elapsed_s"][hit] if hit is not None else None,
        "epochs_to_target": arrays["epoch"][hit] if hit is not None else None,
        "steps_to_target": arrays["step"][hit] if hit is not None else None,
        "elapsed_s": list(arrays["elapsed_s"]), "top1": list(arrays["top1"]),
        "step": efficiency_of(doc["measurements"], techniques_of(doc)),  # MFU and what bounds the step (analysis/train/efficiency.py)
        **to_target(doc, arrays, hit),
    }


def to_target(doc: Mapping[str, Any], arrays: Mapping[str, List[float]], hit: Optional[int]) -> Dict[str, Any]:
    """The run's energy, GPU-hours and cost to target and its power-sampling check (analysis.tta.energy)."""
    if hit is None:
        return run_fields(doc, None, None, None)
    return run_fields(doc, int(arrays["epoch"][hit]) - 1, arrays["elapsed_s"][hit], int(arrays["step"][hit]))
