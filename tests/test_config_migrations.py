"""Point configs written by an earlier hpml resume (conf/migrations.py): `workload.compile: false` / `true`, from
before result schema 2 made the key a mode name, read as `none` / `default`, the keys that change added with their
values, and a real sweep whose point config says `compile: false` resumes, its config.yaml written back in today's
schema and the file as it was kept in the attempt's folder."""

from __future__ import annotations

import json

import pytest
import yaml

from hpml.conf.migrations import migrated, train_default
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.train import CompileMode
from hpml.launcher.status import current_states
from tests.conftest import SMALL_TRAIN, own_copy


def as_old_hpml_wrote_it(values: dict, compile_value: bool) -> dict:
    """A point config of before commit 2d194b9: compile a bool, no cuda_graphs, no bound_probe_steps."""
    old = json.loads(json.dumps(values))
    old["workload"]["compile"] = compile_value
    del old["workload"]["cuda_graphs"], old["workload"]["bound_probe_steps"]
    return old


@pytest.fixture(scope="module")
def today(compose_values):
    return compose_values(["workload.synthetic_samples=8", "workload.batch_size=4"])


@pytest.mark.parametrize("old, mode", [(False, "none"), (True, "default")])
def test_a_bool_compile_reads_as_the_mode_it_ran(today, old, mode):
    values = as_old_hpml_wrote_it(today, old)
    with pytest.raises(ConfigValueError, match="workload.compile"):
        config_from_dict(values)  # refused as it is: the migration is what lets it through
    new, lines = migrated(values)
    assert new["workload"]["compile"] == mode and config_from_dict(new).workload.compile == CompileMode(mode)
    assert new["workload"]["cuda_graphs"] is False  # no graph was captured before the key existed
    assert new["workload"]["bound_probe_steps"] == train_default("bound_probe_steps") == 10
    assert lines == [f"workload.compile: {str(old).lower()} -> {mode} (written before result schema 2 made it a mode "
                     "name)",
                     "workload.cuda_graphs: (absent) -> false (added by schema 2; before it no step was captured)",
                     "workload.bound_probe_steps: (absent) -> 10 (added by schema 2; today's launch default)"]
    assert values["workload"]["compile"] is old and "cuda_graphs" not in values["workload"]  # the input untouched
    assert new == {**today, "workload": {**today["workload"], "compile": mode}}  # all else as today's launch


def test_keys_present_are_kept_and_current_or_other_configs_are_not_touched(today):
    values = json.loads(json.dumps(today))
    values["workload"]["compile"] = True
    values["workload"]["bound_probe_steps"] = 0
    new, lines = migrated(values)
    assert new["workload"]["bound_probe_steps"] == 0 and [line.split(":")[0] for line in lines] == ["workload.compile"]
    assert migrated(today) == (today, [])
    for other in ([1, 2], {"workload": "train"}, {"workload": {"name": "allreduce", "compile": False}}, None):
        assert migrated(other) == (other, [])


def test_compile_true_ran_torch_compiles_default_mode():
    # before 2d194b9 the worker ran torch.compile(model) (no mode argument: torch's "default") for compile: true
    assert CompileMode.default.torch_mode == "default"


def test_a_sweep_whose_point_config_says_compile_false_resumes(tmp_path, hpml, shared_sweep):
    # a launched small point (launched once per test run: test_damaged_files.py damages it too), on its own copy
    sweep = own_copy(shared_sweep(*SMALL_TRAIN, timeout=300), tmp_path / "sweep")
    folder = sweep / "points" / "0"
    launched = yaml.safe_load((folder / "config.yaml").read_text())
    old_text = yaml.dump(as_old_hpml_wrote_it(launched, False), Dumper=yaml.CSafeDumper, sort_keys=False)
    (folder / "config.yaml").write_text(old_text)
    result = folder / "result.json"
    result.write_text(result.read_text()[:100])  # the point to rerun: its result cut short

    resume = hpml("resume", str(sweep), timeout=300)

    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert "hpml: points/0/config.yaml: workload.compile: false -> none (" in resume.stdout
    assert "resuming 1 of 1 point(s)" in resume.stdout
    assert [s.state for s in current_states(sweep)] == ["completed"]
    written = yaml.safe_load((folder / "config.yaml").read_text())
    assert written == launched  # today's schema: what a launch writes now
    assert (folder / "attempts" / "0" / "config.yaml").read_text() == old_text  # the file as it was
    rerun = json.loads(result.read_text())
    assert rerun["status"] == "ok" and rerun["config"]["workload"]["compile"] == "none"
    again = hpml("resume", str(sweep))
    assert again.returncode == 0 and "config.yaml" not in again.stdout  # nothing left to migrate
