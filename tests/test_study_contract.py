"""The registry-driven contract of a study: every registered workload, end to end, by being registered.

For each workload in the config registry (conf/workload/__init__.py WORKLOAD_SCHEMAS): the analysis registry
(analysis/registry.py REPORTS) has its report, its tiny preset conf/experiment/tiny/<name>.yaml composes, one
CPU point runs under torchrun through `hpml launch`, its result.json passes the analysis' validation (with the
workload's registered checks), and its report sections render to report.md and their files. A new workload is
tested here by registering it (docs/adding-a-workload.md); nothing in this file names one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hpml.analysis.registry import REPORTS, RESULT_CHECKS
from hpml.analysis.report import build_report, write_report
from hpml.conf.schema import config_from_dict
from hpml.conf.workload import WORKLOAD_SCHEMAS
from hpml.contract.result_schema import validate_result
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.workloads.common.cpu import SIMD_FLAGS

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = sorted(WORKLOAD_SCHEMAS)


def test_both_registries_name_the_same_workloads():
    assert sorted(REPORTS) == WORKLOADS
    assert set(RESULT_CHECKS) <= set(WORKLOADS)


@pytest.mark.parametrize("name", WORKLOADS)
def test_every_workload_has_a_tiny_preset_that_composes_to_one_cpu_point(name, compose_values):
    assert (REPO / "hpml" / "conf" / "experiment" / "tiny" / f"{name}.yaml").is_file(), \
        f"workload {name!r} is registered but has no conf/experiment/tiny/{name}.yaml"
    config = config_from_dict(compose_values([f"experiment=tiny/{name}"]))
    assert config.workload.name == name
    assert config.resources.gpus_per_node == 0 and config.cluster.kind.value == "local"


@pytest.fixture(scope="module", params=WORKLOADS)
def tiny_sweep(request, shared_sweep, tiny_data_env):
    """`hpml launch experiment=tiny/<name>` for real: submitit's local executor, torchrun, gloo on CPU (a preset
    that reads real files finds the digits at $HPML_DIGITS_ROOT: conftest's tiny_data_env). Launched once per test
    run (conftest's shared_sweep): test_provenance.py and test_telemetry_capture.py read the same points."""
    name = request.param
    env = tiny_data_env(REPO / "hpml" / "conf" / "experiment" / "tiny" / f"{name}.yaml")
    return name, shared_sweep(f"experiment=tiny/{name}", env=env, timeout=300)


def test_the_tiny_point_writes_a_result_the_analysis_accepts(tiny_sweep):
    name, sweep = tiny_sweep
    doc = json.loads((point_dir(sweep, 0) / RESULT_FILE).read_text())
    assert doc["status"] == "ok", doc["reason"]
    assert doc["identity"]["workload"] == name
    assert validate_result(doc, RESULT_CHECKS) == []
    cpu = doc["environment"]["cpu"]  # the CPU decides what int8 and float kernels compute (issue 31)
    assert isinstance(cpu["model"], str) and cpu["model"] and cpu["capability"] == torch.backends.cpu.get_cpu_capability()
    assert set(cpu["simd"]) <= set(SIMD_FLAGS) and cpu["vnni"] in (True, False, None)


def test_the_tiny_point_renders_its_sections_and_their_files(tiny_sweep, tmp_path):
    name, sweep = tiny_sweep
    report = build_report(sweep)
    assert report.sections, f"workload {name!r} registered a report that made no section of an ok result"
    assert report.left_out == [] and report.loaded.problems == []
    written = write_report(report, tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    for section in report.sections:
        assert f" {section.title}\n" in markdown
    expected = {f"{table.name}.csv" for section in report.sections for table in section.tables if table.rows}
    assert expected, f"workload {name!r}: no section has a table"
    assert expected <= {path.name for path in written}
    assert all(path.stat().st_size > 0 for path in written)
