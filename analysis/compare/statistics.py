"""The statistics of a comparison of two sides' repeats (docs/decisions.md says why these):

- A ratio candidate / baseline of the geometric means, with a 95 % confidence interval from Welch's t on the
  logarithms (scipy.stats.ttest_ind(equal_var=False)): times and rates are compared on the log scale, where a ratio
  is a difference, and Welch's interval holds with 2 or more repeats a side and unequal spreads. With one repeat on
  a side there is no interval, and none is shown.
- A verdict from the interval and the metric's direction: better (faster) when the whole interval lies on the good
  side of 1, worse (slower) when it lies on the bad side, otherwise "no difference resolved" (which is not
  "equal": that would need an equivalence test).
- Repeats a side to resolve a +-d relative difference at 95 % confidence and 80 % power, from the measured spread:
  n = 2 (1.96 + 0.84)^2 c^2 / d^2, c the pooled standard deviation of the logs (about the CoV).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

Z_95, Z_POWER_80 = 1.959964, 0.841621
CONFIDENCE = 0.95


@dataclass
class Ratio:
    ratio: Optional[float]        # candidate / baseline (geometric means); None when a side has no value
    low: Optional[float]          # the 95 % interval; None when it cannot be computed (a side of n = 1)
    high: Optional[float]
    verdict: str                  # better | worse | no difference resolved | no interval (n = 1) | no values
    repeats_needed: Optional[int]  # a side, to resolve the chosen +-d; None without a spread


def _logs(values: Sequence[float]) -> list:
    return [math.log(v) for v in values]


def pooled_log_sd(base: Sequence[float], cand: Sequence[float]) -> Optional[float]:
    """The pooled sample standard deviation of the two sides' logarithms (ddof 1 each), None without 2 a side."""
    if len(base) < 2 or len(cand) < 2:
        return None
    a, b = _logs(base), _logs(cand)
    ss = sum((x - statistics.fmean(a)) ** 2 for x in a) + sum((x - statistics.fmean(b)) ** 2 for x in b)
    return math.sqrt(ss / (len(a) + len(b) - 2))


def repeats_needed(log_sd: float, difference: float) -> int:
    """Repeats a side for a two-sided test at 95 % to find a relative difference `difference` (0.02 = 2 %) with
    80 % power, from the spread of the logs: 2 (z_0.975 + z_0.8)^2 sd^2 / d^2 (d small: a relative difference is
    about the difference of the logs)."""
    return max(2, math.ceil(2 * (Z_95 + Z_POWER_80) ** 2 * log_sd ** 2 / difference ** 2))


def compare_values(base: Sequence[float], cand: Sequence[float], better: str, difference: float = 0.02) -> Ratio:
    """The ratio of `cand` to `base` (positive values), its interval and verdict; better: "lower" or "higher"."""
    if not base or not cand:
        return Ratio(None, None, None, "no values", None)
    a, b = _logs(base), _logs(cand)
    ratio = math.exp(statistics.fmean(b) - statistics.fmean(a))
    if len(a) < 2 or len(b) < 2:
        return Ratio(ratio, None, None, "no interval (n = 1)", None)
    sd = pooled_log_sd(base, cand)
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:  # no spread at all: the ratio is exact
        low = high = ratio
    else:
        half = welch_half_width(a, b)
        low, high = ratio * math.exp(-half), ratio * math.exp(half)
    return Ratio(ratio, low, high, verdict(low, high, better), repeats_needed(sd, difference) if sd else None)


def welch_half_width(a: Sequence[float], b: Sequence[float]) -> float:
    """Half the 95 % interval of mean(b) - mean(a) by Welch's t: t(0.975, df) x se, se^2 = s_a^2/n_a + s_b^2/n_b,
    df by Welch-Satterthwaite. What scipy.stats.ttest_ind(b, a, equal_var=False).confidence_interval() computes
    (a test checks that they agree), without its per-call overhead: a comparison of 10,000 results makes
    thousands of intervals."""
    from scipy.special import stdtrit

    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se2 = va + vb
    df = se2 ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return float(stdtrit(df, 0.5 + CONFIDENCE / 2)) * math.sqrt(se2)


def verdict(low: float, high: float, better: str) -> str:
    if high < 1:
        return "better" if better == "lower" else "worse"
    if low > 1:
        return "worse" if better == "lower" else "better"
    return "no difference resolved"


def regressed(result: Ratio, better: str, percent: float) -> bool:
    """Whether the candidate is worse by more than `percent` with confidence: the whole interval beyond it."""
    if result.low is None or result.high is None:
        return False
    if better == "lower":
        return result.low > 1 + percent / 100
    return result.high < 1 - percent / 100
