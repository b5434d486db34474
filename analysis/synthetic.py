"""Tables of the synthetic benchmark (workloads/synthetic.py): pure functions, result documents in, pandas out.

Every number is recomputed from the raw per-rank arrays of measurements (never from `derived`):

- rate[r][i] = images_per_iteration_per_rank / iteration_time_s_per_rank[r][i]: images/s of rank r in timed
  iteration i, timed on the device.
- Horovod's way (its pytorch_synthetic_benchmark.py prints this): rank 0's rates only; "Img/sec per GPU" is
  their mean ± 1.96 x their population std (numpy's std, ddof=0; a spread, not a confidence interval), and
  the "Total" is both numbers times n. Also shown with Horovod's own clock (host_iteration_time_s_per_rank:
  the host's time, no device synchronize), which is what its script measures.
- Our way: per iteration, total[i] = sum over ranks of rate[r][i] (each rank's own rate, not rank 0's times
  n); the throughput is the median of total[i] over the iterations (of every run of a row), with
  [min, max], n, and the coefficient of variation std/mean with the sample std (ddof=1), not rounded.
- Time of an iteration: its slowest rank's (max over r of iteration_time_s_per_rank[r][i]); t = the median
  over iterations.
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

import json
import math
import statistics
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence

import pandas as pd

from analysis.results import workload_rows
from analysis.scaling import configuration_items

HOROVOD_Z = 1.96
CV_DDOF = 1
SECONDS_PER_HOUR = 3600.0

# Config keys that choose how gradients are all-reduced: rows differing only in these are compared.
METHOD_KEYS = ["workload.backend", "workload.nccl_algo", "workload.data_parallel", "workload.fusion_threshold_mb",
               "workload.fp16_allreduce"]
# Config keys that only say how a rate is turned into time and money: they never separate configurations.
COSTING_KEYS = ["workload.epoch_images", "workload.train_epochs", "workload.price_name", "workload.gpu_hour_usd"]
# Config keys that only add a measurement after the protocol (workloads/paired.py): nor do they.
EXTRA_MEASUREMENT_KEYS = ["workload.paired_rounds"]
NOT_CONFIGURATION_KEYS = COSTING_KEYS + EXTRA_MEASUREMENT_KEYS
SHAPE_KEYS = ["world_size", "nodes", "workers_per_node"]

RUN_COLUMNS = [
    "path", "sweep", "point", "repeat", "config_key", "setup_key", "label", "model", "image_size", "scaling",
    "per_worker_batch", "global_batch", "backend", "nccl_algo", "nccl_algo_env", "data_parallel",
    "fusion_threshold_mb", "fp16_allreduce", "backward_passes_per_step", "device",
    "world_size", "nodes", "workers_per_node", "epoch_images", "train_epochs", "price_name", "gpu_hour_usd",
    "rank0_rates", "rank0_host_rates", "totals", "slowest_times_s", "paired_totals",
]
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


# --- formulas ------------------------------------------------------------------------------------------


def rates_of(times_s: Sequence[float], images: int) -> List[float]:
    """Images/s of each iteration: the images it processed over its time."""
    if any(t <= 0 for t in times_s):
        raise ValueError(f"iteration times must be > 0 s, got {list(times_s)}")
    return [images / t for t in times_s]


def paired_totals(paired: Mapping[str, Any]) -> Dict[str, List[float]]:
    """measurements.paired -> per method, the total rate of each round (sum over ranks of each rank's rate)."""
    images = paired["images_per_iteration_per_rank"]
    totals = {method: summed_rates([rates_of(rank, images) for rank in per_rank])
              for method, per_rank in paired["iteration_time_s_per_rank"].items()}
    if {len(values) for values in totals.values()} != {paired["rounds"]}:
        raise ValueError(f"measurements.paired: {paired['rounds']} rounds, but the methods recorded "
                         f"{ {m: len(v) for m, v in totals.items()} } iterations")
    return totals


def paired_ratios(ddp: Sequence[float], horovod: Sequence[float]) -> List[float]:
    """Round by round, Horovod-style's rate over DDP's."""
    return [h / d for d, h in zip(ddp, horovod)]


def horovod_summary(rank0_rates: Sequence[float], world_size: int) -> Dict[str, float]:
    """Horovod's printout from rank 0's rates: mean ± 1.96 x population std, per GPU and x world size."""
    mean, pm = statistics.fmean(rank0_rates), HOROVOD_Z * statistics.pstdev(rank0_rates)
    return {"per_gpu_mean": mean, "per_gpu_pm": pm, "total_mean": mean * world_size, "total_pm": pm * world_size}


def summed_rates(rates_per_rank: Sequence[Sequence[float]]) -> List[float]:
    """Per iteration, the sum over ranks of each rank's own rate."""
    if len({len(rates) for rates in rates_per_rank}) != 1:
        raise ValueError("ranks recorded different numbers of iterations")
    return [sum(column) for column in zip(*rates_per_rank)]


def coefficient_of_variation(values: Sequence[float], ddof: int = CV_DDOF) -> float:
    """std / mean with the std of the given ddof (1: sample std); 0.0 for one value when ddof=1 (no
    spread to estimate). Never rounded."""
    if len(values) <= ddof:
        return 0.0
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if ddof == 1 else statistics.pstdev(values)
    return std / mean


def scaling_efficiency(scaling: str, t_base: float, t_n: float, n_base: int, n: int) -> float:
    """weak: t_base / t_N (per-iteration time); strong: speedup / (N / N_base) with speedup = t_base / t_N."""
    if scaling == "weak":
        return t_base / t_n
    if scaling == "strong":
        return (t_base / t_n) / (n / n_base)
    raise ValueError(f"scaling must be weak or strong, got {scaling!r}")


def epoch_time_s(epoch_images: int, images_per_s: float) -> float:
    return epoch_images / images_per_s


def gpu_cost_usd(seconds: float, gpus: int, gpu_hour_usd: Optional[float]) -> float:
    """What `gpus` GPUs cost for `seconds` at a GPU-hour price; NaN when no price is known."""
    if gpu_hour_usd is None or (isinstance(gpu_hour_usd, float) and math.isnan(gpu_hour_usd)):
        return math.nan
    return seconds / SECONDS_PER_HOUR * gpus * gpu_hour_usd


# --- one result -> one run row ---------------------------------------------------------------------------


def _key(items: Mapping[str, Any], drop: Sequence[str]) -> str:
    return json.dumps({k: v for k, v in items.items() if k not in drop}, sort_keys=True)


def synthetic_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """One ok synthetic result as a flat record, recomputed from its raw arrays."""
    m, config, workload = doc["measurements"], doc["config"], doc["config"]["workload"]
    n = doc["environment"]["world_size"]
    images = m["images_per_iteration_per_rank"]
    times = m["iteration_time_s_per_rank"]
    if len(times) != n:
        raise ValueError(f"{len(times)} ranks in iteration_time_s_per_rank, world size {n}")
    rates = [rates_of(rank, images) for rank in times]
    items = configuration_items(config)
    return {
        "path": doc.get("path"), **{k: doc["identity"][k] for k in ("sweep", "point", "repeat")},
        "config_key": _key(items, NOT_CONFIGURATION_KEYS),
        "setup_key": _key(items, METHOD_KEYS + NOT_CONFIGURATION_KEYS),
        "label": "",  # filled in per study by label_configurations
        **{k: workload[k] for k in ("model", "image_size", "scaling", "nccl_algo", "data_parallel",
                                    "fusion_threshold_mb", "fp16_allreduce", "backward_passes_per_step",
                                    "epoch_images", "train_epochs", "price_name", "gpu_hour_usd")},
        "per_worker_batch": m["per_worker_batch"], "global_batch": m["global_batch"],
        "backend": doc["environment"]["backend"], "device": doc["environment"]["device"],
        "nccl_algo_env": m.get("nccl_algo_env"),
        "world_size": n, "nodes": config["resources"]["nodes"],
        "workers_per_node": config["resources"]["workers_per_node"],
        "rank0_rates": rates[0],
        "rank0_host_rates": rates_of(m["host_iteration_time_s_per_rank"][0], images),
        "totals": summed_rates(rates),
        "slowest_times_s": [max(column) for column in zip(*times)],
        "paired_totals": paired_totals(m["paired"]) if m.get("paired") else None,
    }


def label_configurations(runs: pd.DataFrame, key: str) -> pd.Series:
    """For each row, the config items in which its `key` differs from the others of its sweep ("" if none)."""
    labels = pd.Series("", index=runs.index, dtype=object)
    for _, study in runs.groupby("sweep", sort=True):
        parsed = {k: json.loads(k) for k in dict.fromkeys(study[key])}
        names = sorted({name for items in parsed.values() for name in items})
        varying = [n for n in names if len({json.dumps(items.get(n)) for items in parsed.values()}) > 1]
        text = {k: " ".join(f"{n.removeprefix('workload.')}={items.get(n)}" for n in varying)
                for k, items in parsed.items()}
        labels[study.index] = study[key].map(text)
    return labels


class SyntheticRuns(NamedTuple):
    """rows: one per ok synthetic result (RUN_COLUMNS). skipped: synthetic results that gave no row, why."""

    rows: pd.DataFrame
    skipped: List[str]


def synthetic_runs(docs: Iterable[Mapping[str, Any]]) -> SyntheticRuns:
    rows, skipped = workload_rows(docs, "synthetic", lambda doc: [synthetic_run(doc)])
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS)
    if not runs.empty:
        runs["label"] = label_configurations(runs, "config_key")
    runs = runs.sort_values(["sweep", "label", "world_size", "nodes", "point", "repeat"], kind="stable",
                            ignore_index=True)
    return SyntheticRuns(rows=runs, skipped=skipped)


# --- tables ----------------------------------------------------------------------------------------------


def _pooled(series: pd.Series) -> List[float]:
    return [value for values in series for value in values]


def shape_numbers(runs: pd.DataFrame) -> Dict[str, Any]:
    """The runs of one configuration at one resource shape (repeats pooled): throughput and Horovod's numbers."""
    totals, slowest = _pooled(runs["totals"]), _pooled(runs["slowest_times_s"])
    n = int(runs["world_size"].iloc[0])
    hvd = horovod_summary(_pooled(runs["rank0_rates"]), n)
    host = horovod_summary(_pooled(runs["rank0_host_rates"]), n)
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
        table["speedup"] = t_base / table["iteration_time_median_s"] if scaling == "strong" else \
            table["throughput_median"] / table.loc[0, "throughput_median"]
        table["efficiency"] = [scaling_efficiency(scaling, t_base, t, base_n, n)
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
    return table.sort_values(["sweep", "label", "world_size", "nodes"], ignore_index=True)[PROTOCOL_COLUMNS]


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
