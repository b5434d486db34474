"""The hardware probe on the CPU: its config's rules (one line each), the measuring functions at small sizes,
and the worker's and the report's numbers from hand-made results against hand-computed values. The tiny preset
runs end to end in tests/test_study_contract.py; the GPU paths in tests/test_probe_gpu.py."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from hpml.analysis.probe import sections
from hpml.analysis.probe.tables import peak_rows, reference_rows
from hpml.analysis.results import WorkloadResults
from hpml.conf.hardware.gpu_peaks import PEAKS
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.probe import MATMUL_DTYPES
from hpml.workloads.common import device_peaks
from hpml.workloads.probe.__main__ import derive_device, summary_lines

CPU = torch.device("cpu")


# --- the config ----------------------------------------------------------------------------------------------

def test_the_study_preset_measures_every_dtype_on_one_gpu(compose_values):
    config = config_from_dict(compose_values(["experiment=probe", "resources.gpus_per_node=1"]))
    assert config.workload.matmul_dtypes == ["fp32", "tf32", "bf16", "fp16"] == list(MATMUL_DTYPES)
    assert (config.workload.warmup_s, config.workload.measure_s) == (1.0, 1.0)
    assert config.resources.workers_per_node == config.resources.gpus_per_node == 1
    assert tuple(MATMUL_DTYPES) == device_peaks.MATMUL_DTYPES  # the schema and the measuring side agree


@pytest.mark.parametrize("overrides, message", [
    (["workload.matmul_dtypes=[fp64]"],
     "workload.matmul_dtypes=['fp64'] is not allowed: a list of distinct values from fp32, tf32, bf16, fp16"),
    (["workload.matmul_dtypes=[bf16,bf16]"], "workload.matmul_dtypes=['bf16', 'bf16'] is not allowed"),
    (["workload.matmul_dtypes=[]"], "workload.matmul_dtypes=[] is not allowed"),
    (["workload.copy_bytes=6"], "workload.copy_bytes=6 is not allowed: a positive multiple of 4 bytes"),
    (["workload.reps=0"], "workload.reps=0 is not allowed: an integer >= 1"),
    (["workload.measure_s=-1"], "workload.measure_s=-1.0 is not allowed: a number of seconds >= 0"),
    (["workload.matmul_dtypes=[tf32]"],
     "workload.matmul_dtypes=['tf32'] is not allowed: no tf32 on the CPU (TF32 is a mode of NVIDIA tensor cores)"),
    (["resources.gpus_per_node=4", "resources.workers_per_node=1"],
     "resources.workers_per_node=1 is not allowed: resources.gpus_per_node=4 (the probe measures every GPU"),
])
def test_bad_values_name_the_field(compose_values, overrides, message):
    values = compose_values(["workload=probe"] + overrides)
    with pytest.raises(ConfigValueError) as caught:
        config_from_dict(values)
    assert str(caught.value).startswith(message)


def test_a_bad_value_is_one_error_line_before_anything_is_written(hpml, tmp_path):
    done = hpml("launch", "experiment=tiny/probe", "workload.matmul_dtypes=[fp32,tf32]")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "hpml: error: workload.matmul_dtypes=['fp32', 'tf32'] is not allowed: no tf32 on the CPU (TF32 is a mode "
        "of NVIDIA tensor cores)"]
    assert not (tmp_path / "sweeps").exists()


# --- the measuring functions, on the CPU -------------------------------------------------------------------

@pytest.mark.parametrize("set_bytes, l2_bytes, sets", [
    (4 * 2 ** 20, 50 * 2 ** 20, 25),   # 4 MiB sets, 50 MiB L2: 2 x 50 / 4
    (3 * 2 ** 20, 50 * 2 ** 20, 34),   # ceil(100 / 3)
    (50 * 2 ** 20, 50 * 2 ** 20, 1),   # a set as large as the L2 is read from memory anyway
    (2 ** 10, 50 * 2 ** 20, 64),       # bounded: tiny matrices stay in L2 whatever we do
    (2 ** 10, 0, 1),                   # the CPU: no rotation
])
def test_input_sets_rotate_over_twice_the_l2(set_bytes, l2_bytes, sets):
    assert device_peaks.input_sets_for(set_bytes, l2_bytes) == sets


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_matmul_records_one_time_per_repetition_and_2n3_flops(dtype):
    record = device_peaks.matmul_times(CPU, 32, dtype, warmup=1, reps=4)
    assert (record["n"], record["dtype"], record["flops"], record["input_sets"]) == (32, dtype, 65536, 1)
    assert len(record["times_s"]) == 4 and min(record["times_s"]) > 0
    reference = device_peaks.matmul_reference_times(CPU, 32, dtype, calls=3, samples=2, warmup=1)
    assert (reference["calls_per_sample"], len(reference["times_s"]), reference["flops"]) == (3, 2, 65536)


def test_paired_rounds_alternate_the_probe_and_the_reference_for_their_seconds():
    paired = device_peaks.matmul_paired_times(CPU, 16, "fp32", calls=4, rounds=2, warmup=1)
    assert (len(paired["probe"]["times_s"]), len(paired["reference"]["times_s"])) == (8, 2)
    assert paired["reference"]["calls_per_sample"] == 4 and paired["probe"]["flops"] == 2 * 16 ** 3
    assert paired["probe"]["method"].endswith(device_peaks.PAIRED_NOTE)
    # a round of 16 x 16 products takes microseconds: 20 ms of them are many rounds, not the 1 asked for
    timed = device_peaks.matmul_paired_times(CPU, 16, "fp32", calls=4, rounds=1, warmup=0, measure_s=0.02)
    assert len(timed["probe"]["times_s"]) == 4 * len(timed["reference"]["times_s"]) > 4
    longer = device_peaks.matmul_reference_times(CPU, 16, "fp32", calls=2, samples=1, warmup=0, measure_s=0.02)
    assert len(longer["times_s"]) > 1


def test_timing_goes_on_in_rounds_of_reps_until_measure_s_has_passed():
    steps = []
    times = device_peaks.time_repetitions(steps.append, CPU, warmup=2, reps=3, measure_s=0.01)
    assert len(times) % 3 == 0 and len(times) >= 3 and math.fsum(times) > 0
    assert steps[:2] == [0, 1] and steps == list(range(len(steps)))  # the warm-up first, each index once
    assert len(steps) == 2 + len(times)


def test_the_warm_up_runs_for_its_seconds_even_past_its_repetitions():
    ran = device_peaks.warm_up(lambda i: None, CPU, warmup=1, warmup_s=0.02)
    assert ran > 1


def test_fp32_turns_tf32_off_and_the_setting_before_comes_back():
    torch.set_float32_matmul_precision("high")
    try:
        with device_peaks.float32_matmul_precision("fp32"):
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


def test_copy_and_triad_count_the_bytes_they_move():
    copied = device_peaks.copy_times(CPU, 4096, warmup=1, reps=2)
    assert (copied["buffer_bytes"], copied["bytes_moved"], len(copied["times_s"])) == (4096, 8192, 2)
    triad = device_peaks.triad_times(CPU, 4096, warmup=1, reps=2)
    assert (triad["array_bytes"], triad["bytes_moved"]) == (4096, 12288)


def test_triad_computes_b_plus_s_times_c():
    b, c = torch.tensor([1.0, 2.0]), torch.tensor([10.0, -1.0])
    a = torch.empty(2)
    device_peaks.triad(a, b, c)
    assert a.tolist() == [31.0, -1.0]  # s = 3


@pytest.mark.parametrize("call, message", [
    (lambda: device_peaks.matmul_times(CPU, 8, "tf32", 0, 1), "no tf32 matmul on the CPU"),
    (lambda: device_peaks.matmul_times(CPU, 8, "fp64", 0, 1), "matmul dtype must be one of fp32, tf32, bf16, fp16"),
    (lambda: device_peaks.copy_times(CPU, 6, 0, 1), "nbytes must be a positive multiple of 4"),
    (lambda: device_peaks.transfer_times(CPU, 8, "h2d", True, 0, 1), "host transfers need a CUDA device"),
    (lambda: device_peaks.copy_times(CPU, 8, 0, 0), "reps must be >= 1, got 0"),
    (lambda: device_peaks.matmul_paired_times(CPU, 8, "fp32", 0, 1, 0), "calls must be >= 1, got 0"),
    (lambda: device_peaks.matmul_reference_times(CPU, 8, "fp32", 1, 0, 0), "samples must be >= 1, got 0"),
])
def test_what_cannot_be_measured_says_why(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- hand-made results: the worker's derived numbers and the report's -----------------------------------------

def timed(work_key, work, times):
    return {work_key: work, "times_s": times, "method": "hand-made"}


def h200_device(rank=0):
    """bf16: 2e9 FLOPs in 4, 2.5, 2 µs = 500, 800, 1000 TFLOP/s; torch.matmul 2.6 µs = 769.2 (ratio 1.04).
    fp16: the same probe, torch.matmul 2.65 µs = 754.7 (ratio 1.06). copy: 2e9 B in 1, 0.5, 0.4 ms = 2000,
    4000, 5000 GB/s. triad: 3e9 B in 1 ms = 3000 GB/s. H2D pinned: 64e6 B in 1.6, 1.25, 1 ms = 40, 51.2, 64 GB/s;
    D2H pageable 64e6 B in 8 ms = 8 GB/s."""
    probe = {"n": 1000, **timed("flops", 2e9, [4e-6, 2.5e-6, 2e-6])}
    return {
        "rank": rank, "device": {"type": "cuda", "name": "NVIDIA H200"}, "published": PEAKS["h200_sxm"].as_record(),
        "matmul": {"bf16": {"probe": probe, "reference": timed("flops", 2e9, [2.6e-6] * 3)},
                   "fp16": {"probe": probe, "reference": timed("flops", 2e9, [2.65e-6] * 3)}},
        "copy": timed("bytes_moved", 2e9, [1e-3, 5e-4, 4e-4]),
        "triad": timed("bytes_moved", 3e9, [1e-3]),
        "transfers": [{"direction": "h2d", "pinned": True, **timed("bytes_moved", 64e6, [1.6e-3, 1.25e-3, 1e-3])},
                      {"direction": "d2h", "pinned": False, **timed("bytes_moved", 64e6, [8e-3])}],
    }


def k80_device():
    """One GK210 of a K80 board: fp32 2e9 FLOPs in 1 ms = 2 TFLOP/s of 8.73 / 2; copy 2e9 B in 10 ms = 200 GB/s
    of 480 / 2."""
    return {"rank": 0, "device": {"type": "cuda", "name": "Tesla K80"}, "published": PEAKS["k80"].as_record(),
            "matmul": {"fp32": {"probe": {"n": 1000, **timed("flops", 2e9, [1e-3])},
                                "reference": timed("flops", 2e9, [1e-3])}},
            "copy": timed("bytes_moved", 2e9, [1e-2]), "triad": timed("bytes_moved", 3e9, [1e-2]), "transfers": None}


def cpu_device():
    return {"rank": 0, "device": {"type": "cpu", "name": "CPU (x86_64)"}, "published": None,
            "matmul": {"fp32": {"probe": {"n": 10, **timed("flops", 2000, [1e-6])},
                                "reference": timed("flops", 2000, [1e-6])}},
            "copy": timed("bytes_moved", 8, [1e-9]), "triad": timed("bytes_moved", 12, [1e-9]), "transfers": None}


def result(devices, point=0, warmup_s=1.0, measure_s=1.0):
    return {"identity": {"sweep": "hand", "point": point, "repeat": 0, "seed": 0, "workload": "probe"},
            "status": "ok", "reason": None, "path": f"hand/points/{point}/result.json",
            "config": {"workload": {"name": "probe", "warmup_s": warmup_s, "measure_s": measure_s}},
            "measurements": {"devices": devices}}


def by_quantity(rows):
    return {row["quantity"]: row for row in rows}


def test_the_report_recomputes_rates_and_shares_of_peak_from_the_raw_times():
    rows = by_quantity(peak_rows(result([h200_device()])))
    bf16 = rows["matmul bf16 (n=1000)"]
    assert (bf16["unit"], bf16["n"], bf16["peak"]) == ("TFLOP/s", 3, 989.5)
    assert (bf16["median"], bf16["min"], bf16["max"]) == pytest.approx((800, 500, 1000))
    assert bf16["of_peak"] == pytest.approx(800 / 989.5)  # 0.8085
    copy_row, triad = rows["memory copy"], rows["memory triad"]
    assert (copy_row["median"], copy_row["min"], copy_row["max"]) == pytest.approx((4000, 2000, 5000))
    assert copy_row["of_peak"] == pytest.approx(4000 / 4800) and triad["of_peak"] == pytest.approx(3000 / 4800)
    assert rows["H2D pinned"]["median"] == pytest.approx(51.2) and rows["H2D pinned"]["of_peak"] == pytest.approx(0.8)
    assert rows["D2H pageable"]["median"] == pytest.approx(8) and rows["D2H pageable"]["of_peak"] == pytest.approx(0.125)
    assert "H2D pageable" not in rows  # only what was measured


def test_the_probe_against_torch_matmul_and_the_5_percent_bar():
    checks = {row["dtype"]: row for row in reference_rows(result([h200_device()]))}
    assert checks["bf16"]["probe_tflops"] == pytest.approx(800)
    assert checks["bf16"]["reference_tflops"] == pytest.approx(2e9 / 2.6e-6 / 1e12)  # 769.2
    assert checks["bf16"]["ratio"] == pytest.approx(1.04) and checks["bf16"]["within_bar"]
    assert checks["fp16"]["ratio"] == pytest.approx(1.06) and not checks["fp16"]["within_bar"]


def test_a_k80_device_is_compared_with_half_the_boards_peaks():
    rows = by_quantity(peak_rows(result([k80_device()])))
    assert rows["matmul fp32 (n=1000)"]["peak"] == pytest.approx(4.365)
    assert rows["matmul fp32 (n=1000)"]["of_peak"] == pytest.approx(2 / 4.365)  # 0.458
    assert rows["memory copy"]["peak"] == 240 and rows["memory copy"]["of_peak"] == pytest.approx(200 / 240)


def test_without_published_peaks_the_share_is_empty_not_zero():
    rows = peak_rows(result([cpu_device()]))
    assert [row["quantity"] for row in rows] == ["matmul fp32 (n=10)", "memory copy", "memory triad"]
    assert all(math.isnan(row["peak"]) and math.isnan(row["of_peak"]) for row in rows)
    assert rows[0]["median"] == pytest.approx(2000 / 1e-6 / 1e12)  # 0.002 TFLOP/s


def test_the_workers_derived_block_agrees_with_the_report():
    derived = derive_device(h200_device())
    assert derived["published_key"] == "h200_sxm"
    assert derived["matmul"]["bf16"]["tflops"] == pytest.approx(800)
    assert derived["matmul"]["bf16"]["probe_over_reference"] == pytest.approx(1.04)
    assert derived["matmul"]["bf16"]["of_peak"] == pytest.approx(800 / 989.5)
    assert derived["memory"]["copy"]["GBps"] == pytest.approx(4000)
    assert [t["of_peak"] for t in derived["transfers"]] == pytest.approx([0.8, 0.125])
    assert derive_device(k80_device())["matmul"]["fp32"]["of_peak"] == pytest.approx(2 / 4.365)
    cpu = derive_device(cpu_device())
    assert cpu["matmul"]["fp32"]["of_peak"] is None and cpu["transfers"] is None
    lines = summary_lines(derived)
    assert lines[0] == "[rank 0] NVIDIA H200: published peaks h200_sxm"
    assert "800.00 TFLOP/s   (81%)" in lines[1] and "probe / reference 1.040" in lines[1]


def test_the_sections_show_each_gpu_and_the_check():
    results = WorkloadResults("probe", [result([h200_device(0), h200_device(1)]),
                                        result([k80_device()], point=1, warmup_s=0.0, measure_s=0.0)])
    out = sections(results)
    titles = [section.title for section in out]
    assert titles == ["hand · hardware probe: measured vs published peaks",
                      "point 0, rank 0: NVIDIA H200 (published: h200_sxm; warm-up ≥ 1 s, timed ≥ 1 s)",
                      "point 0, rank 1: NVIDIA H200 (published: h200_sxm; warm-up ≥ 1 s, timed ≥ 1 s)",
                      "point 1, rank 0: Tesla K80 (published: k80; warm-up ≥ 0 s, timed ≥ 0 s)",
                      "Matmul timing check: probe vs plain torch.matmul"]
    bf16 = out[1].tables[0].rows[0]
    assert bf16 == ["matmul bf16 (n=1000)", "TFLOP/s", "800.0 [500.0, 1000.0] (n=3)", "989.5", "80.8%"]
    check = out[-1].tables[0].rows
    assert check[0] == [0, 0, "NVIDIA H200", "warm-up ≥ 1 s, timed ≥ 1 s", "bf16", "800.0", "769.2", "1.040", "yes"]
    assert check[1][-2:] == ["1.060", "NO"]
    assert results.unreadable == []


def test_a_result_without_the_windows_reads_as_counted_in_repetitions():
    doc = result([h200_device()])
    del doc["config"]["workload"]["warmup_s"], doc["config"]["workload"]["measure_s"]
    assert "windows counted in repetitions only" in sections(WorkloadResults("probe", [doc]))[1].title


def test_a_result_with_a_zero_time_is_listed_not_tabulated():
    broken = result([h200_device()], point=1)
    broken["measurements"]["devices"][0]["copy"]["times_s"] = [0.0]
    results = WorkloadResults("probe", [result([h200_device()]), copy.deepcopy(broken)])
    out = sections(results)
    assert [why for _, why in results.unreadable] == [
        "unreadable probe measurements (ValueError: seconds must be > 0, got 0.0)"]
    assert [s.title for s in out if s.title.startswith("point")] == [
        "point 0, rank 0: NVIDIA H200 (published: h200_sxm; warm-up ≥ 1 s, timed ≥ 1 s)"]
    assert {row[0] for row in out[-1].tables[0].rows} == {0}  # the check table leaves the unreadable one out too
