"""The data-loader study's table: one row per setting of a group (analysis.dataloader.runs), pandas out, no I/O.

- A setting is the data path and, on the host path, the DataLoader's options as they ran (prefetch resolved as
  PyTorch resolves it: none without workers, else the given factor or 2). Runs of one setting (repeats) are pooled:
  n counts their timed epochs.
- Epoch time: mean ± sample std (ddof=1; 0 when n = 1) of the pooled timed epochs. samples/s: each timed epoch's
  samples / its time, mean ± sample std over the same epochs.
- The default is PyTorch's DataLoader defaults: the host path, num_workers=0, pin_memory=False,
  persistent_workers=False, no prefetch. speedup vs default = mean epoch time of the default / that of the setting
  (analysis.stats.speedup; > 1 is faster). The fastest setting is the one of the smallest mean epoch time.
- Is the default optimal? Compared with the fastest DataLoader setting (the device path has no DataLoader and is
  named apart): yes when the default is the fastest; otherwise the difference of means is held against the spread,
  |mean_a - mean_b| > 2 sqrt(s_a^2/n_a + s_b^2/n_b) (analysis.stats.exceeds_spread), when both have n >= 2.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.dataloader.runs import DEVICE, HOST
from hpml.analysis.stats import exceeds_spread, pooled, sample_std, speedup

SETTING = ["placement", "workers", "pin_memory", "persistent_workers", "prefetch_factor"]
DEFAULT_SETTING = (HOST, 0, False, False, None)  # torch.utils.data.DataLoader's defaults

COLUMNS = ["sweep", "group", "dataset", "hardware", "cpus", "samples_per_epoch", "batch_size", *SETTING, "runs", "n",
           "epoch_time_mean_s", "epoch_time_std_s", "samples_per_s_mean", "samples_per_s_std", "speedup_vs_default",
           "first_batch_mean_s", "setup_mean_s", "default", "fastest"]


def setting_of(record: Dict[str, Any]) -> tuple:
    return tuple(record[key] for key in SETTING)


def setting_row(members: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The pooled numbers of one setting's runs."""
    first = members[0]
    times = pooled(r["epoch_s"] for r in members)
    rates = [first["samples_per_epoch"] / t for t in times]
    first_batches = [t for t in pooled(r["first_batch_s"] for r in members) if t is not None]
    return {
        **{key: first[key] for key in ("sweep", "group", "dataset", "hardware", "cpus", "samples_per_epoch",
                                       "batch_size", *SETTING)},
        "runs": len(members), "n": len(times),
        "epoch_time_mean_s": statistics.fmean(times), "epoch_time_std_s": sample_std(times),
        "samples_per_s_mean": statistics.fmean(rates), "samples_per_s_std": sample_std(rates),
        "first_batch_mean_s": statistics.fmean(first_batches) if first_batches else float("nan"),
        "setup_mean_s": statistics.fmean(r["setup_s"] for r in members),
        "default": setting_of(first) == DEFAULT_SETTING,
    }


def sort_key(row: Dict[str, Any]) -> tuple:
    """Host settings by workers, then pin_memory, persistence, prefetch; the device path last."""
    return (row["placement"] == DEVICE, row["workers"] or 0, bool(row["pin_memory"]), bool(row["persistent_workers"]),
            row["prefetch_factor"] or 0)


def group_table(records: List[Dict[str, Any]]) -> pd.DataFrame:
    """The table of one group's records: a row per setting, the speedup against the default, the fastest marked."""
    by_setting: Dict[tuple, List[Dict[str, Any]]] = {}
    for record in records:
        by_setting.setdefault(setting_of(record), []).append(record)
    rows = sorted((setting_row(members) for members in by_setting.values()), key=sort_key)
    default = next((row for row in rows if row["default"]), None)
    fastest = min(rows, key=lambda row: row["epoch_time_mean_s"])
    for row in rows:
        row["speedup_vs_default"] = (speedup(default["epoch_time_mean_s"], row["epoch_time_mean_s"])
                                     if default else float("nan"))
        row["fastest"] = row is fastest
    # integers with the device path's gaps (not floats: the CSV says 4, not 4.0)
    return pd.DataFrame(rows, columns=COLUMNS).astype({"workers": "Int64", "prefetch_factor": "Int64"})


def dataloader_tables(records: List[Dict[str, Any]]) -> List[pd.DataFrame]:
    """One table per group, in the order of (sweep, data set, machine, the rest of the group)."""
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for record in records:
        key = (record["sweep"], record["dataset"], record["hardware"], record["cpus"], record["group"])
        groups.setdefault(key, []).append(record)
    return [group_table(groups[key]) for key in sorted(groups)]


def _summary(row: pd.Series) -> str:
    return f"{row['epoch_time_mean_s']:.3f} ± {row['epoch_time_std_s']:.3f} s (n={row['n']})"


def verdict(table: pd.DataFrame, label) -> str:
    """The answer to "is the default optimal?" for one group's table; label(row) names a setting."""
    host = table[table["placement"] == HOST]
    defaults = table[table["default"]]
    if defaults.empty:
        return ("Is the default optimal? Not measured: the default setting (num_workers=0, pin_memory=False, "
                "persistent_workers=False, no prefetch) is not in this sweep, so no speedup is shown.")
    default = defaults.iloc[0]
    best = host.loc[host["epoch_time_mean_s"].idxmin()]
    text = f"Default ({label(default)}): {_summary(default)}. "
    if bool(best["default"]):
        text += "Is the default optimal? Yes: no other DataLoader setting measured was faster."
    else:
        text += (f"Fastest DataLoader setting: {label(best)}, {_summary(best)}, {best['speedup_vs_default']:.2f}x the "
                 "default's speed. Is the default optimal? ")
        if default["n"] >= 2 and best["n"] >= 2:
            differs = exceeds_spread(default["epoch_time_mean_s"], default["epoch_time_std_s"], default["n"],
                                     best["epoch_time_mean_s"], best["epoch_time_std_s"], best["n"])
            text += ("No: the difference exceeds the spread (|Δ| > 2·sqrt(s²/n + s²/n))." if differs else
                     "Not distinguishable: the difference is within the spread (|Δ| ≤ 2·sqrt(s²/n + s²/n)).")
        else:
            text += "No, by the means; the spread is unknown (a single timed epoch)."
    device = table[table["placement"] == DEVICE]
    if not device.empty:
        row = device.iloc[0]
        text += (f" The device path (no DataLoader: the split decoded once onto the device): {_summary(row)}, "
                 f"{row['speedup_vs_default']:.2f}x the default's speed"
                 + ("; the fastest of all." if bool(row["fastest"]) else "."))
    return text
