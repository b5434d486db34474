"""The time-to-accuracy table's rows -> whether the hardware difference exceeds the spread. Pure.

For each (configuration, target, data path), the hardware rows with at least MIN_CONVERGED converged runs are
compared pair by pair (in the table's hardware order), for each measure: TTA with evaluation time (tta_s) and
epochs to target (epochs). Per pair: both means (over converged runs), a - b, |a - b| as a share of the slower
(larger) mean, the threshold 2 * sqrt(s_a^2/n_a + s_b^2/n_b) and the verdict (analysis.stats.exceeds_spread:
an approximate 95 % interval of the difference of means, Welch-style; s: sample std, ddof = 1; n: converged runs).
A configuration with fewer than two such hardware rows gets no comparison (an empty frame).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.stats import difference_threshold, exceeds_spread

MIN_CONVERGED = 2  # a sample std (ddof = 1) needs two values
MEASURES = ("tta_s", "epochs")  # prefixes of the TTA table's columns: TTA (evaluation included), epochs to target
GROUP = ["config_key", "target", "data_placement"]  # what a comparison holds fixed; the hardware varies
IDENTITY = ["config_key", "model", "target", "data_placement"]
COLUMNS = IDENTITY + [
    "measure", "hardware_a", "n_a", "mean_a", "std_a", "hardware_b", "n_b", "mean_b", "std_b",
    "difference", "difference_share_of_slower", "threshold", "exceeds_spread"]


def pair_row(a: Dict[str, Any], b: Dict[str, Any], measure: str) -> Dict[str, Any]:
    """One measure of two TTA-table rows of one (configuration, target, data path)."""
    mean_a, std_a, n_a = a[f"{measure}_mean"], a[f"{measure}_std"], a["converged"]
    mean_b, std_b, n_b = b[f"{measure}_mean"], b[f"{measure}_std"], b["converged"]
    difference = mean_a - mean_b
    return {**{key: a[key] for key in IDENTITY}, "measure": measure,
            "hardware_a": a["hardware"], "n_a": n_a, "mean_a": mean_a, "std_a": std_a,
            "hardware_b": b["hardware"], "n_b": n_b, "mean_b": mean_b, "std_b": std_b,
            "difference": difference, "difference_share_of_slower": abs(difference) / max(mean_a, mean_b),
            "threshold": difference_threshold(std_a, n_a, std_b, n_b),
            "exceeds_spread": exceeds_spread(mean_a, std_a, n_a, mean_b, std_b, n_b)}


def hardware_comparison(table: pd.DataFrame) -> pd.DataFrame:
    """Every pair of hardware rows (each with >= MIN_CONVERGED converged runs) of each (configuration, target,
    data path), both measures; empty when no group has two such rows."""
    rows: List[Dict[str, Any]] = []
    if not table.empty:
        comparable = table[table["converged"] >= MIN_CONVERGED]
        for _, group in comparable.groupby(GROUP, sort=False):
            for a, b in combinations(group.to_dict("records"), 2):
                rows += [pair_row(a, b, measure) for measure in MEASURES]
    return pd.DataFrame(rows, columns=COLUMNS)
