"""The one home of the report's statistics and of the words that describe them.

Every table of every workload takes its spread, speedup and efficiency from here, so one rule is written
once and tested once (tests/test_stats.py, against hand-computed values):

- pooled(lists): the samples of several runs (repeats) as one sample.
- sample_std: the sample standard deviation, ddof=1 (Bessel), 0.0 for one value (no spread to estimate);
  population_std: ddof=0 (what numpy's std and Horovod's and nccl-tests' printouts use).
- coefficient_of_variation: std / mean with the std of the given ddof, never rounded.
- speedup = t_base / t_N (times), or rate_N / rate_base (rates).
- efficiency: weak scaling (per-worker batch fixed: each worker does the same work per step, so ideal
  scaling keeps the step time) = step_base / step_N; strong scaling (global batch fixed) =
  speedup / (N / N_base).
- olympic_mean: MLPerf's benchmark result of N timed runs: the fastest and the slowest dropped, the mean of
  the rest; one run that did not converge counts as the slowest (dropped); more than one makes it invalid.
- difference_threshold / exceeds_spread: whether two means (e.g. the TTA of two hardware types) differ by more
  than their runs' spread: |mean_a - mean_b| > 2 * sqrt(s_a^2/n_a + s_b^2/n_b) (Welch-style, approximate 95 %).
- differing_labels: for configurations given as {dotted key: value}, the items in which each differs from
  the others, so a heading says "batch_size=64" rather than the whole config.
- natural_key: sorts text with numbers by their value ("batch_size=8" before "batch_size=32").
- compare_values / verdict / regressed / repeats_needed: `hpml compare`'s ratio of two sides' repeats, with its
  95 % interval from Welch's t on the logarithms, the verdict it supports, and the repeats a side that would
  resolve a given relative difference (the section "Comparing two sides" below says more).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

SAMPLE_DDOF = 1  # the reports' epoch-time std and CV: the sample std

SCALING_MODES_TEXT = {
    "weak": "weak scaling (per-worker batch fixed)",
    "strong": "strong scaling (global batch fixed)",
}
EFFICIENCY_RULES = {"weak": "t_base / t_N", "strong": "speedup / (N / N_base)"}


def efficiency_header(scaling: str, weak_time: str = "") -> str:
    """The efficiency column's header, naming its rule; weak_time says which time t is ("step time")."""
    rule = EFFICIENCY_RULES[scaling]
    return f"efficiency ({weak_time + ' ' if weak_time and scaling == 'weak' else ''}{rule})"


def pooled(samples: Iterable[Iterable[float]]) -> List[float]:
    """The samples of several runs as one list, in order."""
    return [value for values in samples for value in values]


def pool(runs: Iterable[Mapping[str, Any]], key: str) -> List[float]:
    """The samples each run keeps under `key` (a list per run), as one list in order: pooled, by key."""
    return pooled(run[key] for run in runs)


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean (statistics.fmean: math.fsum of the values over their count)."""
    return statistics.fmean(values)


def _sum_of_squares(values: Sequence[float]) -> float:
    """sum((x - mean)^2), both sums with math.fsum (exactly rounded): as accurate as statistics' exact
    fractions to the last printed digit, and 20 times faster over 10,000 results."""
    mean = math.fsum(values) / len(values)
    return math.fsum((x - mean) ** 2 for x in values)


def median_spread(values: Sequence[float]) -> Dict[str, Any]:
    """The reports' summary of repeated measurements: {"median", "min", "max", "n"} (median [min, max], n)."""
    if not values:
        raise ValueError("median_spread of no values")
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def sample_std(values: Sequence[float]) -> float:
    """Standard deviation with ddof=1; 0.0 for a single value."""
    return math.sqrt(_sum_of_squares(values) / (len(values) - 1)) if len(values) > 1 else 0.0


def population_std(values: Sequence[float]) -> float:
    """Standard deviation with ddof=0."""
    if not values:
        raise ValueError("population_std of no values")
    return math.sqrt(_sum_of_squares(values) / len(values))


def coefficient_of_variation(values: Sequence[float], ddof: int = SAMPLE_DDOF) -> float:
    """std / mean with the std of the given ddof (0 or 1); 0.0 when there are no more values than ddof."""
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    if len(values) <= ddof:
        return 0.0
    std = sample_std(values) if ddof == 1 else population_std(values)
    return std / statistics.fmean(values)


OLYMPIC_MIN_RUNS = 3  # the fastest and the slowest are dropped: at least one run must remain


def olympic_mean(converged: Sequence[float], not_converged: int = 0) -> Optional[float]:
    """The MLPerf training rules' benchmark result (mlcommons/training_policies, training_rules.adoc, section
    "Benchmark Results"): the mean of the run times left after the fastest and the slowest are dropped; one
    run that did not converge may stand as the slowest and be dropped; with two or more such runs the result
    is invalid. (A non-converged run counts as an infinite time.)

    converged: the times of the runs that reached the target; not_converged: how many did not. Returns the
    mean of the converged times without the fastest and without the slowest (the slowest being the
    non-converged run when there is one); None when it is undefined: more than one run not converged
    (invalid) or fewer than OLYMPIC_MIN_RUNS runs in all."""
    kept = olympic_kept(converged, not_converged)
    return None if kept is None else math.fsum(converged[i] for i in kept) / len(kept)


def olympic_kept(times: Sequence[float], not_converged: int = 0) -> Optional[List[int]]:
    """The indices of the converged runs the olympic mean keeps: all but the fastest and the slowest by time (the
    slowest being the non-converged run when there is one); None where the olympic mean is undefined (see
    olympic_mean). Ties keep the earlier run."""
    if not_converged < 0:
        raise ValueError(f"not_converged must be >= 0, got {not_converged}")
    if not_converged > 1 or len(times) + not_converged < OLYMPIC_MIN_RUNS:
        return None
    order = sorted(range(len(times)), key=lambda i: times[i])
    return order[1:] if not_converged else order[1:-1]


def olympic_mean_by_time(values: Sequence[float], times: Sequence[float], not_converged: int = 0) -> Optional[float]:
    """MLPerf's energy score: a per-run number (energy, GPU-hours, cost) averaged over the runs the time score
    keeps (olympic_kept of the runs' times), not over its own fastest and slowest: the energy result is "olympic
    over the same runs as the time score". values[i] and times[i] are one converged run's; None where undefined."""
    if len(values) != len(times):
        raise ValueError(f"{len(values)} values for {len(times)} times")
    kept = olympic_kept(times, not_converged)
    return None if kept is None else math.fsum(values[i] for i in kept) / len(kept)


def speedup(t_base: float, t_n: float) -> float:
    """How many times faster N workers are than the baseline, from times: t_base / t_N."""
    return t_base / t_n


def rate_speedup(rate_base: float, rate_n: float) -> float:
    """The same from rates (images/s): rate_N / rate_base."""
    return rate_n / rate_base


def efficiency(scaling: str, *, speedup_n: float, n_base: int, n: int, step_base: float, step_n: float) -> float:
    """weak: step_base / step_N; strong: speedup / (N / N_base)."""
    if scaling == "weak":
        return step_base / step_n
    if scaling == "strong":
        return speedup_n / (n / n_base)
    raise ValueError(f"scaling must be weak or strong, got {scaling!r}")


SPREAD_Z = 2.0  # the normal 97.5 % quantile (1.96) rounded: +-2 standard errors is an approximate 95 % interval


def difference_threshold(std_a: float, n_a: int, std_b: float, n_b: int) -> float:
    """The half-width of an approximate 95 % interval of the difference of two means: 2 * sqrt(s_a^2/n_a +
    s_b^2/n_b), Welch-style (each sample its own variance), with s the sample std (ddof=1) and n the sample size.

    It uses the normal quantile rounded to 2, not Student's t of Welch-Satterthwaite's degrees of freedom (about
    2.3 at 8 degrees of freedom): with a few runs per side the interval is a little narrow, so a difference just
    above the threshold is borderline. Needs n >= 2 on each side (one value has no sample std)."""
    if n_a < 2 or n_b < 2:
        raise ValueError(f"difference_threshold needs n >= 2 on each side, got n_a={n_a}, n_b={n_b}")
    return SPREAD_Z * math.sqrt(std_a ** 2 / n_a + std_b ** 2 / n_b)


def exceeds_spread(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int) -> bool:
    """The rule the reports state: the difference of two means exceeds the spread when
    |mean_a - mean_b| > 2 * sqrt(s_a^2/n_a + s_b^2/n_b) (difference_threshold), i.e. when an approximate 95 %
    interval of the difference excludes 0. Equal to the threshold does not exceed it."""
    return abs(mean_a - mean_b) > difference_threshold(std_a, n_a, std_b, n_b)


def _signature(value: Any) -> Tuple[type, Any]:
    """What tells two config values apart, as their canonical JSON would (1, 1.0 and true differ; NaN equals
    NaN; -0.0 is not 0.0), without writing JSON for the plain values: 5,000 configurations cost 1.2 s of it."""
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return kind, value
    if kind is float:
        return kind, repr(value)
    return kind, json.dumps(value, sort_keys=True, default=str)


def differing_labels(configurations: Mapping[str, Mapping[str, Any]], strip: str = "workload.") -> Dict[str, str]:
    """{configuration id: its items (dotted key -> value)} -> {id: "key=value ..." of the keys whose values
    differ between the configurations, `strip` removed from the key}; "" for each when there is only one."""
    if len(configurations) < 2:  # nothing can differ (and 5,000 one-configuration sweeps cost no json.dumps)
        return {key: "" for key in configurations}
    names = sorted({name for items in configurations.values() for name in items})
    varying = [name for name in names if len({_signature(items.get(name)) for items in configurations.values()}) > 1]
    return {key: " ".join(f"{name.removeprefix(strip)}={items.get(name)}" for name in varying)
            for key, items in configurations.items()}


COMMON_VALUES = "(the common values)"


def labels_against_the_common(configurations: Mapping[str, Mapping[str, Any]],
                              strip: str = "workload.") -> Dict[str, str]:
    """Like differing_labels, but a configuration names only where it departs from the value most configurations
    share (a sweep of settings around one baseline: each setting reads as its changes, the baseline as
    COMMON_VALUES). A key whose most frequent value is tied with another has no common value: every configuration
    names its own value of it."""
    if len(configurations) < 2:
        return {key: "" for key in configurations}
    names = sorted({name for items in configurations.values() for name in items})
    common: Dict[str, Any] = {}  # name -> the signature most configurations share; absent: tied
    varying = []
    for name in names:
        counts: Dict[Tuple[type, Any], int] = {}
        for items in configurations.values():
            signature = _signature(items.get(name))
            counts[signature] = counts.get(signature, 0) + 1
        if len(counts) < 2:
            continue
        varying.append(name)
        ranked = sorted(counts.values(), reverse=True)
        if ranked[0] > ranked[1]:
            common[name] = max(counts, key=counts.get)
    labels = {}
    for key, items in configurations.items():
        departs = [name for name in varying if common.get(name) != _signature(items.get(name))]
        labels[key] = " ".join(f"{name.removeprefix(strip)}={items.get(name)}" for name in departs) or COMMON_VALUES
    return labels


def natural_key(text: Any) -> Tuple[Any, ...]:
    """A sort key that orders the numbers inside text by value: "b=8" < "b=32" < "c=1"."""
    parts = re.split(r"(\d+(?:\.\d+)?)", str(text))
    return tuple((0, float(part), "") if i % 2 else (1, 0.0, part) for i, part in enumerate(parts))


# --- Comparing two sides (hpml compare) ----------------------------------------------------------------------
#
# The statistics of a comparison of two sides' repeats (docs/decisions.md says why these):
#
# - A ratio candidate / baseline of the geometric means, with a 95 % confidence interval from Welch's t on the
#   logarithms (scipy.stats.ttest_ind(equal_var=False)): times and rates are compared on the log scale, where a ratio
#   is a difference, and Welch's interval holds with 2 or more repeats a side and unequal spreads. With one repeat on
#   a side there is no interval, and none is shown.
# - A verdict from the interval and the metric's direction: better (faster) when the whole interval lies on the good
#   side of 1, worse (slower) when it lies on the bad side, otherwise "no difference resolved" (which is not
#   "equal": that would need an equivalence test).
# - Repeats a side to resolve a +-d relative difference at 95 % confidence and 80 % power, from the measured spread:
#   n = 2 (1.96 + 0.84)^2 c^2 / d^2, c the pooled standard deviation of the logs (about the CoV).
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


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(_logs(values)))


def compare_values(base: Sequence[float], cand: Sequence[float], better: str, difference: float = 0.02,
                   launch_sd: float = 0.0) -> Ratio:
    """The ratio of `cand` to `base` (positive values), its interval and verdict; better: "lower" or "higher".
    launch_sd: where each side's values are the repeats of one launch, the spread of a launch's mean around the
    configuration's (relative, i.e. on the logarithms), which no repeat samples: each side's launch adds its
    variance to the difference's, as a known component (it adds no degrees of freedom)."""
    if not base or not cand:
        return Ratio(None, None, None, "no values", None)
    a, b = _logs(base), _logs(cand)
    ratio = math.exp(statistics.fmean(b) - statistics.fmean(a))
    if len(a) < 2 or len(b) < 2:
        return Ratio(ratio, None, None, "no interval (n = 1)", None)
    sd = pooled_log_sd(base, cand)
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0 and not launch_sd:  # no spread: exact
        low = high = ratio
    else:
        half = welch_half_width(a, b, 2 * launch_sd ** 2)
        low, high = ratio * math.exp(-half), ratio * math.exp(half)
    return Ratio(ratio, low, high, verdict(low, high, better), repeats_needed(sd, difference) if sd else None)


def welch_half_width(a: Sequence[float], b: Sequence[float], known_variance: float = 0.0) -> float:
    """Half the 95 % interval of mean(b) - mean(a) by Welch's t: t(0.975, df) x se, se^2 = s_a^2/n_a + s_b^2/n_b,
    df by Welch-Satterthwaite. What scipy.stats.ttest_ind(b, a, equal_var=False).confidence_interval() computes
    (a test checks that they agree), without its per-call overhead: a comparison of 10,000 results makes
    thousands of intervals. known_variance: a further variance of the difference, known rather than estimated
    (compare_values' launch component): added to se^2, while the degrees of freedom stay those of the estimated
    part (Satterthwaite's would grow with it and could narrow the interval, which adding a variance must not)."""
    from scipy.special import stdtrit

    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    estimated = va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)
    df = (va + vb) ** 2 / estimated if estimated > 0 else math.inf
    return float(stdtrit(df, 0.5 + CONFIDENCE / 2)) * math.sqrt(va + vb + known_variance)


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
