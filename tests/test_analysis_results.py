"""Loading result.json files: the good ones load, every bad or missing one is a problem (analysis.results)."""

import json
from pathlib import Path

import pytest

from hpml.analysis.registry import RESULT_CHECKS
from hpml.analysis.results import load_results
from hpml.contract.result_format import timed_epoch_indices, timed_values
from hpml.contract.result_schema import validate_result as validate_envelope
from hpml.workloads.common.result import build_result, write_result
from tests.factories import write_manifest as write_fake_manifest
from tests.factories import write_result as write_fake_result
from tests.factories.train import train_result as fake_result


def validate_result(doc):
    """With the registered checks, as `hpml report` validates."""
    return validate_envelope(doc, RESULT_CHECKS)


def good(point, **kwargs):
    return fake_result(point=point, epoch_times=[9, 4, 4], step_times=[[1]] * 3, **kwargs)


def problems_by_point(loaded):
    return {problem.path.parent.name: problem.message for problem in loaded.problems}


def test_bad_files_are_problems_and_good_ones_load(tmp_path):
    write_fake_result(tmp_path, good(0))
    write_fake_result(tmp_path, good(1, workers_per_node=2))
    (tmp_path / "points" / "2").mkdir(parents=True)
    (tmp_path / "points" / "2" / "result.json").write_text('{"schema_version": 1, "identity": ')
    write_fake_result(tmp_path, {**good(3), "schema_version": 3})
    no_measurements = good(4)
    del no_measurements["measurements"]["epoch_time_s"]
    write_fake_result(tmp_path, no_measurements)

    loaded = load_results(tmp_path, RESULT_CHECKS)

    assert [row["identity"]["point"] for row in loaded.rows] == [0, 1]
    assert loaded.rows[0]["path"] == str(tmp_path / "points" / "0" / "result.json")
    assert loaded.files_found == 5
    problems = problems_by_point(loaded)
    assert problems["2"] == "truncated JSON: Expecting value (line 1, column 35)"
    assert problems["3"].startswith("schema_version 3 is not supported (this analysis reads versions 1 and 2)")
    assert problems["4"] == "measurements.epoch_time_s: missing"


def test_manifest_points_without_a_result_are_problems(tmp_path):
    write_fake_manifest(tmp_path, points=[0, 1, 2])
    write_fake_result(tmp_path, good(0))
    (tmp_path / "points" / "2").mkdir(parents=True)
    (tmp_path / "points" / "2" / "state.json").write_text(json.dumps({"state": "failed", "reason": "exit code 1"}))

    loaded = load_results(tmp_path, RESULT_CHECKS)

    assert len(loaded.rows) == 1
    problems = problems_by_point(loaded)
    assert set(problems) == {"1", "2"}
    assert problems["1"].startswith("missing result (resources.workers_per_node=2;")
    assert "job state: failed (exit code 1)" in problems["2"]


def test_sweeps_inside_a_folder_are_all_found(tmp_path):
    for name in ("a", "b"):
        write_fake_manifest(tmp_path / name, points=[0], sweep=name)
        write_fake_result(tmp_path / name, good(0, sweep=name))
    loaded = load_results(tmp_path, RESULT_CHECKS)
    assert sorted(row["identity"]["sweep"] for row in loaded.rows) == ["a", "b"]
    assert loaded.problems == []


def test_failed_results_load_without_measurements(tmp_path):
    write_fake_result(tmp_path, fake_result(point=0, epoch_times=[], step_times=[], status="oom",
                                            reason="out of memory"))
    loaded = load_results(tmp_path, RESULT_CHECKS)
    assert loaded.problems == []
    assert loaded.rows[0]["status"] == "oom"


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.pop("schema_version"), ["schema_version: missing"]),
    (lambda d: d.update(schema_version=True), ["schema_version True is not supported"]),
    (lambda d: d.update(identity="x"), ["identity: expected an object, got 'x'"]),
    (lambda d: d.update(status="crashed"), ["status: expected one of ok, failed, oom, timeout"]),
    (lambda d: d["identity"].update(repeat="0"), ["identity.repeat: expected an integer, got '0'"]),
    (lambda d: d["measurements"].update(epoch_time_s=[9, "4", 4]), ["measurements.epoch_time_s: expected a list"]),
    (lambda d: d["measurements"].update(epoch_time_s=[9, 0, 4]), ["measurements.epoch_time_s: expected a list"]),
    (lambda d: d["measurements"].update(step_time_s=[[1], [1]]), ["measurements.step_time_s: 2 epoch(s)"]),
    (lambda d: d["config"]["workload"].update(scaling="both"), ["config.workload.scaling: expected one of"]),
    (lambda d: d["environment"].update(world_size=3), ["environment.world_size: 3 workers ran"]),
    (lambda d: d["measurements"].update(cold_epochs=[0, 3]), ["measurements.cold_epochs: expected epoch indices 0..2"]),
    (lambda d: d["measurements"].update(cold_epochs="0"), ["measurements.cold_epochs: expected epoch indices"]),
])
def test_validate_result_names_each_broken_rule(change, expected):
    doc = good(0)
    change(doc)
    errors = validate_result(doc)
    assert len(errors) == len(expected), errors
    for error, start in zip(errors, expected):
        assert error.startswith(start), error


def test_an_ok_result_needs_a_timed_epoch_after_warm_up():
    doc = fake_result(point=0, epoch_times=[9], step_times=[[1]])
    assert validate_result(doc) == ["measurements.epoch_time_s: 1 epoch(s); an ok result needs at least 2 "
                                    "(epoch 1 is warm-up and is not reported)"]


@pytest.mark.parametrize("cold, timed", [
    (None, [1, 2, 3]),      # a result from before cold_epochs: epoch 1 only
    ([0], [1, 2, 3]),
    ([0, 2], [1, 3]),       # resumed from a checkpoint before epoch 3: its first epoch is cold too
    ([0, 1, 2, 3], [1, 2, 3]),  # every epoch cold (requeued after each): fall back to dropping epoch 1
])
def test_timed_epochs_leave_out_the_cold_ones(cold, timed):
    m = {"epoch_time_s": [9.0, 4.0, 7.0, 5.0]}
    if cold is not None:
        m["cold_epochs"] = cold
    assert timed_epoch_indices(len(m["epoch_time_s"]), m.get("cold_epochs")) == timed
    assert timed_values(m["epoch_time_s"], m) == [m["epoch_time_s"][i] for i in timed]


def test_a_resumed_run_reports_the_mean_of_its_warm_epochs():
    # Epoch 3 (index 2) started a requeued process: 7.0 s of it is start-up, and the speedup must not see it.
    doc = fake_result(point=0, epoch_times=[9.0, 4.0, 7.0, 5.0], step_times=[[1.0]] * 4)
    doc["measurements"]["cold_epochs"] = [0, 2]
    assert validate_result(doc) == []
    from hpml.analysis.train.runs import train_run
    assert train_run({**doc, "path": "p"})["epoch_time_s"] == [4, 5]  # their mean: (4 + 5) / 2


def test_round_trip_through_the_workloads_result_writer(tmp_path):
    """A document built and written by workloads.common.result loads with no problem."""
    template = good(0)
    point_dir = tmp_path / "points" / "0"
    doc = build_result(config=template["config"], point_dir=point_dir, status="ok", reason=None,
                       environment=template["environment"], timing=template["timing"],
                       measurements=template["measurements"], derived={"epoch_time_s": 4.0},
                       started_at="2026-01-01T00:00:00+00:00")
    path = write_result(point_dir, doc)

    assert validate_result(json.loads(Path(path).read_text())) == []
    loaded = load_results(tmp_path, RESULT_CHECKS)
    assert loaded.problems == []
    assert loaded.rows[0]["identity"] == {"sweep": "study", "point": 0, "repeat": 0, "seed": 0,
                                          "workload": "train"}


def test_the_documented_example_is_valid():
    example = Path(__file__).resolve().parents[1] / "docs" / "result-example.json"
    assert validate_result(json.loads(example.read_text())) == []


def test_the_example_in_the_schema_document_is_valid():
    text = (Path(__file__).resolve().parents[1] / "docs" / "result-schema.md").read_text()
    first_json_block = text.split("```json\n", 1)[1].split("```", 1)[0]
    assert validate_result(json.loads(first_json_block)) == []


def test_a_diverged_loss_written_as_nan_is_still_read(tmp_path):
    """Python's json writes NaN for a diverged loss; orjson refuses that token, so such a file goes through the
    standard library's decoder and stays in the report."""
    doc = fake_result(point=0, epoch_times=[3.0, 2.0], step_times=[[1.0], [1.0]])
    doc["measurements"]["train_loss"] = [float("nan"), float("nan")]
    path = write_fake_result(tmp_path, doc)
    assert "NaN" in path.read_text()
    loaded = load_results(tmp_path, RESULT_CHECKS)
    assert loaded.problems == [] and len(loaded.rows) == 1
    assert loaded.rows[0]["measurements"]["train_loss"][0] != loaded.rows[0]["measurements"]["train_loss"][0]


def test_corrupt_json_is_a_problem_with_its_line_and_column(tmp_path):
    path = tmp_path / "points" / "0" / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1,\n "identity": }')
    loaded = load_results(tmp_path)
    assert [p.message for p in loaded.problems] == ["corrupt JSON: Expecting value (line 2, column 14)"]


def test_loading_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    import gc

    write_fake_result(tmp_path, fake_result(point=0, epoch_times=[3.0, 2.0], step_times=[[1.0], [1.0]]))
    assert gc.isenabled()
    load_results(tmp_path)
    assert gc.isenabled()
    gc.disable()
    try:
        load_results(tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_where_the_data_lives_is_not_part_of_a_configuration():
    """Two hardware types with the same digits under different paths are one configuration; the data path is not."""
    from hpml.analysis.configuration import configuration_items

    def config(root, placement):
        return {"workload": {"data_root": root, "data_placement": placement, "lr": 0.1}, "sweep": {"seed": 0}}

    assert configuration_items(config("/tmp/a", "device")) == configuration_items(config("/home/b", "device"))
    assert configuration_items(config("/tmp/a", "device")) != configuration_items(config("/tmp/a", "host"))
    assert "workload.data_root" not in configuration_items(config("/tmp/a", "device"))
