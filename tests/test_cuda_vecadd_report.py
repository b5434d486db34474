"""The cuda_vecadd part of `hpml report` (analysis/cuda_vecadd/) from hand-made results: the tables per memory
mode with totals, parts and bandwidths recomputed from the raw arrays (never from `derived`), the CPU and copy
tables, the two log-log charts, and a result whose measurements cannot be read listed instead of a crash."""

from __future__ import annotations

import csv
from typing import Any, Dict, List, Optional

import pytest

from hpml.analysis.cuda_vecadd.sections import ms_text, version_line
from hpml.analysis.report import main as report_main
from tests.factories import envelope, write_result

H200_PEAK = {"key": "h200_sxm", "name": "NVIDIA H200 SXM 141GB", "memory_GBps": 4800.0, "source": "datasheet",
             "match": ["H200"], "tflops": {}, "host_link_GBps": 64.0, "devices_per_board": 1}
BUILD = {"path": "nvcc", "compiler": "/usr/local/bin/nvcc", "flags": ["-O3", "-arch=sm_90", "-std=c++17"],
         "compiler_version": "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88",
         "arch": "sm_90", "cache_key": "ab" * 32, "cache_dir": "/c", "cache_hit": True, "compile_s": 0.0,
         "lock_wait_s": 0.0}
CPU_BUILD = {**BUILD, "path": "host-cxx", "compiler": "/usr/bin/c++", "compiler_version": "c++ (Debian) 12.2.0",
             "flags": ["-O3", "-std=c++17"], "arch": "x86_64", "cache_hit": False, "compile_s": 1.25}


def case(elements: int, shape: str, memory: str, kernel: List[float], alloc: float = 1e-4, h2d: Optional[float] = 2e-3,
         d2h: float = 1e-3, free: float = 5e-5, resident: Optional[List[float]] = None,
         mismatches: int = 0) -> Dict[str, Any]:
    """A case with these per-repetition kernel times and constant other parts (seconds)."""
    n = len(kernel)
    return {"elements": elements, "shape": shape, "memory": memory, "repetitions": n, "warmup": 1, "blocks": 1,
            "threads_per_block": 256, "alloc_s": [alloc] * n, "fill_s": None if memory == "explicit" else [0.1] * n,
            "h2d_s": None if h2d is None else [h2d] * n, "kernel_s": kernel, "kernel_resident_s": resident,
            "d2h_s": [d2h] * n, "free_s": [free] * n, "mismatches": [mismatches] + [0] * (n - 1)}


def vecadd_result(point: int, gpu_cases: List[Dict[str, Any]], cpu_cases: List[Dict[str, Any]], *,
                  copies: Optional[List[Dict[str, Any]]] = None, peak: Optional[Dict[str, Any]] = H200_PEAK,
                  sweep: str = "vecadd", gpu: bool = True) -> Dict[str, Any]:
    workload = {"name": "cuda_vecadd", "device": "auto", "backend": "gloo", "sizes_m": [1, 100],
                "shapes": ["one_thread", "one_block", "many_blocks"], "memory": ["explicit", "managed", "prefetch"],
                "cpu_baseline": True, "repetitions": 3, "one_thread_repetitions": 1, "warmup": 1, "build": "auto"}
    doc = envelope(workload, point=point, sweep=sweep, gpus_per_node=1 if gpu else 0)
    doc["measurements"] = {
        "gpu": {"build": BUILD, "device": {"name": "NVIDIA H200", "compute_capability": "9.0"}, "peak": peak,
                "copies": copies or [], "cases": gpu_cases, "program_wall_s": 21.5} if gpu else None,
        "cpu": {"build": CPU_BUILD, "cases": cpu_cases, "program_wall_s": 3.25},
    }
    doc["derived"] = {"cases": [{"kernel_GBps": 1e9}]}  # wrong on purpose: the analysis must recompute
    return doc


def full_grid() -> Dict[str, Any]:
    """K = 1 and 100 M, three shapes, three modes: the many_blocks explicit kernel at 100 M takes 0.3 ms."""
    cases = []
    for elements in (1_000_000, 100_000_000):
        scale = elements / 1e6
        for memory in ("explicit", "managed", "prefetch"):
            for shape, per_m in (("one_thread", 30e-3), ("one_block", 0.2e-3), ("many_blocks", 3e-6)):
                kernel = [per_m * scale] * 3 if shape != "many_blocks" else [0.31e-3, 0.3e-3, 0.29e-3]
                if shape == "many_blocks" and elements == 1_000_000:
                    kernel = [3e-6, 4e-6, 5e-6]
                cases.append(case(elements, shape, memory, kernel, h2d=None if memory == "managed" else 2e-3,
                                  resident=[k / 2 for k in kernel] if memory == "managed" else None))
    copies = [{"elements": 1_000_000, "bytes": 6_000_000, "copy_s": [4e-6, 3e-6, 5e-6]},
              {"elements": 100_000_000, "bytes": 600_000_000, "copy_s": [0.28e-3, 0.27e-3, 0.3e-3]}]
    cpu = [case(1_000_000, "cpu", "host", [2e-4, 3e-4, 4e-4], h2d=None),
           case(100_000_000, "cpu", "host", [0.03, 0.04, 0.05], h2d=None, free=6e-5)]  # no tie at 3 digits
    for c in cpu:
        c["d2h_s"] = None
    return vecadd_result(0, cases, cpu, copies=copies)


def read_csv(path) -> List[Dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_report_tables_bandwidths_and_charts_from_hand_made_results(tmp_path):
    write_result(tmp_path, full_grid())
    assert report_main([str(tmp_path)]) == 0
    report = tmp_path / "report"
    markdown = (report / "report.md").read_text()
    assert "## vecadd · cuda_vecadd" in markdown and "3 × 4 × K bytes / median kernel time" in markdown
    assert "### point 0: NVIDIA H200" in markdown
    assert "Published peak: NVIDIA H200 SXM 141GB, 4,800 GB/s (datasheet)." in markdown
    assert "Program wall time: GPU grid 21.5 s, CPU baseline 3.2 s." in markdown
    # many_blocks, explicit, K = 100 M: median kernel 0.3 ms -> 1.2e9 B / 0.3e-3 s = 4,000 GB/s; the copy's median
    # 0.28 ms for 2 x 6e8 B -> 4,285.714 GB/s: 93.3 %; of the published 4,800: 83.3 %.
    # total = alloc 0.1 + h2d 2 + kernel + d2h 1 + free 0.05 ms: median 3.45, min 3.44, max 3.46 ms.
    assert ("| 100 | many_blocks | 3.45 [3.44, 3.46] (n=3) | 0.1 | 2 | 0.3 | 1 | 0.05 | 4,000 | 83.3% | 93.3% | ok |"
            in markdown)
    assert ("many_blocks, explicit, K = 100 M: kernel 4,000 GB/s = 93.3% of the device-to-device copy "
            "(4,286 GB/s) and 83.3% of the published 4,800 GB/s.") in markdown
    # managed: no h2d (counts 0); the 2nd run (half the time) at 8,000 GB/s; the fill is shown, not added
    assert "| 100 | many_blocks | 1.45 [1.44, 1.46] (n=3) | 0.1 | 100 | 0.3 | 0.15 | 1 | 0.05 | 4,000 | 8,000 |" in markdown
    # one_thread at 1 M: kernel 30 ms -> 1.2e7 B / 0.03 s = 0.4 GB/s
    assert "| 1 | one_thread | 33.1 [33.1, 33.1] (n=3) | 0.1 | 2 | 30 | 1 | 0.05 | 0.4 | 0.0% | 0.0% | ok |" in markdown
    # CPU at 100 M: alloc 0.1 + loop 40 + free 0.06 = 40.16 ms (median, shown to 3 digits; 40.15 would be a tie that
    # float sums round either way by library version); 1.2e9 B / 0.04 s = 30 GB/s
    assert "| 100 | 40.2 [30.2, 50.2] (n=3) | 0.1 | 40 | 0.06 | 30 | ok |" in markdown
    assert "| 100 | 600,000,000 | 4,286 [4,000, 4,444] (n=3) |" in markdown
    assert "| nvcc | Cuda compilation tools, release 13.0, V13.0.88 | -O3 -arch=sm_90 -std=c++17 | sm_90 | abababababab | yes | 0.00 |" in markdown
    explicit = read_csv(report / "cuda_vecadd_explicit.csv")
    assert len(explicit) == 6
    row = next(r for r in explicit if r["shape"] == "many_blocks" and r["elements"] == "100000000")
    assert float(row["kernel_GBps"]) == pytest.approx(4000.0)
    assert float(row["of_copy"]) == pytest.approx(4000 / 4285.714286)
    assert float(row["of_peak"]) == pytest.approx(4000 / 4800)
    assert float(row["total_median_s"]) == pytest.approx(3.45e-3)
    assert len(read_csv(report / "cuda_vecadd_managed.csv")) == len(read_csv(report / "cuda_vecadd_prefetch.csv")) == 6
    assert len(read_csv(report / "cuda_vecadd_cpu.csv")) == 2 and len(read_csv(report / "cuda_vecadd_copy.csv")) == 2
    for chart in ("cuda_vecadd_explicit.png", "cuda_vecadd_managed.png"):
        assert (report / chart).stat().st_size > 10_000


def test_a_wrong_sum_shows_and_an_unknown_gpu_has_no_peak(tmp_path):
    doc = vecadd_result(0, [case(1_000_000, "many_blocks", "explicit", [4e-6], mismatches=7)], [], peak=None)
    write_result(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "Published peak: none (the device is not in conf/hardware/gpu_peaks.py)." in markdown
    assert "| 1 | many_blocks | 3.15 [3.15, 3.15] (n=1) | 0.1 | 2 | 0.004 | 1 | 0.05 | 3,000 | – | – | WRONG (7) |" in markdown
    assert not (tmp_path / "report" / "cuda_vecadd_explicit.png").exists()  # one size: no line to draw


def test_a_cpu_point_has_its_table_and_no_chart(tmp_path):
    doc = vecadd_result(0, [], [case(1_000_000, "cpu", "host", [2e-4], h2d=None),
                               case(2_000_000, "cpu", "host", [4e-4], h2d=None)], gpu=False)
    for c in doc["measurements"]["cpu"]["cases"]:
        c["d2h_s"] = None
    write_result(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "CPU point: the C++ baseline only. Program wall time: CPU baseline 3.2 s." in markdown
    assert "| 2 | 0.55 [0.55, 0.55] (n=1) | 0.1 | 0.4 | 0.05 | 60 | ok |" in markdown  # 2.4e7 B / 0.4 ms
    assert "| host-cxx | c++ (Debian) 12.2.0 | -O3 -std=c++17 | x86_64 | abababababab | no | 1.25 |" in markdown
    assert not list((tmp_path / "report").glob("*.png"))


def test_unreadable_measurements_are_listed_not_fatal(tmp_path):
    doc = full_grid()
    del doc["measurements"]["gpu"]["cases"][0]["kernel_s"]
    write_result(tmp_path, doc)
    write_result(tmp_path, {**full_grid(), "identity": {**full_grid()["identity"], "point": 1}})
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "unreadable cuda_vecadd measurements (KeyError: 'kernel_s')" in markdown
    assert "### point 1: NVIDIA H200" in markdown and "### point 0:" not in markdown


@pytest.mark.parametrize("seconds, text", [(3.45e-3, "3.45"), (40.15e-3, "40.1"), (1.5, "1,500"), (4e-6, "0.004"),
                                           (float("nan"), "–")])
def test_ms_text(seconds, text):
    assert ms_text(seconds) == text


def test_version_line_takes_the_release_line():
    assert version_line(BUILD["compiler_version"]) == "Cuda compilation tools, release 13.0, V13.0.88"
    assert version_line("c++ (Debian 12.2.0-14) 12.2.0\nCopyright") == "c++ (Debian 12.2.0-14) 12.2.0"
