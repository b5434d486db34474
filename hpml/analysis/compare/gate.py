"""`hpml compare --fail-on-regression PCT`: the exit status from the comparisons, and the one line that says which
headline numbers it could not decide and why (--undecided fail|pass says what it does then)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Sequence

from hpml.analysis.compare.comparisons import Row
from hpml.analysis.compare.outputs import ratio_text
from hpml.analysis.stats import regressed

UNDECIDED = ("fail", "pass")  # the first is the default (docs/decisions.md: a gate that cannot decide fails)


def gate(rows: Sequence[Row], percent: float, undecided: str) -> int:
    """--fail-on-regression's exit status: 1 when a headline number is worse by more than `percent` with 95 %
    confidence; else, where some number has no interval to decide by, one stderr line that says so and why, and
    1 or 0 as --undecided says; 0 when every number was decided and none regressed."""
    worse = [row for row in rows if regressed(row.result, row.metric.better, percent)]
    if worse:
        print(f"hpml: {len(worse)} headline number(s) worse by more than {percent:g} % with "
              f"95 % confidence: " + "; ".join(f"{r.configuration} {r.metric.name} {ratio_text(r.result)}"
                                               for r in worse), file=sys.stderr)
    open_rows = [row for row in rows if row.result.low is None or row.result.high is None]
    if open_rows or not rows:
        print(f"hpml: the gate could not decide {undecided_text(open_rows, len(rows))}; --undecided {undecided}: "
              + ("exit 1" if undecided == "fail" else "passed anyway"), file=sys.stderr)
    if worse or ((open_rows or not rows) and undecided == "fail"):
        return 1
    return 0


def undecided_text(open_rows: Sequence[Row], total: int) -> str:
    """Which headline numbers the gate could not decide and why, in a few words."""
    if not total:
        return "any headline number: none was compared (see Not compared)"
    why = Counter(row.result.verdict for row in open_rows)
    reasons = "; ".join(f"{count} {UNDECIDED_WHY.get(verdict, verdict)}" for verdict, count in why.items())
    first = open_rows[0]
    return (f"{len(open_rows)} of {total} headline number(s): {reasons} (first: {first.configuration}, "
            f"{first.metric.name})")


UNDECIDED_WHY = {
    "no interval (n = 1)": "with one usable result on a side: no interval (n = 1; more repeats, sweep.repeat, give one)",
    "no values": "with no usable result on a side (see Not compared)",
    "no interval (a run did not converge)": "where a run did not converge: no interval (the olympic means only)",
}
