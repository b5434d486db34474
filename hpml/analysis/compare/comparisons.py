"""The comparisons of `hpml compare`: each side's results read and grouped by configuration, then one Row per
configuration and headline metric with its ratio and 95 % interval. The unit is the launch where both sides hold
two or more launches of the configuration, else the repeat (with the spread of launches added); time to accuracy
is compared as MLPerf scores it (olympic means, a run that did not converge the slowest)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hpml.analysis.compare.match import match_items, match_key
from hpml.analysis.compare.metrics import HEADLINES, Metric, applies
from hpml.analysis.compare.usable import SideValues, side_values
from hpml.analysis.registry import RESULT_CHECKS
from hpml.analysis.results import MALFORMED, load_results
from hpml.analysis.stats import Ratio, compare_values, differing_labels, geometric_mean, olympic_mean


class CompareError(Exception):
    """Bad input: one line."""


@dataclass
class Row:
    candidate: str
    configuration: str
    workload: str
    metric: Metric
    base: List[Optional[float]]
    cand: List[Optional[float]]
    result: Ratio
    note: str = ""
    # time to accuracy with a run that did not converge: the olympic means (baseline, candidate) its ratio is of,
    # shown in the cells and the CSV in place of the converged runs' means
    olympic: Optional[Tuple[float, float]] = None


def load_side(path: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """(the side's ok results, a line for each kind of result left out: unreadable or damaged ones, and those that
    did not end ok), so that nothing a side holds is dropped without a line."""
    if not Path(path).exists():
        raise CompareError(f"{path}: no such folder")
    loaded = load_results(path, RESULT_CHECKS)
    if loaded.files_found == 0:
        raise CompareError(f"{path}: no result.json under it: not a sweep or a folder of sweeps")
    docs = [doc for doc in loaded.rows if doc["status"] == "ok"]
    if not docs:
        unread = f", {len(loaded.problems)} not read (first: {loaded.problems[0]})" if loaded.problems else ""
        raise CompareError(f"{path}: no ok result among its {loaded.files_found}{unread}; hpml status says why")
    left_out = []
    if loaded.problems:
        shown = "; ".join(str(problem) for problem in loaded.problems[:3])
        more = f"; and {len(loaded.problems) - 3} more" if len(loaded.problems) > 3 else ""
        left_out.append(f"{path}: {len(loaded.problems)} result(s) not read: {shown}{more}")
    ended = Counter(doc["status"] for doc in loaded.rows if doc["status"] != "ok")
    if ended:
        left_out.append(f"{path}: {sum(ended.values())} result(s) not ok (" +
                        ", ".join(f"{status} {n}" for status, n in sorted(ended.items())) + "): `hpml status` says why")
    return docs, left_out


def grouped(docs: Sequence[Mapping[str, Any]], ignore: Sequence[str], by: Sequence[str]) -> Dict[Tuple[str, str], dict]:
    groups: Dict[Tuple[str, str], dict] = {}
    for doc in docs:
        items = match_items(doc["config"], ignore, by)
        entry = groups.setdefault((doc["identity"]["workload"], match_key(items)), {"items": items, "docs": []})
        entry["docs"].append(doc)
    return groups


def positive_values(values: Sequence[Optional[float]]) -> List[float]:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def launch_of(doc: Mapping[str, Any]) -> str:
    """The launch a result belongs to: its sweep folder (<sweep>/points/<i>/result.json), or its sweep's name."""
    path = doc.get("path")
    return str(Path(path).parents[2]) if path else str(doc["identity"]["sweep"])


def launch_values(side: SideValues) -> List[float]:
    """One value per launch: the geometric mean of its results' values."""
    by_launch: Dict[str, List[float]] = {}
    for doc, value in zip(side.docs, side.values):
        by_launch.setdefault(launch_of(doc), []).append(value)
    return [geometric_mean(kept) for kept in by_launch.values()]


def compare_metric(metric: Metric, base_side: SideValues, cand_side: SideValues, difference: float,
                   launch_sd: float = 0.0) -> Tuple[Ratio, list, list, str, Optional[Tuple[float, float]]]:
    """(the comparison, the baseline's and candidate's values, a note, the olympic means where the ratio is theirs).
    launch_sd: compare_values' launch component, added where a side holds one launch."""
    base, cand = base_side.values, cand_side.values
    if not metric.time_to_accuracy:
        b_launches, c_launches = launch_values(base_side), launch_values(cand_side)
        if len(b_launches) >= 2 and len(c_launches) >= 2:
            result = compare_values(b_launches, c_launches, metric.better, difference)
            return result, base, cand, f"unit: launch ({len(b_launches)} vs {len(c_launches)} launches)", None
        result = compare_values(base, cand, metric.better, difference, launch_sd)
        return result, base, cand, f"unit: repeat, launch sd {launch_sd * 100:g} % added" if launch_sd else "", None
    # MLPerf: a run that did not converge counts as the slowest; olympic means; the converged fraction beside it
    b_conv, c_conv = positive_values(base), positive_values(cand)
    missed = (len(base) - len(b_conv), len(cand) - len(c_conv))
    note = f"converged {len(b_conv)}/{len(base)} vs {len(c_conv)}/{len(cand)}"
    if missed == (0, 0):
        result = compare_values(b_conv, c_conv, metric.better, difference, launch_sd)
    else:
        result = Ratio(None, None, None, "no interval (a run did not converge)", None)
    b_ol, c_ol = olympic_mean(b_conv, missed[0]), olympic_mean(c_conv, missed[1])
    olympic = None
    if b_ol and c_ol:  # MLPerf's score; the ratio column stays the geometric means' when it has an interval
        note += f"; olympic means {b_ol:.4g} {metric.unit} vs {c_ol:.4g} {metric.unit} (ratio {c_ol / b_ol:.4f})"
        if result.ratio is None:
            result.ratio, olympic = c_ol / b_ol, (b_ol, c_ol)
    fraction = converged_fraction_verdict(len(b_conv), len(base), len(c_conv), len(cand))
    return result, base, cand, note + (f"; {fraction}" if fraction else ""), olympic


def converged_fraction_verdict(b_ok: int, b_n: int, c_ok: int, c_n: int) -> str:
    """Fisher's exact test of the two converged fractions, said when it resolves a difference at 5 %."""
    if (b_ok, b_n) == (c_ok, c_n) or min(b_n, c_n) == 0:
        return ""
    from scipy.stats import fisher_exact

    p = fisher_exact([[c_ok, c_n - c_ok], [b_ok, b_n - b_ok]]).pvalue
    if p >= 0.05:
        return f"converged fractions differ, not resolved (Fisher p = {p:.2f})"
    return f"converged fraction {'better' if c_ok / c_n > b_ok / b_n else 'worse'} (Fisher p = {p:.3f})"


def build_rows(base_docs, candidates: Mapping[str, List[Mapping[str, Any]]], ignore, by,
               difference: float, launch_sd: float = 0.0) -> Tuple[List[Row], List[str]]:
    """(the comparisons, the lines for what matched nothing)."""
    base_groups = grouped(base_docs, ignore, by)
    rows: List[Row] = []
    unmatched: List[str] = []
    left_out: List[str] = []
    for name, docs in candidates.items():
        cand_groups = grouped(docs, ignore, by)
        common = sorted(set(base_groups) & set(cand_groups))
        if not common:
            raise CompareError(nothing_in_common(name, base_groups, cand_groups))
        labels = differing_labels({key: base_groups[key]["items"] for key in common}, strip="")
        for key in common:
            workload = key[0]
            metrics = HEADLINES.get(workload)
            if metrics is None:
                unmatched.append(f"{name}: workload {workload} has no headline numbers to compare "
                                 f"({len(base_groups[key]['docs'])} + {len(cand_groups[key]['docs'])} results)")
                continue
            b, c = base_groups[key]["docs"], cand_groups[key]["docs"]
            for metric in metrics:
                if not any(applies_or_unreadable(metric, doc) for doc in b + c):
                    continue
                base_side, cand_side = side_values(metric, measuring(metric, b)), side_values(metric, measuring(metric, c))
                configuration = labels[key] or workload
                left_out += [f"{side}: {where}: {metric.name} of {configuration} left out: {why}"
                             for side, values in (("baseline", base_side), (name, cand_side))
                             for where, why in values.left_out]
                result, base, cand, note, olympic = compare_metric(metric, base_side, cand_side, difference, launch_sd)
                rows.append(Row(name, configuration, workload, metric, base, cand, result, note, olympic))
        for key in sorted(set(base_groups) - set(cand_groups)):
            unmatched.append(f"only in the baseline: {len(base_groups[key]['docs'])} {key[0]} result(s) of {key[1]}")
        for key in sorted(set(cand_groups) - set(base_groups)):
            unmatched.append(f"only in {name}: {len(cand_groups[key]['docs'])} {key[0]} result(s) of {key[1]}")
    return rows, unmatched + left_out


def measuring(metric: Metric, docs: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """The results that can have the metric at all: one without NVML telemetry or a price has no energy or cost to
    target, which is no miss (a time-to-accuracy metric's `measured`)."""
    return [doc for doc in docs if metric.measured is None or metric.measured(doc)]


def applies_or_unreadable(metric: Metric, doc: Mapping[str, Any]) -> bool:
    """Whether a result measures this metric, or should and cannot be read (then it is named as left out)."""
    try:
        return applies(metric, doc)
    except MALFORMED:
        return True


def nothing_in_common(name: str, base_groups: Mapping, cand_groups: Mapping) -> str:
    base_items = next(iter(base_groups.values()))["items"]
    cand_items = next(iter(cand_groups.values()))["items"]
    differ = sorted(k for k in set(base_items) | set(cand_items) if base_items.get(k) != cand_items.get(k))
    shown = ", ".join(f"{k} ({base_items.get(k)} vs {cand_items.get(k)})" for k in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    return (f"the baseline and {name} have no configuration in common: they differ in {shown}{more}; "
            "--ignore KEY leaves a key out of the match")
