"""contract/: the rules the launcher, the workloads and the analysis share, against hand-computed values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpml.contract.collectives import algbw_GBps, bus_factor, busbw_GBps
from hpml.contract.jsonio import read_json, utc_now, write_json_atomic
from hpml.contract.result_format import MAX_REASON_CHARS, reason_line, timed_epoch_indices, timed_values
from hpml.contract.sweep_layout import point_dir, point_number


@pytest.mark.parametrize("collective, n, factor", [
    ("all_reduce", 1, 0.0), ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
    ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("all_to_all", 2, 0.5),
    ("broadcast", 4, 1.0), ("reduce", 1, 1.0),  # nccl-tests' broadcast.cu / reduce.cu: factor 1 always
])
def test_bus_factor_is_nccl_tests_one(collective, n, factor):
    assert bus_factor(collective, n) == pytest.approx(factor)


def test_busbw_of_one_gib_all_reduce_on_four_ranks():
    # 1 GiB in 5 ms: algbw = 1073741824 / 0.005 / 1e9 = 214.748 GB/s; busbw = x 2*3/4 = 322.123 GB/s
    assert algbw_GBps(2**30, 0.005) == pytest.approx(214.7483648)
    assert busbw_GBps("all_reduce", 2**30, 0.005, 4) == pytest.approx(322.1225472)


@pytest.mark.parametrize("call", [lambda: bus_factor("all_reduce", 0), lambda: bus_factor("allreduce", 2),
                                  lambda: algbw_GBps(1, 0.0)])
def test_collectives_refuse_nonsense(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("epochs, cold, timed", [
    (3, None, [1, 2]),            # results before cold_epochs existed: epoch 1 only
    (5, [0, 3], [1, 2, 4]),       # resumed from a checkpoint before epoch 4
    (3, [0, 1, 2], [1, 2]),       # every epoch cold: only epoch 1 dropped, so a time remains
    (2, [], [1]),                 # an empty list is "not recorded": epoch 1 stays cold
])
def test_timed_epochs(epochs, cold, timed):
    assert timed_epoch_indices(epochs, cold) == timed


def test_timed_values_picks_the_timed_epochs_of_a_list():
    measurements = {"epoch_time_s": [9.0, 2.0, 8.0, 2.2], "cold_epochs": [0, 2]}
    assert timed_values(["a", "b", "c", "d"], measurements) == ["b", "d"]


def test_point_layout():
    assert point_dir("/s", 7) == Path("/s/points/7")
    assert point_number(Path("/s/points/12")) == 12
    assert point_number(Path("/s/elsewhere")) is None


def test_atomic_write_round_trip_leaves_no_temporary_file(tmp_path):
    path = write_json_atomic(tmp_path / "a" / "doc.json", {"x": [1, 2.5], "when": utc_now()})
    assert read_json(path)["x"] == [1, 2.5]
    assert os.listdir(path.parent) == ["doc.json"]
    assert utc_now().endswith("+00:00")


def test_read_json_of_absent_or_broken_file_is_none(tmp_path):
    (tmp_path / "half.json").write_text('{"x": ')
    assert read_json(tmp_path / "half.json") is None
    assert read_json(tmp_path / "absent.json") is None


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = write_json_atomic(tmp_path / "doc.json", {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"v": object.__new__(type("Unserialisable", (), {"__str__": None}))})
    assert json.loads(path.read_text()) == {"v": 1}
    assert os.listdir(tmp_path) == ["doc.json"]


def test_contract_imports_only_the_standard_library():
    code = ("import sys, hpml.contract.collectives, hpml.contract.jsonio, hpml.contract.result_format, "
            "hpml.contract.result_schema, hpml.contract.sweep_layout; "
            "bad = [m for m in sys.modules if m.removeprefix('hpml.').split('.')[0] in "
            "('conf', 'launcher', 'workloads', 'analysis', 'torch', 'pandas', 'omegaconf', 'hydra')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_reason_is_its_first_line_cut_to_the_limit():
    assert reason_line("\n  RuntimeError: boom\n  at frame 3\n") == "RuntimeError: boom"
    long = reason_line("x" * 1000)
    assert len(long) == MAX_REASON_CHARS == 400 and long.endswith("...")
    assert reason_line("") == ""
