"""`hpml compare`'s headline numbers of quantize, paleo, probe, cuda_vecadd and dataloader results (issue 34): each
value against a number computed here by hand from the raw arrays of hand-made results (the study tests' own), with
its direction; then the real verb on factory-written sweeps of all five and on the committed quantize sweeps, whose
numbers must agree with the study's own committed report; and the committed H100 and H200 time-to-accuracy sweeps'
energy, GPU-hours and cost to target (issue 36)."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from hpml.analysis.compare.metrics import HEADLINES
from tests.conftest import REPO, hpml_here
from tests.factories import envelope, write_result
from tests.factories.dataloader import dataloader_result
from tests.factories.quantize import quantize_result
from tests.test_cuda_vecadd_report import case, full_grid, vecadd_result
from tests.test_paleo_report import N, paleo_doc
from tests.test_probe import cpu_device, h200_device, timed
from tests.test_probe import result as probe_doc

STUDIES = ("quantize", "paleo", "probe", "cuda_vecadd", "dataloader")


def metric(workload: str, name: str):
    return next(m for m in HEADLINES[workload] if m.name == name)


def values(workload: str, doc) -> dict:
    """{metric name: (its value for doc, its better direction)}."""
    return {m.name: (m.value(doc), m.better) for m in HEADLINES[workload]}


# --- quantize ---------------------------------------------------------------------------------------------------

LABELS = [0, 1, 2, 3, 4]


def test_quantize_the_integer_models_accuracy_and_time_and_torch_aos_time():
    doc = quantize_result(0, LABELS, {"integer": [0, 1, 2, 3, 0], "float": [0, 0, 0, 0, 0]},
                          {"integer": [0.3, 0.1, 0.2], "torch_ao_own": [0.01, 0.03, 0.02], "float": [9.0]})
    got = values("quantize", doc)
    assert got["integer-only top-1"] == (pytest.approx(100 * 4 / 5), "higher")  # 4 of 5 labels
    assert got["integer-only held-out pass (median)"] == (pytest.approx(200.0), "lower")  # median 0.2 s
    assert got["torch.ao int8 held-out pass (median)"] == (pytest.approx(20.0), "lower")  # median 0.02 s


def test_quantize_without_the_cross_check_has_no_torch_ao_time():
    doc = quantize_result(0, LABELS, {}, {"integer": [0.5]}, torch_ao=False)
    got = values("quantize", doc)
    assert got["torch.ao int8 held-out pass (median)"][0] is None
    assert got["integer-only top-1"][0] == pytest.approx(100.0) and got["integer-only held-out pass (median)"][0] == 500


# --- paleo ------------------------------------------------------------------------------------------------------


def test_paleo_the_forward_the_layer_sum_and_paleos_prediction_at_the_measured_peaks():
    got = values("paleo", paleo_doc())
    assert got["forward (median)"] == (pytest.approx(42e-3), "lower")  # median of 40, 45, 42 µs
    assert got["sum of the layer times (medians)"] == (pytest.approx((25 + 10 + 15) * 1e-3), "lower")
    # the run's own peaks: 2 x 8192^3 FLOPs in 1.5 ms (median), 2e9 B in 0.5 ms; PPP 1; the three layers' FLOPs
    # and bytes (input + parameters + output)
    tflops, bandwidth = 2 * N ** 3 / 1.5e-3, 2e9 / 0.5e-3
    flops = 10e9 + 0 + 200e6
    nbytes = (1e6 + 2e6 + 3e6) + (3e6 + 0 + 3e6) + (100e3 + 8e6 + 10e3)
    assert got["PALEO forward at the measured peaks"] == (pytest.approx((flops / tflops + nbytes / bandwidth) * 1e3),
                                                          "lower")
    assert got["PALEO forward at the measured peaks"][0] == pytest.approx(18.9427689371258e-3)  # the report's


def test_paleo_on_a_cpu_predicts_from_its_measured_peaks():
    assert values("paleo", paleo_doc(device="cpu", published=None))["PALEO forward at the measured peaks"][0] > 0


# --- probe ------------------------------------------------------------------------------------------------------


def test_probe_the_rates_are_medians_of_the_repetitions_and_the_mean_over_the_gpus():
    other = h200_device(rank=1)
    other["copy"] = timed("bytes_moved", 2e9, [1e-3, 1e-3, 1e-3])  # 2000 GB/s
    got = values("probe", probe_doc([h200_device(), other]))
    # bf16: 2e9 FLOPs in 4, 2.5, 2 µs = 500, 800, 1000 TFLOP/s on both GPUs: median 800
    assert got["matmul bf16 (median)"] == (pytest.approx(2e9 / 2.5e-6 / 1e12), "higher")
    # copy: 2e9 B in 1, 0.5, 0.4 ms = 2000, 4000, 5000 GB/s: median 4000 on rank 0, 2000 on rank 1
    assert got["device copy (median)"] == (pytest.approx((2e9 / 0.5e-3 + 2e9 / 1e-3) / 2 / 1e9), "higher")
    # H2D pinned: 64e6 B in 1.6, 1.25, 1 ms = 40, 51.2, 64 GB/s: median 51.2
    assert got["H2D pinned (median)"] == (pytest.approx(64e6 / 1.25e-3 / 1e9), "higher")


def test_probe_on_a_cpu_has_no_bf16_and_no_host_link():
    got = values("probe", probe_doc([cpu_device()]))
    assert got["matmul bf16 (median)"][0] is None and got["H2D pinned (median)"][0] is None
    assert got["device copy (median)"][0] == pytest.approx(8 / 1e-9 / 1e9)


# --- cuda_vecadd ------------------------------------------------------------------------------------------------


def test_vecadd_the_kernel_and_the_whole_program_at_the_largest_size_and_the_cpu_loop():
    got = values("cuda_vecadd", full_grid())
    # many_blocks, explicit, K = 100 M: 3 x 4 x 1e8 B in the median kernel time 0.3 ms (of 0.31, 0.3, 0.29)
    assert got["kernel bandwidth, many_blocks explicit, largest K"] == (pytest.approx(12e8 / 0.3e-3 / 1e9), "higher")
    # each repetition: alloc 0.1 + h2d 2 + kernel + d2h 1 + free 0.05 ms; the median repetition's kernel 0.3 ms
    assert got["whole program, many_blocks explicit, largest K (median)"] == (pytest.approx(0.1 + 2 + 0.3 + 1 + 0.05),
                                                                              "lower")
    # the CPU loop at 100 M: 12e8 B in the median 0.04 s (of 0.03, 0.04, 0.05)
    assert got["CPU loop bandwidth, largest K"] == (pytest.approx(12e8 / 0.04 / 1e9), "higher")


def test_vecadd_a_cpu_point_has_only_the_cpu_loop():
    doc = vecadd_result(0, [], [case(1_000_000, "cpu", "host", [2e-4], h2d=None),
                                case(2_000_000, "cpu", "host", [4e-4, 5e-4, 6e-4], h2d=None)], gpu=False)
    got = values("cuda_vecadd", doc)
    assert got["kernel bandwidth, many_blocks explicit, largest K"][0] is None
    assert got["whole program, many_blocks explicit, largest K (median)"][0] is None
    assert got["CPU loop bandwidth, largest K"][0] == pytest.approx(12 * 2e6 / 5e-4 / 1e9)


# --- dataloader -------------------------------------------------------------------------------------------------


def test_dataloader_samples_per_second_and_the_first_batch_over_the_timed_epochs():
    doc = dataloader_result(0, [9.0, 2.0, 2.5, 1.6], workers=2, first_batch_s=[0.3, 0.01, 0.02, 0.03])
    got = values("dataloader", doc)
    # epoch 1 is warm-up; 1000 samples in 2.0, 2.5 and 1.6 s: 500, 400, 625 samples/s
    assert got["samples/s (timed epochs)"] == (pytest.approx((500 + 400 + 625) / 3), "higher")
    assert got["first batch (mean)"] == (pytest.approx((10 + 20 + 30) / 3), "lower")


# --- the verb -----------------------------------------------------------------------------------------------------


def probe_result(point: int, devices) -> dict:
    doc = envelope({"name": "probe", "warmup_s": 1.0, "measure_s": 1.0}, point=point, sweep="probe")
    doc["measurements"] = {"devices": devices}
    return doc


def write_side(root: Path, loader_epochs) -> Path:
    """One launch of three repeats of each study (points 0..14); the loader's timed epochs as given per repeat."""
    docs = []
    for repeat in range(3):
        docs += [quantize_result(0, LABELS, {}, {"integer": [0.2 + 0.01 * repeat]}, repeat=repeat),
                 paleo_doc(), probe_result(0, [h200_device()]), full_grid(),
                 dataloader_result(0, [9.0, *loader_epochs[repeat]], workers=2, repeat=repeat)]
    for point, doc in enumerate(docs):
        doc["identity"]["point"] = point
        write_result(root, doc, launch="launch")
    return root / "launch"


def test_compare_of_factory_sweeps_compares_every_study(tmp_path):
    """The candidate's loader is twice as slow, every other result the same: every study has its rows, nothing is
    left 'Not compared', and the loader is worse by the hand-computed ratio."""
    base_epochs = [[1.0, 1.1], [0.9, 1.0], [1.0, 1.0]]
    base = write_side(tmp_path / "base", base_epochs)
    cand = write_side(tmp_path / "cand", [[2 * t for t in epochs] for epochs in base_epochs])
    done = hpml_here(["compare", str(base), str(cand), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Not compared" not in (tmp_path / "out" / "compare.md").read_text()
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare.csv")))
    assert {row["workload"] for row in rows} == set(STUDIES)
    for study in STUDIES:  # every metric these results measure (the CPU loop's, bf16's, ... all of them here)
        assert {row["metric"] for row in rows if row["workload"] == study} == {m.name for m in HEADLINES[study]}
    loader = next(row for row in rows if row["metric"] == "samples/s (timed epochs)")
    rates = [statistics.fmean(1000 / t for t in epochs) for epochs in base_epochs]
    assert float(loader["baseline_mean"]) == pytest.approx(statistics.fmean(rates))
    assert float(loader["ratio"]) == pytest.approx(0.5) and loader["verdict"] == "worse"
    same = next(row for row in rows if row["metric"] == "forward (median)")
    assert float(same["ratio"]) == pytest.approx(1.0) and float(same["baseline_mean"]) == pytest.approx(42e-3)


def test_compare_of_the_committed_quantize_sweeps_agrees_with_their_reports(committed_sweeps, tmp_path):
    """The study's committed runs on one CPU with its own AVX-512 kernels (baseline) and capped at AVX2 (candidate):
    the integer model's top-1 is the stage tables' mean over the 5 seeds, and torch.ao's int8 pass, on x86 against
    qnnpack, is several times slower with AVX2 (5.6 against 26 ms in docs/results/quantization_digits/README.md)."""
    avx512 = committed_sweeps("quantization_digits") / "2026-11-27_02-26-19_quantization_digits"
    avx2 = committed_sweeps("quantization_digits/avx2_kernels") / "2026-11-27_02-27-02_quantization_digits"
    done = hpml_here(["compare", str(avx512), str(avx2), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Not compared" not in (tmp_path / "out" / "compare.md").read_text()
    rows = {row["metric"]: row for row in csv.DictReader(open(tmp_path / "out" / "compare.csv"))}
    assert set(rows) == {m.name for m in HEADLINES["quantize"]}
    reports = REPO / "docs" / "results" / "quantization_digits"
    for side, report in (("baseline_mean", reports / "report"), ("candidate_mean", reports / "avx2_kernels" / "report")):
        stages = {row["stage"]: row for row in csv.DictReader(open(report / "quantize_stages.csv"))}
        assert float(rows["integer-only top-1"][side]) == pytest.approx(float(stages["integer"]["top1_pct_mean"]))
        for name, stage in (("integer-only held-out pass (median)", "integer"),
                            ("torch.ao int8 held-out pass (median)", "torch_ao_own")):
            # the mean of the 5 runs' medians lies within the report's [min, max] of them
            low, high = float(stages[stage]["inference_ms_min"]), float(stages[stage]["inference_ms_max"])
            assert low <= float(rows[name][side]) <= high
    torch_ao = rows["torch.ao int8 held-out pass (median)"]
    assert float(torch_ao["ratio"]) > 3 and torch_ao["verdict"] == "worse"


def compare_committed_tta(committed_sweeps, tmp_path):
    """hpml compare of the committed H100 (baseline) and H200 time-to-accuracy sweeps: (its run, rows by metric)."""
    h100 = committed_sweeps("tta_digits/h100") / "2026-11-23_16-31-43_tta_digits_h100"
    h200 = committed_sweeps("tta_digits/h200") / "2026-11-23_16-29-27_tta_digits_h200"
    done = hpml_here(["compare", str(h100), str(h200), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done, {row["metric"]: row for row in csv.DictReader(open(tmp_path / "out" / "compare.csv"))}


def test_energy_is_a_headline_number_and_agrees_with_the_studys_own_table(committed_sweeps, tmp_path):
    """On the committed H100 and H200 time-to-accuracy sweeps (NVML sidecars packed with them): energy per epoch is
    compared, with the study report's own numbers (docs/results/tta_digits/report/telemetry_energy.csv: 50.47 +-
    5.039 J on the H100, 29.75 +- 3.988 J on the H200), and the H200 is faster to the target, as its table says."""
    done, rows = compare_committed_tta(committed_sweeps, tmp_path)
    energy = rows["energy per timed phase (epoch)"]
    assert float(energy["baseline_mean"]) == pytest.approx(50.47, abs=0.005)
    assert float(energy["candidate_mean"]) == pytest.approx(29.75, abs=0.005)
    assert energy["verdict"] == "better" and rows["time to accuracy"]["verdict"] == "better"
    assert "olympic means 7.725 s vs 3.502 s" in rows["time to accuracy"]["note"]
    assert "GPU NVIDIA H100 80GB HBM3" in done.stdout and "GPU NVIDIA H200" in done.stdout


def test_energy_gpu_hours_and_cost_to_target_are_headline_numbers(committed_sweeps, tmp_path):
    """Issue 36: on the same sweeps, energy, energy per sample and GPU-hours to target are compared the MLPerf way
    (olympic means, the converged fraction), with the time-to-accuracy report's per-run numbers (tests/
    test_energy_to_target.py); no point was launched with a price, so there is no cost row. A result without NVML
    telemetry is left out of the energy rows, never counted as a run that missed the target."""
    _, rows = compare_committed_tta(committed_sweeps, tmp_path)
    energy = rows["energy to target"]
    assert float(energy["baseline_mean"]) == pytest.approx((1338.306 + 1264.151 + 868.315 + 504.43 + 635.22) / 5)
    assert float(energy["candidate_mean"]) == pytest.approx((918.9 + 484.048 + 422.573 + 385.128 + 414.056) / 5)
    assert "converged 5/5 vs 5/5" in energy["note"] and " J vs " in energy["note"]
    assert "energy per sample to target" in rows and "GPU-hours to target" in rows and "cost to target" not in rows

    from hpml.analysis.compare.metrics import TO_TARGET, applies

    h100 = committed_sweeps("tta_digits/h100") / "2026-11-23_16-31-43_tta_digits_h100"
    no_telemetry = {**json.loads((h100 / "points" / "0" / "result.json").read_text()), "telemetry": {
        "status": "unavailable", "reason": "no CUDA device", "interval_ms": 100, "sidecars": []}, "path": "x"}
    assert not applies(TO_TARGET[0], no_telemetry) and applies(TO_TARGET[2], no_telemetry)
