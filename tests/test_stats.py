"""analysis/stats.py and the report registry against hand-computed values."""

from __future__ import annotations

import math

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.stats import (
    COMMON_VALUES,
    coefficient_of_variation,
    differing_labels,
    efficiency,
    labels_against_the_common,
    median_spread,
    natural_key,
    pooled,
    population_std,
    rate_speedup,
    sample_std,
    speedup,
)
from tests.factories import envelope, write_result
from tests.factories.train import train_result


def test_spreads_state_their_ddof():
    # [2, 4, 6]: mean 4, squared deviations 4 + 0 + 4 = 8; ddof=1: sqrt(8/2) = 2; ddof=0: sqrt(8/3) = 1.63299
    assert sample_std([2, 4, 6]) == pytest.approx(2.0)
    assert population_std([2, 4, 6]) == pytest.approx(math.sqrt(8 / 3))
    assert sample_std([3.0]) == 0.0
    assert coefficient_of_variation([2, 4, 6]) == pytest.approx(0.5)  # 2 / 4, unrounded
    assert coefficient_of_variation([2, 4, 6], ddof=0) == pytest.approx(math.sqrt(8 / 3) / 4)
    assert coefficient_of_variation([5.0]) == 0.0
    assert pooled([[1, 2], [3]]) == [1, 2, 3]


def test_speedup_and_efficiency():
    # t_base 4 s, t_N 1.25 s at N = 4: speedup 3.2; strong efficiency 3.2 / (4 / 1) = 0.8;
    # weak efficiency from steps 1.0 s -> 1.25 s: 0.8
    assert speedup(4.0, 1.25) == pytest.approx(3.2)
    assert rate_speedup(100.0, 320.0) == pytest.approx(3.2)
    assert efficiency("strong", speedup_n=3.2, n_base=1, n=4, step_base=1.0, step_n=1.0) == pytest.approx(0.8)
    assert efficiency("weak", speedup_n=3.2, n_base=1, n=4, step_base=1.0, step_n=1.25) == pytest.approx(0.8)
    assert efficiency("strong", speedup_n=1.5, n_base=2, n=4, step_base=1, step_n=1) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        efficiency("sideways", speedup_n=1, n_base=1, n=1, step_base=1, step_n=1)


def test_labels_name_only_what_differs_and_numbers_sort_by_value():
    labels = differing_labels({"a": {"workload.batch_size": 8, "workload.lr": 0.1},
                               "b": {"workload.batch_size": 32, "workload.lr": 0.1}})
    assert labels == {"a": "batch_size=8", "b": "batch_size=32"}
    assert differing_labels({"only": {"workload.lr": 0.1}}) == {"only": ""}
    assert sorted(["batch_size=32", "batch_size=8", "batch_size=128"], key=natural_key) == [
        "batch_size=8", "batch_size=32", "batch_size=128"]


def test_settings_around_a_baseline_name_only_their_departures_from_the_common_values():
    base = {"workload.batch_size": 32, "workload.loader_workers": 0, "workload.precision": "fp32"}
    labels = labels_against_the_common({
        "baseline": base, "workers": {**base, "workload.loader_workers": 8},
        "batch": {**base, "workload.batch_size": 512},
        "together": {"workload.batch_size": 512, "workload.loader_workers": 8, "workload.precision": "bf16"}})
    # batch_size 32 and 512 in 2 of 4 each, loader_workers 0 and 8 in 2 of 4 each: tied, so every row names them;
    # precision fp32 in 3 of 4 is the common value, named only where it departs
    assert labels == {"baseline": "batch_size=32 loader_workers=0", "workers": "batch_size=32 loader_workers=8",
                      "batch": "batch_size=512 loader_workers=0",
                      "together": "batch_size=512 loader_workers=8 precision=bf16"}
    three = labels_against_the_common({"b": base, "w": {**base, "workload.loader_workers": 8},
                                      "p": {**base, "workload.precision": "bf16"}})
    assert three == {"b": COMMON_VALUES, "w": "loader_workers=8", "p": "precision=bf16"}
    assert labels_against_the_common({"only": base}) == {"only": ""}
    # 1 and 1.0 are different values (as differing_labels tells them apart), a missing key is a value of its own
    assert labels_against_the_common({"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1.0}, "d": {}}) == {
        "a": COMMON_VALUES, "b": COMMON_VALUES, "c": "x=1.0", "d": "x=None"}


def test_a_workload_without_a_report_is_listed_and_problems_come_last(tmp_path, capsys):
    write_result(tmp_path, train_result(point=0, epoch_times=[2, 1], step_times=[[1], [1]]))
    write_result(tmp_path, envelope({"name": "vector_add"}, point=1))
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "(point 1, repeat 0): no report section for workload 'vector_add'" in markdown
    assert (markdown.index("### Epoch time and speedup") < markdown.index("## Results not in a table (1)")
            < markdown.index("## Problems (0)"))


def test_median_spread_of_repeated_times():
    # sorted 1, 2, 3, 10: median (2 + 3) / 2 = 2.5, [1, 10], n = 4
    assert median_spread([3.0, 1.0, 10.0, 2.0]) == {"median": 2.5, "min": 1.0, "max": 10.0, "n": 4}
    with pytest.raises(ValueError):
        median_spread([])

