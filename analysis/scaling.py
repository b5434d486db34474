"""Scaling tables from result rows: pure functions, pandas in and out, no I/O.

Definitions (docs/result-schema.md; DESIGN.md "Facts to get right"):
- Epoch 1 of every run is warm-up and dropped. A run's epoch time is the mean of epochs 2..; each epoch's
  time is already its slowest rank's (measurements.epoch_time_s). Step times are rank 0's.
- A configuration is everything in the config that can change what is measured: config.workload.* and any
  other group, but not resources.* (the worker count is what a scaling study varies), sweep.* (names,
  directories, repeat index and seed, whether the launcher waits) or cluster.* (where and how it was
  submitted). Speedups compare rows of one configuration only, never different batch sizes.
- Rows of a table: one per resource shape (world size N, nodes x workers per node); 1x4 and 2x2 have the
  same N but are kept apart because intra-node and inter-node communication differ.
- n counts timed epochs pooled over the repeats of a shape; epoch time is their mean and their sample
  standard deviation (ddof=1), or 0 when n = 1; the coefficient of variation is that std / the mean.
- Baseline: the 1-worker row of the configuration; without one, the smallest world size (fewest nodes
  first). t = mean epoch time. speedup = t_base / t_N.
- Efficiency: weak scaling (per-worker batch fixed): t_base / t_N of the mean step time, epochs 2.. (each
  worker does the same work per step, so ideal scaling keeps the step time).
  Strong scaling (global batch fixed): speedup / (N / N_base).
- Throughput: samples processed in the timed epochs / their total time (samples per second).
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Dict, Iterable, List, Mapping

import pandas as pd

from analysis.schema import TRAINING_WORKLOADS, timed_values

# Config groups that say where and how a point ran, not what it measured.
NOT_CONFIGURATION = ("sweep.", "resources.", "cluster.")

# The explicit column schemas of the two frames (empty inputs give empty frames with these columns).
RUN_COLUMNS = [
    "path", "sweep", "point", "repeat", "seed", "workload", "scaling", "config_key", "fixed_batch",
    "world_size", "nodes", "workers_per_node", "per_worker_batch", "global_batch", "samples_per_epoch",
    "epoch_times_s", "step_times_s", "epoch_time_mean_s", "step_time_mean_s", "step_time_median_s",
    "samples_per_s",
]
STUDY_COLUMNS = ["sweep", "workload", "scaling", "config_key", "config_label", "fixed_batch"]
SCALING_COLUMNS = STUDY_COLUMNS + [
    "world_size", "nodes", "workers_per_node", "per_worker_batch", "global_batch", "runs",
    "n", "epoch_time_mean_s", "epoch_time_std_s", "epoch_time_cv",
    "step_n", "step_time_mean_s", "step_time_median_s", "samples_per_s", "baseline_world_size", "speedup", "efficiency",
]
# One table per configuration; "fixed_batch" (the batch the scaling mode holds fixed, as measured) guards
# the rule "never across batch sizes" even if a workload's config did not name its batch.
CONFIGURATION_KEYS = ["sweep", "workload", "scaling", "config_key", "fixed_batch"]
SHAPE_KEYS = ["world_size", "nodes", "workers_per_node"]


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{"workload": {"batch_size": 32}} -> {"workload.batch_size": 32}; lists stay values."""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def configuration_items(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The config values that define a configuration, by dotted key, sorted."""
    return {key: value for key, value in sorted(flatten(config).items())
            if not key.startswith(NOT_CONFIGURATION)}


def config_key(config: Mapping[str, Any]) -> str:
    """The configuration's identity: its items as canonical JSON, so equal configurations give equal text
    (and any value, spaces or lists included, stays unambiguous)."""
    return json.dumps(configuration_items(config), sort_keys=True)


def sample_std(values: List[float]) -> float:
    """Sample standard deviation (ddof=1); 0.0 for a single value, which has no spread to estimate."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def run_record(row: Mapping[str, Any]) -> Dict[str, Any]:
    """One ok training result as a flat record; every number recomputed from the raw arrays."""
    m, config = row["measurements"], row["config"]
    epochs = timed_values(m["epoch_time_s"], m)
    steps = [s for epoch in timed_values(m["step_time_s"], m) for s in epoch]
    scaling = config["workload"]["scaling"]
    epoch_mean = statistics.fmean(epochs)
    return {
        "path": row["path"],
        **{key: row["identity"][key] for key in ("sweep", "point", "repeat", "seed", "workload")},
        "scaling": scaling, "config_key": config_key(config),
        "fixed_batch": m["per_worker_batch"] if scaling == "weak" else m["global_batch"],
        "world_size": row["environment"]["world_size"], "nodes": config["resources"]["nodes"],
        "workers_per_node": config["resources"]["workers_per_node"],
        "per_worker_batch": m["per_worker_batch"], "global_batch": m["global_batch"],
        "samples_per_epoch": m["samples_per_epoch"], "epoch_times_s": epochs, "step_times_s": steps,
        "epoch_time_mean_s": epoch_mean, "step_time_mean_s": statistics.fmean(steps),
        "step_time_median_s": statistics.median(steps), "samples_per_s": m["samples_per_epoch"] / epoch_mean,
    }


def is_tabulated(row: Mapping[str, Any]) -> bool:
    """Whether a loaded result goes into a scaling table (ok, of a workload with per-epoch arrays)."""
    return row["status"] == "ok" and row["identity"]["workload"] in TRAINING_WORKLOADS


def runs_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per ok training result (columns: RUN_COLUMNS)."""
    return pd.DataFrame([run_record(row) for row in rows if is_tabulated(row)], columns=RUN_COLUMNS)


def _pooled(series: pd.Series) -> List[float]:
    return [value for values in series for value in values]


def shape_summary(runs: pd.DataFrame) -> Dict[str, Any]:
    """The runs of one resource shape of one configuration (repeats pooled) as one table row."""
    epochs, steps = _pooled(runs["epoch_times_s"]), _pooled(runs["step_times_s"])
    epoch_mean, epoch_std = statistics.fmean(epochs), sample_std(epochs)
    timed_samples = sum(row.samples_per_epoch * len(row.epoch_times_s) for row in runs.itertuples())
    return {
        **{key: runs[key].iloc[0] for key in SHAPE_KEYS + ["per_worker_batch", "global_batch"]},
        "runs": len(runs), "n": len(epochs),
        "epoch_time_mean_s": epoch_mean, "epoch_time_std_s": epoch_std,
        "epoch_time_cv": epoch_std / epoch_mean,  # coefficient of variation, same std (ddof=1), unrounded
        "step_n": len(steps), "step_time_mean_s": statistics.fmean(steps),
        "step_time_median_s": statistics.median(steps), "samples_per_s": timed_samples / sum(epochs),
    }


def add_speedup(table: pd.DataFrame, scaling: str) -> pd.DataFrame:
    """Speedup and efficiency of each row against the table's baseline (its first row: smallest N)."""
    table = table.sort_values(["world_size", "nodes"]).reset_index(drop=True)
    # Read the baseline cell by cell: a row taken as a Series would turn its integers into floats.
    base_n = table.loc[0, "world_size"]
    speedup = table.loc[0, "epoch_time_mean_s"] / table["epoch_time_mean_s"]
    if scaling == "weak":
        efficiency = table.loc[0, "step_time_mean_s"] / table["step_time_mean_s"]
    else:
        efficiency = speedup / (table["world_size"] / base_n)
    return table.assign(baseline_world_size=base_n, speedup=speedup, efficiency=efficiency)


def configuration_labels(runs: pd.DataFrame) -> Dict[str, str]:
    """For each config_key, the items in which it differs from the other configurations of its study
    (same sweep and workload), so a heading says "workload.batch_size=64" rather than the whole config;
    "" when the study has one configuration."""
    labels: Dict[str, str] = {}
    for _, study in runs.groupby(["sweep", "workload"], sort=True):
        items = {key: json.loads(key) for key in dict.fromkeys(study["config_key"])}
        names = sorted({name for parsed in items.values() for name in parsed})
        varying = [n for n in names if len({json.dumps(parsed.get(n)) for parsed in items.values()}) > 1]
        for key, parsed in items.items():
            labels[key] = " ".join(f"{n}={_value_text(parsed, n)}" for n in varying)
    return labels


def _value_text(items: Mapping[str, Any], name: str) -> str:
    if name not in items:
        return "(absent)"
    value = items[name]
    return value if isinstance(value, str) else json.dumps(value)


def scaling_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, resource shape), with speedup and efficiency (columns: SCALING_COLUMNS)."""
    labels = configuration_labels(runs)
    tables = []
    for configuration, config_runs in runs.groupby(CONFIGURATION_KEYS, sort=True):
        sweep, workload, scaling, key, fixed_batch = configuration
        shapes = [shape_summary(shape_runs) for _, shape_runs in config_runs.groupby(SHAPE_KEYS, sort=True)]
        table = add_speedup(pd.DataFrame(shapes), scaling)
        tables.append(table.assign(sweep=sweep, workload=workload, scaling=scaling, config_key=key,
                                   config_label=labels[key], fixed_batch=fixed_batch))
    if not tables:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    return pd.concat(tables, ignore_index=True)[SCALING_COLUMNS]
