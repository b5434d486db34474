"""The train workload's tables: run records in (analysis.train.runs), pandas out, no I/O.

- Repeats are pooled: n counts timed epochs over all runs of a row; epoch time: mean ± sample std
  (analysis.stats: ddof=1; 0 when n = 1). Throughput: samples of the timed epochs / their total time.
- Baseline: for each (group, fixed batch: per device for weak scaling, global for strong), the row with the
  smallest N that fits (fewest nodes first). speedup = t_base / t_N of the total epoch time (train speedup
  likewise from the train time); efficiency: weak t_base / t_N of the mean step time (rank 0, timed epochs),
  strong speedup / (N / N_base) (analysis.stats).
- Phases: one row per table row and data path (measurements.data_placement, host for results without it): the
  phase "data" is host time around next(loader) on the host path, device time of slicing and augmenting on the
  device path, so the two are never pooled.
- Communication (DDP): exposed comm per step = median synced step - median no_sync step of the probe
  (pooled over runs); per epoch = that x steps per epoch. NCCL kernel time per step from the profiler when
  measured. Bandwidth (Patarasuk & Yuan, analysis.allreduce.tables): gradient bytes S all-reduced per step,
  ring model T = 2(N-1)/N * S / B at the link's per-direction peak B; measured busbw = 2(N-1)/N * S / T_meas
  with T_meas the NCCL kernel time per step (else the exposed comm time, a lower bound of the all-reduce
  time, so its busbw and utilization are upper bounds); utilization = busbw / peak.
- Large batches: the loss and accuracy of epoch LARGE_BATCH_EPOCH, for rows whose runs all reached it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, List, Optional

import pandas as pd

from hpml.analysis.allreduce.tables import ring_allreduce_time, ring_utilization
from hpml.analysis.stats import coefficient_of_variation, efficiency, mean, pool, sample_std, speedup
from hpml.analysis.train.runs import PHASES, by_data_path, by_row, ok_runs, row_identity
from hpml.contract.collectives import algbw_GBps, bus_factor

LARGE_BATCH_EPOCH = 5  # the study reports the 5th epoch's loss and accuracy (Goyal et al.'s warm-up span)


TIME_COLUMNS = [
    "sweep", "group_key", "parallel", "scaling", "model", "precision", "fixed_batch", "per_device_batch",
    "devices", "nodes", "workers_per_node", "global_batch", "fits", "runs", "oom_runs", "n", "epoch_time_mean_s",
    "epoch_time_std_s", "epoch_time_cv", "train_time_mean_s", "train_time_std_s", "step_n", "step_mean_s", "step_median_s",
    "samples_per_s", "baseline_devices", "speedup", "train_speedup", "efficiency",
]


def _train_times(ok: List[Dict[str, Any]]) -> Optional[List[float]]:
    """The pooled train-phase epoch times, or None when a run predates measurements.train_time_s."""
    return None if any(r["train_time_s"] is None for r in ok) else pool(ok, "train_time_s")


def time_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Epoch times and speedup per (study group, fixed batch, resource shape); a row whose runs all ran out
    of memory has fits=False and no times."""
    rows = []
    for members in by_row(runs).values():
        ok = ok_runs(members)
        row = {**row_identity(members), "runs": len(ok), "oom_runs": sum(r["status"] == "oom" for r in members),
               "fits": bool(ok)}
        if ok:
            total, train, steps = pool(ok, "epoch_time_s"), _train_times(ok), pool(ok, "step_s")
            samples = sum(r["samples_per_epoch"] * len(r["epoch_time_s"]) for r in ok)
            row.update(n=len(total), epoch_time_mean_s=mean(total), epoch_time_std_s=sample_std(total),
                       epoch_time_cv=coefficient_of_variation(total),  # same std (ddof=1), unrounded
                       train_time_mean_s=mean(train) if train else math.nan,
                       train_time_std_s=sample_std(train) if train else math.nan,
                       step_n=len(steps), step_mean_s=mean(steps), step_median_s=statistics.median(steps),
                       samples_per_s=samples / sum(total))
        rows.append(row)
    table = pd.DataFrame(rows, columns=TIME_COLUMNS).astype({"n": "Int64", "step_n": "Int64"})  # NaN: no fit
    return add_speedups(table)


def add_speedups(table: pd.DataFrame) -> pd.DataFrame:
    """Speedup and efficiency against the smallest N that fits (fewest nodes first) of each (group, fixed
    batch): the per-device batch for weak scaling, the global batch for strong scaling."""
    table = table.sort_values(["sweep", "group_key", "fixed_batch", "devices", "nodes"], ignore_index=True)
    columns = {name: [math.nan] * len(table) for name in ("baseline_devices", "speedup", "train_speedup", "efficiency")}
    records = table.to_dict("records")
    for index in table.groupby(["sweep", "group_key", "fixed_batch"], sort=False).indices.values():
        fitting = [i for i in index if records[i]["fits"]]
        if not fitting:
            continue
        base = records[fitting[0]]
        for i in fitting:
            row = records[i]
            total_speedup = speedup(base["epoch_time_mean_s"], row["epoch_time_mean_s"])
            columns["baseline_devices"][i] = base["devices"]
            columns["speedup"][i] = total_speedup
            columns["train_speedup"][i] = speedup(base["train_time_mean_s"], row["train_time_mean_s"])
            columns["efficiency"][i] = efficiency(row["scaling"], speedup_n=total_speedup, n_base=base["devices"],
                                                  n=row["devices"], step_base=base["step_mean_s"],
                                                  step_n=row["step_mean_s"])
    table = table.assign(**columns)
    table["baseline_devices"] = table["baseline_devices"].astype("Int64")
    return table


PHASE_COLUMNS = ["sweep", "group_key", "parallel", "data_placement", "per_device_batch", "devices", "step_n"] + \
    [f"{p}_mean_s" for p in PHASES] + ["train_step_mean_s", "epoch_time_mean_s", "train_time_mean_s"]


def phase_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Mean seconds per step of each phase (rank 0, timed epochs, repeats pooled), one row per table row and data
    path: "data" is host time on the host path and device time on the device path, so the paths are never pooled."""
    rows = []
    for members in by_row(runs).values():
        timed = [r for r in ok_runs(members) if r["phase_steps_s"] and r["train_time_s"] is not None]
        for path, ok in by_data_path(timed).items():
            phases = {p: [s for r in ok for s in r["phase_steps_s"][p]] for p in PHASES}
            row = {**row_identity(ok), "data_placement": path, "step_n": len(phases["data"]),
                   **{f"{p}_mean_s": mean(phases[p]) for p in PHASES},
                   "epoch_time_mean_s": mean(pool(ok, "epoch_time_s")),
                   "train_time_mean_s": mean(pool(ok, "train_time_s"))}
            row["train_step_mean_s"] = sum(row[f"{p}_mean_s"] for p in PHASES[1:])
            rows.append(row)
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


COMM_COLUMNS = [
    "sweep", "group_key", "per_device_batch", "devices", "runs", "steps_per_epoch", "probe_n",
    "compute_step_median_s", "compute_step_min_s", "compute_step_max_s",
    "synced_step_median_s", "synced_step_min_s", "synced_step_max_s",
    "exposed_comm_step_s", "exposed_comm_epoch_s", "compute_epoch_s", "exposed_comm_share",
    "exposed_comm_step_per_run_s", "nccl_kernel_step_s", "nccl_kernel_epoch_s", "train_time_mean_s",
]


def comm_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Compute vs communication per DDP row that ran the no_sync probe."""
    rows = []
    for members in by_row(runs).values():
        ok = [r for r in ok_runs(members) if r.get("comm_probe")]
        if not ok:
            continue
        no_sync = [s for r in ok for s in r["comm_probe"]["no_sync_step_s"]]
        synced = [s for r in ok for s in r["comm_probe"]["sync_step_s"]]
        compute, sync = statistics.median(no_sync), statistics.median(synced)
        exposed = sync - compute
        steps = ok[0]["steps_per_epoch"]
        profiles = [r["comm_profile"]["nccl_kernel_s_per_step"] for r in ok if r.get("comm_profile")]
        nccl = mean(profiles) if profiles else math.nan
        rows.append({
            **{k: row_identity(ok)[k] for k in ("sweep", "group_key", "per_device_batch", "devices")},
            "runs": len(ok), "steps_per_epoch": steps, "probe_n": len(synced),
            "compute_step_median_s": compute, "compute_step_min_s": min(no_sync), "compute_step_max_s": max(no_sync),
            "synced_step_median_s": sync, "synced_step_min_s": min(synced), "synced_step_max_s": max(synced),
            "exposed_comm_step_s": exposed, "exposed_comm_epoch_s": exposed * steps,
            "compute_epoch_s": compute * steps, "exposed_comm_share": exposed / sync,
            "exposed_comm_step_per_run_s": [r["comm_probe"]["sync_median_s"] - r["comm_probe"]["no_sync_median_s"]
                                            for r in ok],
            "nccl_kernel_step_s": nccl, "nccl_kernel_epoch_s": nccl * steps,
            "train_time_mean_s": mean(train) if (train := _train_times(ok)) else math.nan,
        })
    return pd.DataFrame(rows, columns=COMM_COLUMNS)


BANDWIDTH_COLUMNS = [
    "sweep", "group_key", "per_device_batch", "devices", "gradient_bytes", "link", "link_peak_GBps",
    "ring_model_s", "measured_s", "measured_from", "algbw_GBps", "busbw_GBps", "utilization",
]


def bandwidth_row(gradient_bytes: int, n: int, peak: Optional[float], nccl_s: float,
                  exposed_s: float) -> Dict[str, Any]:
    """The ring model and the measured utilization of one setup's gradient all-reduce per step."""
    if not math.isnan(nccl_s) and nccl_s > 0:
        measured, source = nccl_s, "NCCL kernel time (profiler)"
    elif exposed_s > 0:
        measured, source = exposed_s, "exposed comm (lower bound: busbw is an upper bound)"
    else:
        measured, source = math.nan, "no positive comm time measured"
    ok = not math.isnan(measured)
    alg = algbw_GBps(gradient_bytes, measured) if ok else math.nan
    return {
        "gradient_bytes": gradient_bytes, "link_peak_GBps": peak,
        "ring_model_s": ring_allreduce_time(gradient_bytes, n, peak, 0.0) if peak else math.nan,
        "measured_s": measured, "measured_from": source, "algbw_GBps": alg,
        "busbw_GBps": alg * bus_factor("all_reduce", n) if ok else math.nan,
        "utilization": ring_utilization(gradient_bytes, measured, n, peak) if ok and peak else math.nan,
    }


def bandwidth_table(runs: List[Dict[str, Any]], comm: pd.DataFrame) -> pd.DataFrame:
    """Gradient all-reduce per step against the ring model, for DDP rows with N > 1 and a comm probe."""
    rows = []
    for row in comm.itertuples():
        if row.devices < 2:
            continue
        run = next(r for r in runs if r["status"] == "ok" and r["sweep"] == row.sweep
                   and r["group_key"] == row.group_key and r["per_device_batch"] == row.per_device_batch and r["devices"] == row.devices)
        rows.append({"sweep": row.sweep, "group_key": row.group_key, "per_device_batch": row.per_device_batch,
                     "devices": row.devices, "link": run["link"],
                     **bandwidth_row(run["gradient_bytes"], row.devices, run["link_peak_GBps"],
                                     row.nccl_kernel_step_s, row.exposed_comm_step_s)})
    return pd.DataFrame(rows, columns=BANDWIDTH_COLUMNS)


LARGE_BATCH_COLUMNS = [
    "sweep", "group_key", "parallel", "per_device_batch", "devices", "global_batch", "lr", "lr_scaling",
    "warmup_epochs", "lr_target", "epoch", "runs", "loss_mean", "loss_std", "accuracy_mean", "accuracy_std",
]


def large_batch_table(runs: List[Dict[str, Any]], epoch: int = LARGE_BATCH_EPOCH) -> pd.DataFrame:
    """The `epoch`-th epoch's mean training loss and accuracy per setup (over repeats), for the setups whose
    runs all reached that epoch; empty when none did (the section is then left out)."""
    rows = []
    for members in by_row(runs).values():
        ok = ok_runs(members)
        if not ok or min(len(r["train_loss"]) for r in ok) < epoch:
            continue  # a run that stopped earlier has no such epoch to show
        shown = epoch
        losses = [r["train_loss"][shown - 1] for r in ok]
        accuracies = [r["train_accuracy"][shown - 1] for r in ok]
        first = ok[0]
        rows.append({**{k: row_identity(ok)[k] for k in ("sweep", "group_key", "parallel", "per_device_batch",
                                                          "devices", "global_batch")},
                     "lr": first["lr"], "lr_scaling": first["lr_scaling"], "warmup_epochs": first["warmup_epochs"],
                     "lr_target": first["lr_target"], "epoch": shown, "runs": len(ok),
                     "loss_mean": mean(losses), "loss_std": sample_std(losses),
                     "accuracy_mean": mean(accuracies), "accuracy_std": sample_std(accuracies)})
    return pd.DataFrame(rows, columns=LARGE_BATCH_COLUMNS)


OVERHEAD_COLUMNS = ["sweep", "path", "model", "precision", "per_device_batch", "devices", "blocks",
                    "steps_per_block", "plain_samples_per_s", "instrumented_samples_per_s",
                    "instrumented_min", "instrumented_max", "plain_min", "plain_max", "overhead"]


def overhead_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """The plain vs instrumented loop check, one row per run that made it (medians over the blocks)."""
    rows = []
    for run in runs:
        check = run.get("overhead_check")
        if run["status"] != "ok" or not check:
            continue
        plain, instrumented = check["plain_samples_per_s"], check["instrumented_samples_per_s"]
        p, i = statistics.median(plain), statistics.median(instrumented)
        rows.append({"sweep": run["sweep"], "path": run["path"], "model": run["model"], "precision": run["precision"],
                     "per_device_batch": run["per_device_batch"], "devices": run["devices"], "blocks": len(plain),
                     "steps_per_block": check["steps_per_block"], "plain_samples_per_s": p,
                     "instrumented_samples_per_s": i, "instrumented_min": min(instrumented),
                     "instrumented_max": max(instrumented), "plain_min": min(plain), "plain_max": max(plain),
                     "overhead": 1 - i / p})
    return pd.DataFrame(rows, columns=OVERHEAD_COLUMNS)


BATCH_PROBE_COLUMNS = ["sweep", "path", "model", "precision", "devices", "start", "limit", "tried",
                       "largest_fitting", "first_oom", "largest_peak_memory_bytes"]


def batch_probe_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for run in runs:
        probe = run.get("batch_probe")
        if not probe:
            continue
        fitting = [t for t in probe["tried"] if t["fits"]]
        rows.append({"sweep": run["sweep"], "path": run["path"], "model": run["model"],
                     "precision": run["precision"], "devices": run["devices"], "start": probe["start"],
                     "limit": probe["limit"], "tried": [t["batch"] for t in probe["tried"]],
                     "largest_fitting": probe["largest_fitting"], "first_oom": probe["first_oom"],
                     "largest_peak_memory_bytes": fitting[-1]["peak_memory_bytes"] if fitting else None})
    return pd.DataFrame(rows, columns=BATCH_PROBE_COLUMNS)


def dataset_notes(runs: List[Dict[str, Any]]) -> List[str]:
    """Distinct notes about the data a study really used (e.g. synthetic in place of CIFAR-10)."""
    return list(dict.fromkeys(r["dataset_note"] for r in runs if r.get("dataset_note")))
