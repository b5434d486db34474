"""One record per ok dataloader result: its setting, its group, and the raw times of its timed epochs.

Only the raw arrays are read (never `derived`): the timed epochs are contract.result_format's (epoch 1, the
warm-up, left out), each epoch's time is that of its slowest rank (measurements.epoch_time_s, checked against
epoch_time_s_per_rank), and so is its first-batch time.

A group is what one table compares: one sweep, one machine (the first GPU's name, or "cpu"; the CPUs the point
could use), one data set of one size, one batch and world size, and every other config value equal, except the
setting's own keys (SETTING_KEYS) and where the data lay (workload.data_root: analysis.configuration).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from hpml.analysis.configuration import configuration_items, items_key
from hpml.analysis.tta.runs import hardware_of
from hpml.contract.result_format import timed_values

# The keys one point of the study varies; every other workload key must be equal within a group
SETTING_KEYS = ("workload.loader_workers", "workload.pin_memory", "workload.persistent_workers",
                "workload.prefetch_factor", "workload.data_placement", "workload.device_data_share")
HOST, DEVICE = "host", "device"


def _numbers(values: Any, key: str) -> List[float]:
    if not isinstance(values, list) or not values or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"measurements.{key} is not a non-empty list of positive numbers")
    return [float(v) for v in values]


def slowest_ranks(per_rank: Any, key: str) -> List[Optional[float]]:
    """Per epoch, the slowest rank's value ([epoch][rank]); None for an epoch that a rank recorded as None."""
    if not isinstance(per_rank, list) or not all(isinstance(epoch, list) and epoch for epoch in per_rank):
        raise ValueError(f"measurements.{key} is not a list of per-rank lists")
    return [None if any(v is None for v in epoch) else max(epoch) for epoch in per_rank]


def group_items(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """What must be equal for two settings to be compared (see the module's docstring)."""
    items = {k: v for k, v in configuration_items(doc["config"]).items() if k not in SETTING_KEYS}
    m = doc["measurements"]
    items.update({"hardware": hardware_of(doc), "cpus": min(m["cpus_per_rank"]),
                  "world_size": doc["environment"]["world_size"], "samples_per_epoch": m["samples_per_epoch"],
                  "resources.cpus_per_worker": doc["config"]["resources"]["cpus_per_worker"]})
    return items


def run_record(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """The record of one ok result (ValueError, KeyError or TypeError when its measurements cannot be read)."""
    m = doc["measurements"]
    epochs = _numbers(m["epoch_time_s"], "epoch_time_s")
    if [max(epoch) for epoch in m["epoch_time_s_per_rank"]] != epochs:
        raise ValueError("measurements.epoch_time_s is not the slowest rank's of epoch_time_s_per_rank")
    loader = m["loader"]
    items = group_items(doc)
    return {
        "sweep": doc["identity"]["sweep"], "path": doc.get("path"),
        "group": items_key(items), "group_items": items,
        "dataset": m["dataset"], "hardware": items["hardware"], "cpus": items["cpus"],
        "samples_per_epoch": m["samples_per_epoch"], "batch_size": m["batch_size"],
        "placement": m["data_placement"],
        "workers": None if loader is None else loader["num_workers"],
        "pin_memory": None if loader is None else loader["pin_memory"],
        "persistent_workers": None if loader is None else loader["persistent_workers"],
        "prefetch_factor": None if loader is None else loader["prefetch_factor"],
        "epoch_s": timed_values(epochs, m),
        "first_batch_s": timed_values(slowest_ranks(m["first_batch_s_per_rank"], "first_batch_s_per_rank"), m),
        "setup_s": max(_numbers(m["setup_s_per_rank"], "setup_s_per_rank")),
        "load_before": m["load_average"]["before"][0], "load_after": m["load_average"]["after"][0],
    }
