"""Tables of the synthetic benchmark: run rows (analysis.synthetic.runs) in, pandas out, no I/O.

- Scaling, within one configuration (the whole config but resources, sweep and cluster: the same model and
  the same batch rule), against its baseline (the smallest world size):
    weak   (per-worker batch fixed):  efficiency = t_base / t_N  (each iteration does the same work per rank);
                                      speedup = throughput_N / throughput_base
    strong (global batch fixed):      speedup = t_base / t_N, efficiency = speedup / (N / N_base)
  ideal throughput = throughput_base x N / N_base (the dashed line of the plot).
- Time per epoch = workload.epoch_images / throughput. Cost of an epoch = its hours x N GPUs x
  workload.gpu_hour_usd (the GPU-hour price table, conf/pricing/); training cost = that x workload.train_epochs.
- DDP vs Horovod-style side by side (measurements.paired, workloads/paired.py): per round r and method, the
  total rate (sum over ranks of each rank's own rate in that method's iteration of round r); ratio[r] =
  horovod[r] / ddp[r]; the table gives the median of ratio[r] over the rounds with [min, max], and each
  method's median total rate. Pairing by round cancels a drift of the host that hits both methods alike.
- Comparison of all-reduce implementations: rows of one sweep that differ only in the method keys
  (backend, NCCL algorithm, data-parallel method, fusion threshold, fp16 compression), at one resource shape.
  "vs DDP" divides by the row with data_parallel=ddp and otherwise the same method keys.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, Optional, Sequence

import pandas as pd

from hpml.analysis.stats import coefficient_of_variation, efficiency, natural_key, pooled, rate_speedup, speedup
from hpml.analysis.synthetic.runs import SHAPE_KEYS, horovod_summary, label_configurations, paired_ratios

SECONDS_PER_HOUR = 3600.0

SCALING_COLUMNS = [
    "sweep", "label", "scaling", "model", "world_size", "nodes", "workers_per_node", "per_worker_batch",
    "global_batch", "runs", "n", "throughput_median", "throughput_min", "throughput_max", "throughput_cv",
    "ideal_throughput", "iteration_time_median_s", "baseline_world_size", "speedup", "efficiency",
    "horovod_total_mean", "horovod_total_pm", "epoch_images", "epoch_time_s", "price_name", "gpu_hour_usd",
    "epoch_cost_usd", "train_epochs", "train_cost_usd",
]
PROTOCOL_COLUMNS = [
    "sweep", "label", "world_size", "nodes", "workers_per_node", "per_worker_batch", "runs", "n",
    "horovod_per_gpu_mean", "horovod_per_gpu_pm", "horovod_host_per_gpu_mean", "horovod_host_per_gpu_pm",
    "horovod_total_mean", "horovod_total_pm", "throughput_median", "throughput_min", "throughput_max",
    "throughput_cv", "horovod_total_vs_ours",
]
PAIRED_RUN_COLUMNS = [  # taken from the run row as they are
    "sweep", "label", "point", "repeat", "world_size", "nodes", "workers_per_node", "per_worker_batch", "backend",
    "nccl_algo", "fusion_threshold_mb", "fp16_allreduce",
]
PAIRED_COLUMNS = PAIRED_RUN_COLUMNS + ["rounds", "ddp_median", "horovod_median", "ratio_median", "ratio_min",
                                      "ratio_max"]
COMPARISON_COLUMNS = [
    "sweep", "setup", "world_size", "nodes", "workers_per_node", "backend", "nccl_algo", "data_parallel",
    "fusion_threshold_mb", "fp16_allreduce", "runs", "n", "throughput_median", "throughput_min",
    "throughput_max", "throughput_cv", "horovod_total_mean", "horovod_total_pm", "vs_fastest", "vs_ddp",
]



def epoch_time_s(epoch_images: int, images_per_s: float) -> float:
    return epoch_images / images_per_s


def gpu_cost_usd(seconds: float, gpus: int, gpu_hour_usd: Optional[float]) -> float:
    """What `gpus` GPUs cost for `seconds` at a GPU-hour price; NaN when no price is known."""
    if gpu_hour_usd is None or (isinstance(gpu_hour_usd, float) and math.isnan(gpu_hour_usd)):
        return math.nan
    return seconds / SECONDS_PER_HOUR * gpus * gpu_hour_usd



def shape_numbers(runs: pd.DataFrame) -> Dict[str, Any]:
    """The runs of one configuration at one resource shape (repeats pooled): throughput and Horovod's numbers."""
    totals, slowest = pooled(runs["totals"]), pooled(runs["slowest_times_s"])
    n = int(runs["world_size"].iloc[0])
    hvd = horovod_summary(pooled(runs["rank0_rates"]), n)
    host = horovod_summary(pooled(runs["rank0_host_rates"]), n)
    median = statistics.median(totals)
    return {
        "runs": len(runs), "n": len(totals), "throughput_median": median, "throughput_min": min(totals),
        "throughput_max": max(totals), "throughput_cv": coefficient_of_variation(totals),
        "iteration_time_median_s": statistics.median(slowest),
        "horovod_per_gpu_mean": hvd["per_gpu_mean"], "horovod_per_gpu_pm": hvd["per_gpu_pm"],
        "horovod_total_mean": hvd["total_mean"], "horovod_total_pm": hvd["total_pm"],
        "horovod_host_per_gpu_mean": host["per_gpu_mean"], "horovod_host_per_gpu_pm": host["per_gpu_pm"],
        "horovod_total_vs_ours": hvd["total_mean"] / median,
    }


def _first(runs: pd.DataFrame, columns: Sequence[str]) -> Dict[str, Any]:
    return {column: runs[column].iloc[0] for column in columns}


def shape_rows(runs: pd.DataFrame, group_keys: Sequence[str], carried: Sequence[str]) -> pd.DataFrame:
    rows = []
    for _, group in runs.groupby(list(group_keys) + SHAPE_KEYS, sort=True, dropna=False):
        rows.append({**_first(group, list(group_keys) + SHAPE_KEYS + list(carried)), **shape_numbers(group)})
    return pd.DataFrame(rows)


def scaling_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (sweep, configuration, resource shape): throughput, ideal, speedup, efficiency, epoch
    time and cost (columns: SCALING_COLUMNS)."""
    if runs.empty:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    carried = ["label", "scaling", "model", "per_worker_batch", "global_batch", "epoch_images", "price_name",
               "gpu_hour_usd", "train_epochs"]
    tables = []
    for _, config in shape_rows(runs, ["sweep", "config_key"], carried).groupby(["sweep", "config_key"], sort=True):
        table = config.sort_values(["world_size", "nodes"]).reset_index(drop=True)
        base_n, t_base = table.loc[0, "world_size"], table.loc[0, "iteration_time_median_s"]
        scaling = table.loc[0, "scaling"]
        table["baseline_world_size"] = base_n
        table["ideal_throughput"] = table.loc[0, "throughput_median"] * table["world_size"] / base_n
        rate_base = table.loc[0, "throughput_median"]
        table["speedup"] = [speedup(t_base, t) if scaling == "strong" else rate_speedup(rate_base, rate)
                            for t, rate in zip(table["iteration_time_median_s"], table["throughput_median"])]
        table["efficiency"] = [efficiency(scaling, speedup_n=speedup(t_base, t), n_base=base_n, n=n, step_base=t_base,
                                          step_n=t)
                               for t, n in zip(table["iteration_time_median_s"], table["world_size"])]
        table["epoch_time_s"] = [epoch_time_s(e, r) for e, r in zip(table["epoch_images"], table["throughput_median"])]
        table["epoch_cost_usd"] = [gpu_cost_usd(s, n, p) for s, n, p in
                                   zip(table["epoch_time_s"], table["world_size"], table["gpu_hour_usd"])]
        table["train_cost_usd"] = table["epoch_cost_usd"] * table["train_epochs"]
        tables.append(table)
    return pd.concat(tables, ignore_index=True)[SCALING_COLUMNS]


def protocol_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Horovod's numbers (device clock and its own host clock) next to ours, per configuration and shape."""
    if runs.empty:
        return pd.DataFrame(columns=PROTOCOL_COLUMNS)
    table = shape_rows(runs, ["sweep", "config_key"], ["label", "per_worker_batch"])
    return natural_order(table, ["sweep", "label", "world_size", "nodes"])[PROTOCOL_COLUMNS]


def natural_order(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The rows sorted by `columns`, text columns with their numbers by value ("batch_size=8" before 32)."""
    keys = [[natural_key(v) if isinstance(v, str) else v for v in table[c]] for c in columns]
    order = sorted(range(len(table)), key=lambda i: tuple(k[i] for k in keys))
    return table.iloc[order].reset_index(drop=True)


def paired_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per result that ran DDP and Horovod-style side by side (columns: PAIRED_COLUMNS)."""
    rows = []
    for _, run in runs.iterrows():
        if run["paired_totals"] is None:
            continue
        ddp, horovod = run["paired_totals"]["ddp"], run["paired_totals"]["horovod"]
        ratios = paired_ratios(ddp, horovod)
        rows.append({**{k: run[k] for k in PAIRED_RUN_COLUMNS}, "rounds": len(ratios),
                     "ddp_median": statistics.median(ddp), "horovod_median": statistics.median(horovod),
                     "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)})
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def comparison_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Throughput of the all-reduce implementations (method keys) at each shape of each setup of a sweep;
    only setups with more than one method. Columns: COMPARISON_COLUMNS."""
    if runs.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    methods = ["backend", "nccl_algo", "data_parallel", "fusion_threshold_mb", "fp16_allreduce"]
    runs = runs.assign(setup=label_configurations(runs, "setup_key"))
    table = shape_rows(runs, ["sweep", "setup_key"] + methods, ["setup"])
    tables = []
    for _, group in table.groupby(["sweep", "setup_key"] + SHAPE_KEYS, sort=True):
        if len(group) < 2:
            continue
        group = group.sort_values("throughput_median", ascending=False).reset_index(drop=True)
        group["vs_fastest"] = group["throughput_median"] / group.loc[0, "throughput_median"]
        others = [tuple(row[k] for k in methods if k != "data_parallel") for _, row in group.iterrows()]
        ddp = {key: rate for key, rate, method in zip(others, group["throughput_median"], group["data_parallel"])
               if method == "ddp"}
        group["vs_ddp"] = [rate / ddp.get(key, math.nan) for key, rate in zip(others, group["throughput_median"])]
        tables.append(group)
    if not tables:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    return pd.concat(tables, ignore_index=True)[COMPARISON_COLUMNS]
