"""workloads/allreduce/: its config (hardware table included), its pure parts, and real runs on CPU:
torchrun with 2 gloo workers, and `hpml launch workload=allreduce` end to end on the local launcher."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from hpml.analysis.allreduce.tables import allreduce_table
from hpml.analysis.results import load_results
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.allreduce import AllreduceConfig
from hpml.contract.result_format import SCHEMA_VERSION
from hpml.workloads.allreduce.__main__ import derive_size, fill_check_pattern, sum_is_correct
from tests.conftest import ALLREDUCE_VS_BARE, launch_stdout

KiB = 1024
TINY = ["workload=allreduce", f"workload.min_bytes={KiB}", f"workload.max_bytes={64 * KiB}",
        "workload.warmup_iters=2", "workload.iters=5"]
TINY_SIZES = [KiB * 2**k for k in range(7)]  # 1 KiB .. 64 KiB


# --- config ------------------------------------------------------------------------------------------


def test_defaults_sweep_kib_to_gib_with_no_link_peak(compose_values):
    cfg = config_from_dict(compose_values(["workload=allreduce"])).workload
    assert isinstance(cfg, AllreduceConfig)
    assert cfg.sizes_bytes[0] == KiB and cfg.sizes_bytes[-1] == 2**30 and len(cfg.sizes_bytes) == 21
    assert (cfg.link, cfg.link_peak_GBps) == ("none", None)


@pytest.mark.parametrize("hardware, peak", [("h200_nvlink", 450.0), ("h100_nvlink", 450.0),
                                            ("a100_nvlink", 300.0), ("pcie_gen5", 64.0)])
def test_the_hardware_group_puts_the_link_peak_into_the_resolved_config(compose_values, hardware, peak):
    values = compose_values(["workload=allreduce", f"hardware={hardware}"])
    assert values["workload"]["link"] == hardware
    assert values["workload"]["link_peak_GBps"] == peak  # the number itself: workers need no table
    assert config_from_dict(values).workload.link_peak_GBps == peak


def test_the_experiment_sweeps_small_sizes_and_takes_a_hardware_choice(compose_values):
    values = compose_values(["experiment=allreduce_bw", "hardware=h200_nvlink", "resources.gpus_per_node=4",
                             "resources.workers_per_node=4"])
    cfg = config_from_dict(values)
    assert values["sweep"]["name"] == "allreduce_bw"
    assert cfg.workload.sizes_bytes == [KiB * 2**k for k in range(11)]  # 1 KiB .. 1 MiB: quick on CPU
    assert cfg.workload.link_peak_GBps == 450.0


@pytest.mark.parametrize("overrides, message", [
    (["workload.max_bytes=3000"], "workload.max_bytes=3000 is not allowed: workload.min_bytes=1024 times a power of 2"),
    (["workload.dtype=bfloat16", "workload.min_bytes=3"], "workload.min_bytes=3 is not allowed: a positive multiple of 2"),
    (["workload.iters=0"], "workload.iters=0 is not allowed"),
    (["workload.link_peak_GBps=100"], "choose the link with hardware=<name>"),
])
def test_bad_values_name_the_field(compose_values, overrides, message):
    values = compose_values(["workload=allreduce"] + overrides)
    with pytest.raises(ConfigValueError, match=message.replace("(", r"\(")):
        config_from_dict(values)


# --- pure parts of the workload -----------------------------------------------------------------------


def contributions(world_size: int, elements: int = 1000, dtype=torch.bfloat16):
    """What each rank puts into the buffer before the correctness all-reduce."""
    parts = [torch.empty(elements, dtype=dtype) for _ in range(world_size)]
    for rank, part in enumerate(parts):
        fill_check_pattern(part, rank, world_size)
    return parts


@pytest.mark.parametrize("world_size", [1, 2, 8, 300])  # 300 > 256: more ones than bfloat16 can count
def test_the_check_pattern_sums_to_exactly_one_in_bfloat16(world_size):
    total = torch.zeros(1000, dtype=torch.bfloat16)
    for part in contributions(world_size):  # summed in bfloat16, one rank after the other, as in a ring
        total += part
    assert sum_is_correct(total)


def test_the_check_catches_a_lost_or_doubled_rank():
    parts = contributions(4)
    assert not sum_is_correct(parts[0] + parts[1] + parts[3])  # rank 2 lost
    assert not sum_is_correct(parts[0] + parts[1] + parts[2] + parts[3] + parts[3])  # rank 3 twice


def test_derived_numbers_of_one_size():
    # 2 ranks, 4 MB, iterations of the slowest rank: 2 ms and 6 ms -> mean 4 ms -> algbw 1 GB/s;
    # busbw = 1 * 2*1/2 = 1 GB/s; against a 2 GB/s link: 0.5
    size = {"bytes": 4_000_000, "iters": 2, "correct": True, "loop_time_s_per_rank": [0.009, 0.009],
            "iteration_time_s_per_rank": [[0.002, 0.001], [0.001, 0.006]]}
    derived = derive_size(size, world_size=2, link_peak_GBps=2.0)
    assert derived["time_s"] == pytest.approx(0.004)
    assert derived["algbw_GBps"] == pytest.approx(1.0)
    assert derived["busbw_GBps"] == pytest.approx(1.0)
    assert derived["utilization"] == pytest.approx(0.5)


# --- real runs ----------------------------------------------------------------------------------------


def write_point_config(values: dict, folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return path


RECORDED_ENV = {"NCCL_MIN_NCHANNELS": "32"}  # an NCCL tuning knob: every NCCL_* variable is kept
UNRECORDED_ENV = {"HPML_TEST_TOKEN": "secret"}  # anything else off the allow-list is not


def run_torchrun(config: Path, workers: int):
    """hpml.workloads.allreduce under torchrun as a user types it (`-m`: a new interpreter a worker; hpml's jobs fork
    them instead, launcher/torchrun.py); returns (result.json, stdout)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(workers),
               "-m", "hpml.workloads.allreduce", "--config", str(config)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **RECORDED_ENV, **UNRECORDED_ENV})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((config.parent / "result.json").read_text()), done.stdout


@pytest.fixture(scope="module")
def torchrun_result(tmp_path_factory, compose_values):
    """hpml.workloads.allreduce under torchrun, 2 gloo workers on CPU, 1 KiB to 64 KiB."""
    values = compose_values(TINY + ["resources.workers_per_node=2"])
    return run_torchrun(write_point_config(values, tmp_path_factory.mktemp("allreduce") / "points" / "0"), 2)


def test_torchrun_run_is_ok_and_correct_at_every_configured_size(torchrun_result):
    result, stdout = torchrun_result
    assert result["schema_version"] == SCHEMA_VERSION and result["status"] == "ok" and result["reason"] is None
    assert result["identity"]["workload"] == "allreduce" and result["identity"]["point"] == 0
    assert result["environment"]["world_size"] == 2 and result["environment"]["backend"] == "gloo"
    assert result["environment"]["env"]["NCCL_MIN_NCHANNELS"] == "32"
    assert "HPML_TEST_TOKEN" not in result["environment"]["env"]
    sizes = result["measurements"]["sizes"]
    assert [s["bytes"] for s in sizes] == TINY_SIZES
    for size in sizes:
        assert size["correct"] is True and size["correct_per_rank"] == [True, True]
        assert size["elements"] == size["bytes"] // 4  # float32
        assert size["iters"] == 5 and size["warmup_iters"] == 2
        assert [len(ranks) for ranks in size["iteration_time_s_per_rank"]] == [5, 5]
        for iterations, loop in zip(size["iteration_time_s_per_rank"], size["loop_time_s_per_rank"]):
            assert 0 < sum(iterations) <= loop  # the iterations lie inside the timed loop
    assert result["derived"]["all_correct"] is True
    assert "perf_counter" in result["timing"]["iteration"]
    assert "busbw GB/s" in stdout and stdout.count(" ok") >= len(TINY_SIZES)


def test_torchrun_run_busbw_recomputed_from_the_raw_arrays(torchrun_result):
    result, _ = torchrun_result
    n = result["environment"]["world_size"]
    for size, derived in zip(result["measurements"]["sizes"], result["derived"]["sizes"]):
        slowest = [max(ranks) for ranks in zip(*size["iteration_time_s_per_rank"])]
        time_s = statistics.fmean(slowest)
        algbw = size["bytes"] / time_s / 1e9
        assert derived["time_s"] == pytest.approx(time_s, rel=1e-12)
        assert derived["algbw_GBps"] == pytest.approx(algbw, rel=1e-12)
        assert derived["busbw_GBps"] == pytest.approx(algbw * 2 * (n - 1) / n, rel=1e-12)
        assert derived["utilization"] is None  # hardware=none: no peak to compare with
    table = allreduce_table([result]).rows
    assert table["busbw_GBps"].tolist() == pytest.approx([d["busbw_GBps"] for d in result["derived"]["sizes"]])


def test_hpml_launch_runs_both_impls_end_to_end(shared_sweep):
    # the allreduce_vs_bare preset cut to TINY's sizes (1..64 KiB), 2 workers, impl=hpml,raw: the sweep this test
    # launched itself until issue 41; one launch per test run, test_allreduce_report.py reports it
    sweep = shared_sweep(*ALLREDUCE_VS_BARE)
    assert "[allreduce_vs_bare] 2/2 done" in launch_stdout(sweep)
    loaded = load_results(sweep)
    assert loaded.problems == [] and len(loaded.rows) == 2
    for doc in loaded.rows:
        assert doc["status"] == "ok" and doc["derived"]["all_correct"] is True
    raw = next(doc for doc in loaded.rows if doc["config"]["workload"]["impl"] == "raw")
    assert all(size["iteration_time_s_per_rank"] is None for size in raw["measurements"]["sizes"])
    assert "iteration" not in raw["timing"]  # raw times only the whole loop
    table = allreduce_table(loaded.rows)
    assert table.skipped == []
    assert len(table.rows) == 2 * len(TINY_SIZES)
    assert sorted(table.rows["impl"].unique()) == ["hpml", "raw"]
    assert (table.rows["busbw_GBps"] == table.rows["algbw_GBps"]).all()  # n = 2: factor 2(n-1)/n = 1
    assert (table.rows["busbw_GBps"] > 0).all()


def test_an_unknown_hardware_name_fails_before_anything_runs(hpml, tmp_path):
    done = hpml("launch", "workload=allreduce", "hardware=nope")
    assert done.returncode != 0
    assert "hardware/nope" in done.stderr
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
@pytest.mark.parametrize("impl", ["hpml", "raw"])
def test_nccl_on_two_gpus_is_correct_and_compared_with_the_link_peak(tmp_path, compose_values, impl):
    values = compose_values(["workload=allreduce", "workload.max_bytes=67108864", "hardware=h200_nvlink",
                             f"workload.impl={impl}", "resources.gpus_per_node=2",
                             "resources.workers_per_node=2"])
    result, _ = run_torchrun(write_point_config(values, tmp_path / "points" / "0"), 2)
    assert result["status"] == "ok" and result["derived"]["all_correct"] is True
    assert result["environment"]["backend"] == "nccl" and result["environment"]["device"] == "cuda"
    if impl == "hpml":
        assert "CUDA events" in result["timing"]["iteration"]
    row = allreduce_table([result]).rows.iloc[-1]  # 64 MiB: bandwidth-bound
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"])  # n = 2
    assert 0 < row["utilization"] == pytest.approx(row["busbw_GBps"] / 450.0)
