"""hpml's sweeper plans the same configs as composing every point with Hydra, only faster."""

from __future__ import annotations

import pytest

from hpml.launcher.launch import plan_sweep
from hpml.launcher.manifest import new_manifest


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
    from hpml.launcher.errors import LaunchError

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


def launch_refused(*argv: str) -> str:
    from hpml.launcher.errors import LaunchError

    with pytest.raises(LaunchError) as refused:
        plan_sweep(list(argv))
    return str(refused.value)


def test_a_sweep_over_the_cap_is_refused_before_its_points_are_listed(in_tmp, monkeypatch):
    """range(0,10**9) filled gigabytes before any check: the count is the product of the lists' lengths, taken
    from range()'s bounds, so nothing is listed (split_arguments, which lists, is made to fail here)."""
    import sys

    plan_sweep(["workload.lr=0.5"])  # Hydra loads (and re-executes) its plugins once per process: the sweeper is in now

    def listed(*args):
        raise AssertionError("the sweep was listed")

    sweeper = sys.modules["hydra_plugins.hpml_sweeper.hpml_sweeper"].HpmlSweeper
    monkeypatch.setattr(sweeper, "split_arguments", staticmethod(listed))
    assert launch_refused("-m", "sweep.seed=0,1") == "the sweep was listed"  # the spy is the one Hydra calls
    assert launch_refused("-m", "sweep.seed=range(0,1000000000)") == (
        "sweep.seed=range(0,1000000000) is not allowed: it would make 1,000,000,000 points, at most 10,000 in one "
        "launch; split the sweep over several launches")
    assert launch_refused("-m", "sweep.seed=range(0,1000)", "workload.lr=range(0.5,50,0.5)") == (
        "sweep.seed=range(0,1000) workload.lr=range(0.5,50,0.5) is not allowed: it would make 99,000 points "
        "(1,000 x 99), at most 10,000 in one launch; split the sweep over several launches")
    assert launch_refused("-m", "sweep.seed=range(0,10,0)") == (
        "sweep.seed=range(0,10,0) is not allowed: a range's step must not be 0 (e.g. sweep.seed=range(0,10,1))")
    assert launch_refused("-m", "sweep.seed=range(0,1000000000)", "workload.lr=range(1,0)") == (
        "workload.lr=range(1,0) is not allowed: a sweep needs at least one value (e.g. workload.lr=range(0,4))")


def test_the_count_is_the_product_of_the_lists_and_the_cap_is_inclusive():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from hpml.conf.validation import ConfigValueError
    from hydra_plugins.hpml_sweeper.hpml_sweeper import MAX_POINTS, check_sweep_size, final_overrides, sweep_length

    parse = OverridesParser.create().parse_overrides
    lengths = [sweep_length(o) for o in parse(["a=range(0,100)", "b=range(0,1,0.25)", "c=range(5,0,-2)",
                                               "d=choice(1,2,3)", "e=x,y", "f=7", "g=shuffle(range(3))"])]
    assert lengths == [100, 4, 3, 3, 2, 1, 3]
    assert MAX_POINTS == 10_000
    check_sweep_size(parse(["a=range(0,100)", "b=range(0,100)"]))  # exactly the cap: planned
    with pytest.raises(ConfigValueError, match="would make 10,100 points"):
        check_sweep_size(parse(["a=range(0,100)", "b=range(0,101)"]))
    # the command line replaces a preset's list of the same key, as Hydra does: only the last one counts
    assert [o.input_line for o in final_overrides(parse(["a=range(0,100000)", "b=1,2", "a=1,2"]))] == ["a=1,2", "b=1,2"]


@pytest.mark.parametrize("override, value", [("sweep.seed=0,0", "0"), ("workload.batch_augmentation=1,2,1", "1"),
                                             ("experiment=quickstart,quickstart", "quickstart"),
                                             ("workload.lr=choice(0.1,0.2,0.1)", "0.1")])
def test_a_value_given_twice_in_a_sweep_is_refused(in_tmp, override, value):
    assert launch_refused("-m", override) == (
        f"{override} is not allowed: the value {value} is given twice, which makes identical points; give each "
        "value once (sweep.repeat=0,1,2 runs each point three times)")


def test_a_preset_list_with_a_repeated_value_is_refused_and_names_where_it_is(in_tmp):
    (in_tmp / "conf" / "experiment").mkdir(parents=True)
    (in_tmp / "conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nsweep:\n  name: mine\nhydra:\n  sweeper:\n    params:\n      sweep.seed: 0,1,1\n")
    assert launch_refused("experiment=mine") == (
        "sweep.seed=0,1,1 (the preset's hydra.sweeper.params) is not allowed: the value 1 is given twice, which makes "
        "identical points; give each value once (sweep.repeat=0,1,2 runs each point three times)")
    # the command line's list replaces the preset's: no identical points
    assert [p.spec.overrides[0] for p in plan_sweep(["experiment=mine", "sweep.seed=3,4"]).points] == [
        "sweep.seed=3", "sweep.seed=4"]


@pytest.mark.parametrize("override, same", [
    ("sweep.seed=0,00", "sweep.seed=0 and sweep.seed=00"),
    ("workload.lr=0.5,5e-1", None),  # the same number written twice: the list check names it
    ("workload.lr=1,1.0", "workload.lr=1 and workload.lr=1.0"),
    ("workload.augment=true,1", "workload.augment=True and workload.augment=1"),
    ("workload.model='hpml_cnn',hpml_cnn", "workload.model='hpml_cnn' and workload.model=hpml_cnn"),
])
def test_values_written_differently_that_make_the_same_config_are_refused(in_tmp, override, same):
    """The class behind a repeated value: two points whose configs are equal, however their values are written."""
    line = launch_refused("-m", "workload.model=hpml_cnn", override)
    if same is None:
        assert line.startswith(f"{override} is not allowed: the value 0.5 is given twice"), line
        return
    assert line == (f"{override} is not allowed: {same} make the same config, so points 0 and 1 would be "
                    "identical; give each value once (sweep.repeat=0,1,2 runs each point three times)")


def test_distinct_points_of_a_repeat_sweep_are_planned(in_tmp):
    plan = plan_sweep(["-m", "sweep.repeat=0,1,2", "sweep.seed=0"])
    assert [p.config.sweep.repeat for p in plan.points] == [0, 1, 2]
