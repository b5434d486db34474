"""Speedup, efficiency, baselines and statistics of the train epoch-time table (scaling.csv) against
hand-computed values, from plain train results (no phase arrays: results written before them)."""

import math

import pytest

from hpml.analysis.configuration import configuration_items, items_key
from hpml.analysis.stats import sample_std
from hpml.analysis.train.runs import is_train_run, train_run
from hpml.analysis.train.tables import time_table
from tests.factories.train import train_result as fake_result


def config_key(config):
    return items_key(configuration_items(config))


def table_of(*docs):
    rows = [{**doc, "path": f"points/{i}/result.json"} for i, doc in enumerate(docs)]
    return time_table([train_run(row) for row in rows if is_train_run(row)])


def row_at(table, world_size, **match):
    selected = table[table["devices"] == world_size]
    for column, value in match.items():
        selected = selected[selected[column] == value]
    assert len(selected) == 1, selected
    return selected.iloc[0]


# Weak scaling, per-worker batch 32. Epoch 1 is warm-up; times in seconds.
#   N=1: epochs [9, 4, 4]     -> t = 4.0;  steps of epochs 2..: 1,1,1,1,1,1,1,1 -> mean 1.0
#   N=2: epochs [5, 2.5, 1.5] -> t = 2.0;  steps 1.5,1.0,1.0,1.5          -> mean 1.25
#   N=4: epochs [3, 1.0, 1.5] -> t = 1.25; steps 1.0,1.5                  -> mean 1.25
WEAK = [
    fake_result(point=0, workers_per_node=1, epoch_times=[9, 4, 4],
                step_times=[[3, 2, 2, 2], [1, 1, 1, 1], [1, 1, 1, 1]]),
    fake_result(point=1, workers_per_node=2, epoch_times=[5, 2.5, 1.5],
                step_times=[[2, 3], [1.5, 1.0], [1.0, 1.5]]),
    fake_result(point=2, workers_per_node=4, epoch_times=[3, 1.0, 1.5], step_times=[[3], [1.0], [1.5]]),
]


def test_weak_scaling_speedup_and_step_time_efficiency():
    table = table_of(*WEAK)
    assert list(table["devices"]) == [1, 2, 4]
    assert list(table["baseline_devices"]) == [1, 1, 1]
    assert list(table["epoch_time_mean_s"]) == pytest.approx([4.0, 2.0, 1.25])
    assert list(table["speedup"]) == pytest.approx([1.0, 2.0, 3.2])  # 4/4, 4/2, 4/1.25
    assert list(table["step_mean_s"]) == pytest.approx([1.0, 1.25, 1.25])
    assert list(table["efficiency"]) == pytest.approx([1.0, 0.8, 0.8])  # 1.0/1.0, 1.0/1.25, 1.0/1.25


def test_weak_scaling_statistics_and_throughput():
    table = table_of(*WEAK)
    assert list(table["n"]) == [2, 2, 2]  # epochs 2 and 3 of one run each
    # sample std (ddof=1): [4, 4] -> 0; [2.5, 1.5] -> sqrt(0.5^2 + 0.5^2) = 0.70711; [1, 1.5] -> 0.35355
    assert list(table["epoch_time_std_s"]) == pytest.approx([0.0, math.sqrt(0.5), math.sqrt(0.125)])
    # 128 samples per epoch at every N (4 x 32 x 1, 2 x 32 x 2, 1 x 32 x 4): 2 x 128 / total timed seconds
    assert list(table["samples_per_s"]) == pytest.approx([256 / 8, 256 / 4, 256 / 2.5])
    assert list(table["per_device_batch"]) == [32, 32, 32]
    assert list(table["global_batch"]) == [32, 64, 128]


def test_strong_scaling_efficiency_is_speedup_over_worker_ratio():
    # Global batch 64. N=1: [10, 8, 8] -> 8.0, steps 2.0; N=4: [6, 2.5, 2.5] -> 2.5, steps 0.625.
    table = table_of(
        fake_result(point=0, scaling="strong", batch_size=64, epoch_times=[10, 8, 8],
                    step_times=[[3, 2, 2, 3], [2] * 4, [2] * 4]),
        fake_result(point=1, scaling="strong", batch_size=64, workers_per_node=4, epoch_times=[6, 2.5, 2.5],
                    step_times=[[2] * 4, [0.625] * 4, [0.625] * 4]),
    )
    assert list(table["speedup"]) == pytest.approx([1.0, 3.2])  # 8 / 2.5
    assert list(table["efficiency"]) == pytest.approx([1.0, 0.8])  # 3.2 / 4, not the step ratio 3.2
    assert list(table["global_batch"]) == [64, 64]
    assert list(table["per_device_batch"]) == [64, 16]


def test_baseline_is_the_smallest_world_size_when_no_single_worker_run():
    # N=2 as 2 nodes x 1 and as 1 node x 2; N=4 as 1 node x 4. The baseline is N=2 on one node (t = 4.0).
    table = table_of(
        fake_result(point=0, scaling="strong", batch_size=64, nodes=2, epoch_times=[9, 5, 5], step_times=[[1]] * 3),
        fake_result(point=1, scaling="strong", batch_size=64, workers_per_node=2, epoch_times=[9, 4, 4],
                    step_times=[[1]] * 3),
        fake_result(point=2, scaling="strong", batch_size=64, workers_per_node=4, epoch_times=[9, 2.5, 2.5],
                    step_times=[[1]] * 3),
    )
    assert list(table["baseline_devices"]) == [2, 2, 2]
    assert list(zip(table["devices"], table["nodes"])) == [(2, 1), (2, 2), (4, 1)]
    assert list(table["speedup"]) == pytest.approx([1.0, 0.8, 1.6])  # 4/4, 4/5, 4/2.5
    assert list(table["efficiency"]) == pytest.approx([1.0, 0.8, 0.8])  # 1.6 / (4 / 2)


def test_configurations_with_different_batch_sizes_are_never_compared():
    # batch 32: N=1 t=4, N=2 t=2.  batch 64: N=2 t=3, N=4 t=1.5 (no single-worker run of its own).
    table = table_of(
        fake_result(point=0, batch_size=32, epoch_times=[9, 4, 4], step_times=[[1]] * 3),
        fake_result(point=1, batch_size=32, workers_per_node=2, epoch_times=[5, 2, 2], step_times=[[1]] * 3),
        fake_result(point=2, batch_size=64, workers_per_node=2, epoch_times=[6, 3, 3], step_times=[[2]] * 3),
        fake_result(point=3, batch_size=64, workers_per_node=4, epoch_times=[4, 1.5, 1.5], step_times=[[2]] * 3),
    )
    assert table["group_key"].nunique() == 1 and table["fixed_batch"].nunique() == 2  # one group, two batches
    small = table[table["per_device_batch"] == 32]
    large = table[table["per_device_batch"] == 64]
    assert list(small["baseline_devices"]) == [1, 1]
    assert list(small["speedup"]) == pytest.approx([1.0, 2.0])
    assert list(large["baseline_devices"]) == [2, 2]  # not the batch-32 single worker
    assert list(large["speedup"]) == pytest.approx([1.0, 2.0])  # 3/1.5, not 4/1.5
    assert list(table["fixed_batch"]) == [32, 32, 64, 64]  # by value


def test_batch_sizes_sort_by_value_not_as_text(tmp_path, capsys):
    from hpml.analysis.report import main
    from tests.factories import write_result

    for point, batch in enumerate((32, 8)):
        write_result(tmp_path, fake_result(point=point, batch_size=batch, epoch_times=[2, 1], step_times=[[1]] * 2))
    assert main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert markdown.index("| 8 | 1 | 1 × 1 | 8 |") < markdown.index("| 32 | 1 | 1 × 1 | 32 |")
    assert not (tmp_path / "report" / "speedup.png").exists()  # one N per line: no one-dot plot


def test_repeats_are_pooled_with_their_n_and_sample_std():
    table = table_of(
        fake_result(point=0, repeat=0, epoch_times=[9, 4, 4], step_times=[[1]] * 3),
        fake_result(point=1, repeat=0, workers_per_node=2, epoch_times=[5, 2.5, 1.5], step_times=[[1]] * 3),
        fake_result(point=2, repeat=1, workers_per_node=2, epoch_times=[5, 2.0, 2.0], step_times=[[1]] * 3),
    )
    two = row_at(table, 2)
    assert two["runs"] == 2
    assert two["n"] == 4  # [2.5, 1.5, 2.0, 2.0]
    assert two["epoch_time_mean_s"] == pytest.approx(2.0)
    # deviations 0.5, -0.5, 0, 0 -> sum of squares 0.5 / (4 - 1) -> sqrt = 0.408248
    assert two["epoch_time_std_s"] == pytest.approx(math.sqrt(0.5 / 3))
    assert two["epoch_time_cv"] == pytest.approx(math.sqrt(0.5 / 3) / 2.0)
    assert two["speedup"] == pytest.approx(2.0)
    assert len(table) == 2  # the repeats are one row, not two


def test_sample_std_uses_ddof_1_and_is_zero_for_one_sample():
    assert sample_std([2.5, 1.5]) == pytest.approx(math.sqrt(0.5))
    assert sample_std([3.0]) == 0.0


def test_config_key_ignores_resources_sweep_and_cluster_but_not_workload():
    base = fake_result(point=0, epoch_times=[1, 1], step_times=[[1], [1]])
    moved = fake_result(point=5, repeat=2, nodes=2, workers_per_node=4, sweep="other",
                        epoch_times=[1, 1], step_times=[[1], [1]])
    moved["config"]["cluster"]["kind"] = "slurm"
    assert config_key(base["config"]) == config_key(moved["config"])
    retuned = fake_result(point=0, epoch_times=[1, 1], step_times=[[1], [1]])
    retuned["config"]["workload"]["lr"] = 0.2
    assert config_key(base["config"]) != config_key(retuned["config"])


def test_only_ok_results_are_tabulated_and_derived_is_ignored():
    ok = fake_result(point=0, epoch_times=[9, 4, 4], step_times=[[1]] * 3)
    ok["derived"] = {"epoch_time_s": 123.0, "samples_per_s": 1.0}  # wrong on purpose
    failed = fake_result(point=1, workers_per_node=2, epoch_times=[], step_times=[], status="failed",
                         reason="worker exited")
    table = table_of(ok, failed)
    assert list(table["devices"]) == [1]
    assert table.iloc[0]["epoch_time_mean_s"] == pytest.approx(4.0)


def test_no_runs_give_an_empty_table_with_the_column_schema():
    table = table_of()
    assert table.empty
    assert "speedup" in table.columns and "efficiency" in table.columns
