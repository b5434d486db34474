"""What a headline metric can use of each result, and why it leaves the others out (issue 45, item 2).

A ratio of geometric means needs finite values above 0. A result whose value is missing, unreadable, not measured
or not above 0 is left out of the metric everywhere alike (the table's cell, the ratio and its interval, compare.csv)
and named under "Not compared" with its reason, so the n and the mean shown beside a ratio are the ones it used.
Time to accuracy keeps a run that did not converge (None): MLPerf counts it as the slowest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from hpml.analysis.compare.metrics import Metric, NotMeasured
from hpml.analysis.results import MALFORMED


@dataclass
class SideValues:
    """A side's values of one metric: those the comparison uses (the cell, the ratio and the CSV alike) and each
    result it leaves out, with why (listed under "Not compared")."""
    values: List[Optional[float]]  # > 0 and finite; None only for time to accuracy: a run that did not converge
    docs: List[Mapping[str, Any]]  # the results of `values`, in order
    left_out: List[Tuple[str, str]]  # (result, why)


def side_values(metric: Metric, docs: Sequence[Mapping[str, Any]]) -> SideValues:
    """What `metric` can use of each result. A ratio of geometric means needs finite values above 0: a result whose
    value is missing, unreadable (a key missing, a wrong type: MALFORMED), not measured (NotMeasured) or not above
    0 is left out and named, never counted in one place and not in another."""
    kept = SideValues([], [], [])
    for doc in docs:
        where = str(doc.get("path") or doc["identity"].get("sweep"))
        try:
            value = metric.value(doc)
        except MALFORMED as error:
            kept.left_out.append((where, f"unreadable: {type(error).__name__}: {error}"))
            continue
        except NotMeasured as error:
            kept.left_out.append((where, str(error)))
            continue
        why = None if value is None and metric.time_to_accuracy else unusable(value, metric.unit)
        if why:
            kept.left_out.append((where, why))
            continue
        kept.values.append(value)
        kept.docs.append(doc)
    return kept


def unusable(value: Optional[float], unit: str) -> Optional[str]:
    """Why a ratio of geometric means cannot use `value`; None when it can."""
    if value is None:
        return "the result has no value for it"
    if not math.isfinite(value):
        return f"its value is {value}"
    if value == 0 and unit in TIME_UNITS:  # docs/decisions.md: a clock that ran reads more than 0
        return f"its value is 0 {unit}: a time of 0 was not measured"
    if value <= 0:
        return f"its value is {value:g} {unit}: a ratio of geometric means needs values above 0"
    return None


TIME_UNITS = ("s", "ms", "us")
