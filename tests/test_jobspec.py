"""Resource grouping: points with the same resource shape share one job array."""

from __future__ import annotations

from hpml.conf.schema import config_from_dict
from hpml.launcher.jobspec import group_by_shape, jobspec_of


def spec(compose_values, point, overrides):
    config = config_from_dict(compose_values(overrides))
    return jobspec_of(config, point, f"/sweep/points/{point}", overrides)


def test_points_with_equal_resources_form_one_array(compose_values):
    specs = [spec(compose_values, i, [f"workload.lr={lr}"]) for i, lr in enumerate([0.1, 0.2, 0.3])]
    groups = group_by_shape(specs)
    assert len(groups) == 1
    assert [s.point for s in groups[0][1]] == [0, 1, 2]


def test_different_shapes_become_separate_arrays_in_point_order(compose_values):
    specs = [
        spec(compose_values, 0, ["resources.workers_per_node=1"]),
        spec(compose_values, 1, ["resources.workers_per_node=2"]),
        spec(compose_values, 2, ["resources.workers_per_node=1", "workload.lr=0.5"]),
        spec(compose_values, 3, ["resources.time_min=5"]),
    ]
    groups = group_by_shape(specs)
    assert [[s.point for s in group] for _, group in groups] == [[0, 2], [1], [3]]
    assert groups[1][0].world_size == 2
    assert groups[2][0].time_min == 5


def test_workload_values_do_not_change_the_shape(compose_values):
    a = spec(compose_values, 0, ["workload.batch_size=64"])
    b = spec(compose_values, 1, ["workload.batch_size=128"])
    assert a.shape == b.shape


def test_a_task_gets_the_cpus_of_all_its_workers(compose_values):
    s = spec(compose_values, 0, ["resources.workers_per_node=2", "resources.cpus_per_worker=3"])
    assert s.shape.cpus_per_task == 6
