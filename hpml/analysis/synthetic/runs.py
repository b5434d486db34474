"""One synthetic result -> one run row (workloads/synthetic/): every rate recomputed from the raw arrays.

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
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Sequence

import pandas as pd

from hpml.analysis.configuration import configuration_items
from hpml.analysis.results import WorkloadResults, where
from hpml.analysis.stats import differing_labels, natural_key, population_std

HOROVOD_Z = 1.96

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
    mean, pm = statistics.fmean(rank0_rates), HOROVOD_Z * population_std(rank0_rates)
    return {"per_gpu_mean": mean, "per_gpu_pm": pm, "total_mean": mean * world_size, "total_pm": pm * world_size}


def summed_rates(rates_per_rank: Sequence[Sequence[float]]) -> List[float]:
    """Per iteration, the sum over ranks of each rank's own rate."""
    if len({len(rates) for rates in rates_per_rank}) != 1:
        raise ValueError("ranks recorded different numbers of iterations")
    return [sum(column) for column in zip(*rates_per_rank)]



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
        text = differing_labels({k: json.loads(k) for k in dict.fromkeys(study[key])})
        labels[study.index] = study[key].map(text)
    return labels


class SyntheticRuns(NamedTuple):
    """rows: one per ok synthetic result (RUN_COLUMNS). skipped: ok synthetic results whose measurements
    could not be read, one line each (failed results are listed by the report, not here)."""

    rows: pd.DataFrame
    skipped: List[str]


def synthetic_runs(docs: Iterable[Mapping[str, Any]]) -> SyntheticRuns:
    """The run rows of the synthetic results among docs, sorted by sweep, label (numbers by value) and shape."""
    results = WorkloadResults("synthetic", [doc for doc in docs if doc["identity"]["workload"] == "synthetic"])
    return SyntheticRuns(rows=runs_frame(results), skipped=[f"{where(d)}: {why}" for d, why in results.unreadable])


def runs_frame(results: WorkloadResults) -> pd.DataFrame:
    runs = pd.DataFrame(results.rows(lambda doc: [synthetic_run(doc)]), columns=RUN_COLUMNS)
    if runs.empty:
        return runs
    runs["label"] = label_configurations(runs, "config_key")
    order = sorted(range(len(runs)), key=lambda i: (runs["sweep"].iat[i], natural_key(runs["label"].iat[i]),
                                                    runs["world_size"].iat[i], runs["nodes"].iat[i],
                                                    runs["point"].iat[i], runs["repeat"].iat[i]))
    return runs.iloc[order].reset_index(drop=True)
