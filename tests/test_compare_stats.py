"""`hpml compare`'s statistics (issue 34, issue 45) against hand-computed and published values: the repeats a
difference needs, Welch's interval on the logs and its launch spread, the verdict and the gate's threshold, what the
match leaves out, which values a metric can use, MLPerf's olympic mean. No sweep is launched here; the verb on real
sweeps is tests/test_compare.py."""

from __future__ import annotations

import math

import pytest

from hpml.analysis.compare.match import match_items
from hpml.analysis.stats import compare_values, regressed, repeats_needed, verdict


def test_repeats_needed_is_the_published_formula():
    # n = 2 (1.96 + 0.84)^2 c^2 / d^2: c = 0.03, d = 0.02 -> 35.3 -> 36; c = 0.01 -> 3.9 -> 4 (DESIGN.md's values)
    assert repeats_needed(0.03, 0.02) == 36
    assert repeats_needed(0.01, 0.02) == 4


def test_welchs_interval_on_the_logs_against_a_hand_computation():
    # logs: base [0, 0.2], candidate [0.1, 0.3]: difference 0.1; each sample variance 0.02, se = sqrt(0.02) = 0.141421;
    # Welch's df = 0.02^2 / (0.01^2 + 0.01^2) = 2; t(0.975, 2) = 4.302653 -> 0.1 +- 0.608497 -> exp: [0.60138, 2.03098]
    result = compare_values([1.0, math.exp(0.2)], [math.exp(0.1), math.exp(0.3)], "lower")
    assert result.ratio == pytest.approx(math.exp(0.1))
    assert result.low == pytest.approx(math.exp(0.1 - 4.302653 * math.sqrt(0.02)), rel=1e-5)
    assert result.high == pytest.approx(math.exp(0.1 + 4.302653 * math.sqrt(0.02)), rel=1e-5)
    assert result.verdict == "no difference resolved"


def test_one_repeat_a_side_gives_no_interval_and_never_an_invented_one():
    result = compare_values([2.0], [3.0, 3.1], "lower")
    assert result.ratio == pytest.approx(math.sqrt(3.0 * 3.1) / 2.0)
    assert (result.low, result.high, result.verdict) == (None, None, "no interval (n = 1)")
    assert not regressed(result, "lower", 0)


def test_the_launch_spread_is_a_known_variance_component_of_the_difference():
    # logs as above, launch sd 0.05: se^2 = 0.02 + 2 x 0.05^2 = 0.025; the degrees of freedom stay the estimated
    # part's (2), so the interval only widens: half width = t(0.975, 2) x sqrt(0.025) = 4.302653 x 0.158114
    result = compare_values([1.0, math.exp(0.2)], [math.exp(0.1), math.exp(0.3)], "lower", launch_sd=0.05)
    half = 4.302653 * math.sqrt(0.025)
    assert result.low == pytest.approx(math.exp(0.1 - half)) and result.high == pytest.approx(math.exp(0.1 + half))
    # no spread within the launches: the launches' own spread is all the interval has (normal: nothing estimated)
    flat = compare_values([2.0, 2.0], [2.0, 2.0], "lower", launch_sd=0.05)
    assert flat.ratio == 1.0 and flat.high == pytest.approx(math.exp(1.959964 * math.sqrt(2) * 0.05), rel=1e-6)
    assert compare_values([2.0, 2.0], [2.0, 2.0], "lower").high == 1.0  # without it: exact


@pytest.mark.parametrize("low, high, better, expected", [
    (0.8, 0.9, "lower", "better"), (1.1, 1.2, "lower", "worse"), (0.9, 1.1, "lower", "no difference resolved"),
    (1.1, 1.2, "higher", "better"), (0.8, 0.9, "higher", "worse"),
])
def test_the_verdict_follows_the_whole_interval_and_the_direction(low, high, better, expected):
    assert verdict(low, high, better) == expected


def test_a_regression_needs_the_whole_interval_beyond_the_threshold():
    slower = compare_values([1.0, 1.01, 0.99], [1.2, 1.21, 1.19], "lower")
    assert slower.verdict == "worse" and regressed(slower, "lower", 10) and not regressed(slower, "lower", 25)
    lower_rate = compare_values([100.0, 101.0, 99.0], [80.0, 81.0, 79.0], "higher")
    assert regressed(lower_rate, "higher", 10) and not regressed(lower_rate, "higher", 25)


def test_the_match_leaves_out_where_and_how_often_a_point_ran():
    config = {"sweep": {"name": "a", "seed": 3, "repeat": 1}, "cluster": {"kind": "slurm"},
              "resources": {"gpus_per_node": 1}, "workload": {"name": "train", "data_root": "/scratch/x", "lr": 0.1}}
    assert match_items(config) == {"resources.gpus_per_node": 1, "workload.lr": 0.1}
    assert match_items(config, ignore=["workload.lr"]) == {"resources.gpus_per_node": 1}
    assert match_items(config, by=["sweep.seed"])["sweep.seed"] == 3


def test_the_price_is_no_part_of_the_work():
    """An H100 sweep priced at $3/h and an H200 sweep at $4/h (or one from before the pricing group, whose config
    has no price at all) measure the same work: comparing their cost to target is the question."""
    priced = {"resources": {"gpus_per_node": 1}, "workload": {"lr": 0.1, "price_name": "h200_cloud",
                                                              "gpu_hour_usd": 4.0}}
    older = {"resources": {"gpus_per_node": 1}, "workload": {"lr": 0.1}}
    assert match_items(priced) == match_items(older) == {"resources.gpus_per_node": 1, "workload.lr": 0.1}


def test_what_a_metric_cannot_use_is_left_out_with_why():
    """side_values (issue 45, item 2): only finite values above 0 enter a ratio of geometric means; each result left
    out is named with its reason; time to accuracy keeps a run that did not converge (None) as the slowest."""
    from hpml.analysis.compare.metrics import Metric, NotMeasured
    from hpml.analysis.compare.usable import side_values

    def value(doc):
        if doc["measurements"].get("zero_steps"):
            raise NotMeasured("its 4 timed step times are all 0 s: not measured")
        return doc["measurements"]["x"] / 2

    docs = [{"measurements": m, "path": f"/{i}"} for i, m in enumerate([
        {"x": 3.0}, {}, {"x": "many"}, {"x": 0.0}, {"x": -2.0}, {"x": float("nan")}, {"zero_steps": True}, {"x": 5.0}])]
    side = side_values(Metric("x", "s", "lower", value), docs)
    assert side.values == [1.5, 2.5] and [d["path"] for d in side.docs] == ["/0", "/7"]
    assert side.left_out == [
        ("/1", "unreadable: KeyError: 'x'"),
        ("/2", "unreadable: TypeError: unsupported operand type(s) for /: 'str' and 'int'"),
        ("/3", "its value is 0 s: a time of 0 was not measured"),
        ("/4", "its value is -1 s: a ratio of geometric means needs values above 0"),
        ("/5", "its value is nan"),
        ("/6", "its 4 timed step times are all 0 s: not measured"),
    ]
    rate = side_values(Metric("r", "GB/s", "higher", lambda doc: doc["r"]), [{"r": 0.0, "path": "/z"}])
    assert rate.left_out == [("/z", "its value is 0 GB/s: a ratio of geometric means needs values above 0")]
    tta = side_values(Metric("t", "s", "lower", lambda doc: doc["t"], time_to_accuracy=True),
                      [{"t": 4.0, "path": "/a"}, {"t": None, "path": "/b"}])
    assert tta.values == [4.0, None] and tta.left_out == []


def test_time_to_accuracy_with_a_run_that_did_not_converge_shows_the_olympic_means_its_ratio_is_of():
    """MLPerf's score: base runs 10, 11, 12, 13 s and one that did not converge (the slowest): fastest and slowest
    dropped, olympic mean (11 + 12 + 13) / 3 = 12 s; candidate 5..9 s: (6 + 7 + 8) / 3 = 7 s; ratio 7 / 12. The cells
    and the CSV show those means with every run counted (n = 5), not the converged runs' plain means."""
    from hpml.analysis.compare.comparisons import Row, compare_metric
    from hpml.analysis.compare.metrics import Metric
    from hpml.analysis.compare.outputs import csv_side, side_cells
    from hpml.analysis.compare.usable import SideValues

    metric = Metric("time to accuracy", "s", "lower", lambda doc: None, time_to_accuracy=True)
    base, cand = [10.0, 11.0, 12.0, 13.0, None], [5.0, 6.0, 7.0, 8.0, 9.0]
    result, b, c, note, olympic = compare_metric(metric, SideValues(base, [{}] * 5, []), SideValues(cand, [{}] * 5, []),
                                                 0.02)
    assert olympic == (pytest.approx(12.0), pytest.approx(7.0)) and result.ratio == pytest.approx(7 / 12)
    row = Row("c", "cfg", "train", metric, b, c, result, note, olympic)
    assert side_cells(row) == ("olympic mean 12 (n=5, 1 not converged)", "olympic mean 7 (n=5, 0 not converged)")
    assert csv_side(row, 0) == (5, pytest.approx(12.0)) and csv_side(row, 1) == (5, pytest.approx(7.0))


def test_the_fast_welch_interval_is_scipys():
    from scipy import stats

    from hpml.analysis.stats import welch_half_width

    a, b = [0.1, 0.25, 0.18, 0.3], [0.4, 0.35, 0.5]
    interval = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    diff = sum(b) / len(b) - sum(a) / len(a)
    assert welch_half_width(a, b) == pytest.approx(interval.high - diff, rel=1e-9)
    assert welch_half_width(a, b) == pytest.approx(diff - interval.low, rel=1e-9)
