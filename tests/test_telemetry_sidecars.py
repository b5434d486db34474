"""GPU telemetry sidecars as the report reads them (analysis/telemetry/series.py, points.py): a damaged,
oversized, misplaced or twice-named sidecar is one line, never a crash or twice the energy; two nodes' sidecars
share one clock and the energy needs both; the workers' writer and this reader agree on every number; a result
whose telemetry block is not ok opens none. The numbers themselves: tests/test_telemetry_report.py."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from hpml.analysis.telemetry.series import SIDECAR_JSON_LIMIT, SidecarError, load_sidecar
from hpml.analysis.telemetry.stats import timed_energy
from hpml.contract.result_schema import validate_result
from hpml.contract.telemetry_format import sidecar_name
from tests.factories.telemetry import (
    PHASES,
    SERIES_A,
    UUID_A,
    UUID_B,
    columns,
    ok_block,
    read_csv,
    render,
    result_with,
    sidecar_doc,
    write_sidecar,
)


@pytest.mark.parametrize("damage, message", [
    # mtime=0: the gzip bytes are part of the test ids, which pytest-xdist workers must collect identically
    (None, "missing (result.json's telemetry block names it)"),
    (b"not gzip at all", "not a complete gzip file"),
    ("cut", "not a complete gzip file"),
    (gzip.compress(b'{"telemetry_version": 1, "gpus": [', mtime=0), "truncated JSON"),
    (gzip.compress(json.dumps({"telemetry_version": 99}).encode(), mtime=0), "telemetry_version 99 is not supported"),
    ("unequal", "columns of different lengths [3, 4]"),
    ("string", "samples.aaaa-0000.util_gpu: expected numbers or null, found a string"),
    # a phase that ends before it starts (a negative timed time, a window that fell back to every sample), an
    # energy that cannot be one: refused, never printed as -80 J or nan
    ("backwards", "phases[1].end_s: expected a time >= its start_s=2.5"),
    ("negative energy", "phases[1].energy_j: expected an object of joules >= 0"),
    ("nan energy", "phases[1].energy_j: expected an object of joules >= 0"),
])
def test_a_damaged_sidecar_is_one_line_never_a_crash(tmp_path, damage, message):
    row = result_with(tmp_path, 0, ok_block())
    path = Path(row["path"]).parent / sidecar_name(0)
    good = gzip.compress(json.dumps(sidecar_doc({UUID_A: columns(4, **SERIES_A)})).encode())
    if damage == "cut":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "unequal":
        write_sidecar(path.parent, sidecar_doc({UUID_A: columns(4, **dict(SERIES_A, util_gpu=[1, 2, 3]))}))
    elif damage == "string":
        write_sidecar(path.parent, sidecar_doc({UUID_A: columns(4, **dict(SERIES_A, util_gpu=[1, "2", 3, 4]))}))
    elif damage in ("backwards", "negative energy", "nan energy"):
        phases = json.loads(json.dumps(PHASES))
        if damage == "backwards":
            phases[1]["start_s"] = 2.5
        else:
            phases[1]["energy_j"][UUID_A] = -80.0 if damage == "negative energy" else float("nan")
        write_sidecar(path.parent, sidecar_doc({UUID_A: columns(4, **SERIES_A)}, phases))
    elif damage is not None:
        path.write_bytes(damage)
    markdown, written = render([row], tmp_path / "out")
    problem = [line for line in markdown.splitlines() if line.startswith(f"- `{path}`")]
    assert len(problem) == 1 and message in problem[0], markdown
    assert "\n" not in problem[0] and written == []


def test_a_sidecar_that_decompresses_past_the_limit_is_refused(tmp_path, monkeypatch):
    """A small file that inflates past the limit (a gzip bomb, or a damaged file) is refused unread."""
    monkeypatch.setattr("hpml.analysis.telemetry.series.SIDECAR_JSON_LIMIT", 1024 * 1024)
    n = 200_000  # ~2.6 MB of JSON, ~10 kB gzip'd
    path = write_sidecar(tmp_path, sidecar_doc({UUID_A: columns(n, util_gpu=[50] * n)}))
    assert path.stat().st_size < 1024 * 1024
    with pytest.raises(SidecarError, match="^over 1 MiB once decompressed; refused$"):
        load_sidecar(path)
    assert SIDECAR_JSON_LIMIT == 2 ** 30


def test_a_sidecar_name_outside_the_point_folder_is_refused(tmp_path):
    row = result_with(tmp_path, 0, dict(ok_block(), sidecars=["../../secret.json.gz"]))
    markdown, _ = render([row], tmp_path / "out")
    assert "telemetry.sidecars is not a list of file names in the point's folder" in markdown


def test_a_sidecar_named_twice_is_a_problem_not_twice_the_energy(tmp_path):
    block = {**ok_block(), "sidecars": [sidecar_name(0), sidecar_name(0)]}
    row = result_with(tmp_path, 0, block)
    write_sidecar(Path(row["path"]).parent, sidecar_doc({UUID_A: columns(4, **SERIES_A)}))
    errors = validate_result(row)
    assert len(errors) == 1 and errors[0].startswith("telemetry.sidecars: a name listed twice (")


def test_two_nodes_share_one_clock_and_the_energy_needs_both(tmp_path):
    row = result_with(tmp_path, 0, ok_block(nodes=2))
    folder = Path(row["path"]).parent
    write_sidecar(folder, sidecar_doc({UUID_A: columns(4, **SERIES_A)}), 0)
    node1 = sidecar_doc({UUID_B: columns(4, **SERIES_A)}, node_rank=1, host="node1", t0=1002.5)
    write_sidecar(folder, node1, 1)
    markdown, _ = render([row], tmp_path / "out1")
    (point,) = read_csv(tmp_path / "out1" / "telemetry_energy.csv")
    assert float(point["energy_j"]) == 800.0 and float(point["energy_per_sample_j"]) == 0.4  # (420 + 380) / 2000
    assert "node1 cuda:0" in markdown

    (folder / sidecar_name(1)).unlink()
    markdown, _ = render([row], tmp_path / "out2")
    (point,) = read_csv(tmp_path / "out2" / "telemetry_energy.csv")
    assert point["energy_j"] == "" and point["energy_per_sample_j"] == ""  # node 1's GPU unknown: no total
    assert "| 1 (1 of 2 nodes read) |" in markdown
    assert f"- `{folder / sidecar_name(1)}`: missing" in markdown


def test_a_sidecar_written_by_the_workers_writer_reads_back(tmp_path):
    """The contract from both sides: workloads/common/telemetry's writer (rounding, compact JSON, atomic
    write) and this reader agree on every number."""
    from hpml.workloads.common.telemetry.sidecar import sidecar_document
    from hpml.workloads.common.telemetry.sidecar import write_sidecar as workers_write

    a = columns(4, **dict(SERIES_A, power_w=[400.0004, 100.0, 200.0, 300.0]))
    gpus = sidecar_doc({UUID_A: a})["gpus"]
    doc = sidecar_document(host="gpu-7", node_rank=0, interval_ms=100, t0_unix=1.7e9, decimation=2, gpus=gpus,
                           samples={UUID_A: a}, phases=PHASES, sampler={"ticks": 4})
    sidecar = load_sidecar(workers_write(tmp_path, doc))
    assert (sidecar.host, sidecar.period_ms, [p.timed for p in sidecar.phases]) == ("gpu-7", 200.0, [False, True, True])
    (gpu,) = sidecar.gpus
    assert np.array_equal(gpu.columns["util_mem"], [90, 20, 30, np.nan], equal_nan=True)
    assert gpu.columns["power_w"][0] == 400.0  # the writer keeps mW: 400.0004 -> 400.0
    assert timed_energy(sidecar.phases, UUID_A) == 420.0


def test_report_without_any_telemetry_reads_no_sidecar(tmp_path, monkeypatch):
    """A result whose block is not ok never opens a file, even one named beside it."""
    row = result_with(tmp_path, 0, dict(ok_block(), status="unavailable", reason="no CUDA device"))
    monkeypatch.setattr("hpml.analysis.telemetry.points.load_sidecar", lambda path: pytest.fail("read a sidecar"))
    assert "GPU telemetry unavailable for 1 result(s): no CUDA device" in render([row], tmp_path / "out")[0]
