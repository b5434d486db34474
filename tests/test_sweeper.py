"""hpml's sweeper plans the same configs as composing every point with Hydra, only faster."""

from __future__ import annotations

import pytest

from launcher.launch import plan_sweep
from launcher.manifest import new_manifest


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sweep_is_the_cartesian_product_in_hydra_order(in_tmp):
    plan = plan_sweep(["-m", "resources.workers_per_node=1,2", "workload.lr=0.1,0.2,0.3"])
    assert [p.spec.overrides for p in plan.points][:2] == [
        ("resources.workers_per_node=1", "workload.lr=0.1"), ("resources.workers_per_node=1", "workload.lr=0.2")]
    assert len(plan.points) == 6
    assert [p.spec.point for p in plan.points] == list(range(6))
    assert len({p.sweep_dir for p in plan.points}) == 1


@pytest.mark.parametrize("overrides", [
    ["workload.lr=0.25", "resources.workers_per_node=2"],
    ["experiment=quickstart", "workload.batch_size=16"],
    ["sweep.name=abc", "workload.scaling=strong", "workload.batch_size=64"],
])
def test_planned_values_equal_a_full_hydra_compose(in_tmp, compose_values, overrides):
    planned = plan_sweep(["-m", *overrides]).points[0].values
    composed = compose_values(overrides)
    for values in (planned, composed):
        values["sweep"].pop("dir")  # timestamped, and set to the real sweep directory by the planner
    assert planned == composed


def test_range_sweeps_expand(in_tmp):
    plan = plan_sweep(["-m", "workload.batch_size=range(16,64,16)"])
    assert [p.config.workload.batch_size for p in plan.points] == [16, 32, 48]


def test_a_launch_without_sweep_values_is_one_point(in_tmp):
    plan = plan_sweep(["workload.lr=0.5"])
    assert len(plan.points) == 1 and plan.points[0].config.workload.lr == 0.5


def test_the_manifest_has_one_array_per_resource_shape(in_tmp):
    argv = ["-m", "resources.workers_per_node=1,2", "workload.lr=0.1,0.2"]
    plan = plan_sweep(argv)
    manifest = new_manifest(plan, argv)
    assert (manifest["sweep"], manifest["cluster"], manifest["argv"]) == ("train", "local", argv)
    assert manifest["dir"] == str(plan.points[0].sweep_dir)
    assert [a["points"] for a in manifest["arrays"]] == [[0, 1], [2, 3]]
    assert [(p["point"], p["array"], p["world_size"], p["job_id"]) for p in manifest["points"]] == [
        (0, 0, 1, None), (1, 0, 1, None), (2, 1, 2, None), (3, 1, 2, None)]
    assert manifest["points"][3]["overrides"] == ["resources.workers_per_node=2", "workload.lr=0.2"]


def true_false_keys(values: dict, prefix: str = "") -> list:
    """Every key of a composed config whose value is true or false."""
    keys = []
    for key, value in values.items():
        if isinstance(value, dict):
            keys += true_false_keys(value, f"{prefix}{key}.")
        elif isinstance(value, bool):
            keys.append(f"{prefix}{key}")
    return keys


def test_every_true_false_key_refuses_a_number_other_than_0_or_1(in_tmp, compose_values):
    """OmegaConf turns any number into true for a bool field, so `workload.augment=5` ran as true; the class is
    every bool key, of every workload the quickstart composes and of the base config."""
    from launcher.errors import LaunchError

    keys = true_false_keys(compose_values(["experiment=quickstart"]))
    assert {"workload.augment", "workload.pin_memory", "telemetry.enabled"} <= set(keys)
    for key in keys:
        with pytest.raises(LaunchError, match=rf"^{key}=5 is not allowed: true or false$"):
            plan_sweep(["experiment=quickstart", f"{key}=5"])
    for value, expected in (("0", False), ("1", True), ("false", False), ("True", True)):
        assert plan_sweep(["experiment=quickstart", f"workload.augment={value}"]).points[0].values[
            "workload"]["augment"] is expected
    with pytest.raises(LaunchError, match=r"^workload.pin_memory='yes' is not allowed: true or false$"):
        plan_sweep(["-m", "experiment=quickstart", "workload.pin_memory=true,yes"])
