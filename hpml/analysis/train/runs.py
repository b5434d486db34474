"""One train result -> one flat run record; every number recomputed from the raw arrays (never `derived`).

Definitions (docs/studies/batch-gpu-scaling.md):
- N is the number of devices a run trained on: workers x dp_devices (DDP: one GPU per worker; DP: one
  worker over dp_devices GPUs; on CPU one "device" per worker).
- A study group is a configuration (analysis.configuration) without its batch and its device count, and
  without the measurements made before or after the timed epochs (NOT_GROUP: probes, profiler, overhead
  check). Rows compare runs of one group; speedups compare rows of one group and one batch only (never
  across batch sizes).
- Timed epochs: every epoch but the cold ones (contract.result_format.timed_epoch_indices: epoch 1, and the
  first after each resume). "total" epoch time: measurements.epoch_time_s (slowest rank, wall clock);
  "train": measurements.train_time_s (slowest rank's h2d+forward+backward+optimizer; results written
  before it existed have none, and their train columns stay empty). Step times are rank 0's.
- Data path (measurements.data_placement): "host" (DataLoader, host-to-device copy per batch) or "device" (the
  split resident on the GPU, batches sliced and augmented there). The result records the path that ran, which
  can differ from the configured one (dataset=auto without CIFAR-10 runs synthetic data on the host); results
  written before the key existed ran the host path. Its phase "data" is timed differently on each path.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Tuple

from hpml.analysis.configuration import configuration_group
from hpml.contract.result_format import timed_epoch_indices
from hpml.contract.train_format import PHASES, per_device_batch

DATA_PATHS = ("host", "device")  # the values of measurements.data_placement
LEGACY_DATA_PATH = "host"  # results written before measurements.data_placement existed had only the DataLoader
NOT_GROUP = ("workload.dp_devices", "workload.batch_size", "workload.max_batch_probe", "workload.comm_probe_steps",
             "workload.profile_comm_steps", "workload.overhead_check_steps", "workload.overhead_check_rounds")


def is_train_run(doc: Mapping[str, Any]) -> bool:
    """A train result the tables use: ok, or out of memory (shown as "does not fit")."""
    return doc["status"] in ("ok", "oom")


def group_items(config: Mapping[str, Any]) -> Dict[str, Any]:
    return configuration_group(config, NOT_GROUP)[0]


def devices_of(config: Mapping[str, Any]) -> int:
    res, w = config["resources"], config["workload"]
    per_worker = w.get("dp_devices", 1) if w.get("parallel", "ddp") == "dp" else 1
    return res["nodes"] * res["workers_per_node"] * per_worker


def per_device_batch_of(config: Mapping[str, Any]) -> int:
    w = config["workload"]
    return per_device_batch(w["batch_size"], w["scaling"], devices_of(config))


def data_path_of(measurements: Mapping[str, Any]) -> str:
    """The data path a run used: measurements.data_placement, or the host path for a result that predates it."""
    return measurements.get("data_placement", LEGACY_DATA_PATH)


def _timed(values: List[Any], indices: List[int]) -> List[Any]:
    return [values[i] for i in indices]


def train_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """One train result (ok or oom) as a flat record."""
    config, m = doc["config"], doc["measurements"]
    w = config["workload"]
    devices, per_device = devices_of(config), per_device_batch_of(config)
    items, key = configuration_group(config, NOT_GROUP)  # looked up, not recomputed, for a repeated configuration
    record: Dict[str, Any] = {
        "path": doc["path"], "sweep": doc["identity"]["sweep"], "repeat": doc["identity"]["repeat"],
        "status": doc["status"], "reason": doc["reason"], "group_key": key, "group_items": items,
        "parallel": w.get("parallel", "ddp"), "scaling": w["scaling"], "model": w["model"],
        "precision": w.get("precision", "fp32"), "devices": devices, "nodes": config["resources"]["nodes"],
        "workers_per_node": config["resources"]["workers_per_node"],
        "per_device_batch": per_device, "global_batch": per_device * devices,
        "fixed_batch": w["batch_size"],  # what the scaling mode holds fixed: per device (weak), global (strong)
        "lr": w["lr"], "lr_scaling": w.get("lr_scaling", "none"), "warmup_epochs": w.get("warmup_epochs", 0),
        "link": w.get("link", "none"), "link_peak_GBps": w.get("link_peak_GBps"),
        "dataset_note": m.get("dataset_note"), "batch_probe": m.get("batch_probe"),
    }
    if doc["status"] != "ok":
        return record
    timed = timed_epoch_indices(len(m["epoch_time_s"]), m.get("cold_epochs"))
    steps = [s for epoch in _timed(m["step_time_s"], timed) for s in epoch]
    phases = m.get("phase_time_s")
    record.update({
        "steps_per_epoch": m["steps_per_epoch"], "samples_per_epoch": m["samples_per_epoch"],
        "data_placement": data_path_of(m),
        "epoch_time_s": _timed(m["epoch_time_s"], timed),
        "train_time_s": _timed(m["train_time_s"], timed) if "train_time_s" in m else None,
        "step_s": steps,
        "phase_steps_s": {p: [s for epoch in _timed(phases[p], timed) for s in epoch] for p in PHASES}
        if phases else None,
        "train_loss": m["train_loss"], "train_accuracy": m["train_accuracy"],
        "lr_target": m.get("lr_target"), "gradient_bytes": m.get("gradient_bytes"),
        "comm_probe": m.get("comm_probe"), "comm_profile": m.get("comm_profile"),
        "overhead_check": m.get("overhead_check"),
    })
    return record


def row_identity(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    first = runs[0]
    return {key: first[key] for key in ("sweep", "group_key", "parallel", "scaling", "model", "precision",
                                         "fixed_batch", "per_device_batch", "devices", "nodes", "workers_per_node",
                                         "global_batch")}


RowKey = Tuple[str, str, int, int, int, int]


def by_row(runs: Iterable[Dict[str, Any]]) -> Dict[RowKey, List[Dict[str, Any]]]:
    """The runs of each table row (repeats pooled): one per group, fixed batch and resource shape (1 x 4 and
    2 x 2 have the same N but are kept apart: intra- and inter-node communication differ)."""
    rows: Dict[RowKey, List[Dict[str, Any]]] = {}
    for run in runs:
        key = (run["sweep"], run["group_key"], run["fixed_batch"], run["devices"], run["nodes"], run["workers_per_node"])
        rows.setdefault(key, []).append(run)
    return dict(sorted(rows.items()))


def by_data_path(runs: Iterable[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """The ok runs of one row split by the data path that ran (host before device): a table that shows the phase
    "data" never pools the two, since "data" is host time on one path and device time on the other."""
    paths: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        paths.setdefault(run["data_placement"], []).append(run)
    order = {path: i for i, path in enumerate(DATA_PATHS)}
    return dict(sorted(paths.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def ok_runs(members: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [r for r in members if r["status"] == "ok"]
