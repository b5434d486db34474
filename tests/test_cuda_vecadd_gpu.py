"""cuda_vecadd on a real GPU (`pytest -m gpu`; skipped without CUDA): both build paths, nvcc (the CUDA C++
host program) and NVRTC (the same kernels through CuPy, the host part in Python), run every launch shape and
memory mode with the sum checked; a planted wrong element is caught; `hpml launch` runs a small grid, a second
launch reuses the cached build. Measured results: docs/results/cuda_vecadd/README.md."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SIZES = [1_000_000, 2_000_000]
SHAPES = ["one_thread", "one_block", "many_blocks", "many_blocks_vec4"]
MODES = ["explicit", "managed", "prefetch"]


def check_grid(run, mismatches_per_rep: int) -> None:
    assert run.device["compute_capability"] == "{}.{}".format(*torch.cuda.get_device_capability(0))
    assert [c["elements"] for c in run.copies] == SIZES and all(min(c["copy_s"]) > 0 for c in run.copies)
    assert [(c["elements"], c["memory"], c["shape"]) for c in run.cases] == [
        (n, m, s) for n in SIZES for m in MODES for s in SHAPES]
    for case in run.cases:
        reps = 1 if case["shape"] == "one_thread" else 2
        assert case["mismatches"] == [mismatches_per_rep] * reps, case
        assert len(case["kernel_s"]) == reps and min(case["kernel_s"]) > 0
        assert (case["h2d_s"] is None) == (case["memory"] == "managed")
        assert (case["kernel_resident_s"] is not None) == (case["memory"] == "managed" and case["shape"] != "one_thread")
        assert (case["fill_s"] is None) == (case["memory"] == "explicit")
        per_block = {"many_blocks": 256, "many_blocks_vec4": 1024}.get(case["shape"])
        assert case["blocks"] == (-(-case["elements"] // per_block) if per_block else 1)
    by_shape = {c["shape"]: c["kernel_s"][0] for c in run.cases if c["elements"] == SIZES[-1] and c["memory"] == "explicit"}
    assert by_shape["one_thread"] > by_shape["one_block"] > by_shape["many_blocks"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_nvcc_path_runs_every_case_with_the_sum_checked(tmp_path):
    from hpml.workloads.cuda_vecadd.__main__ import gpu_arch
    from hpml.workloads.cuda_vecadd.nvcc_path import build_nvcc, cuda_arguments, run_nvcc

    built = build_nvcc(gpu_arch(torch.device("cuda:0")), tmp_path)
    arguments = cuda_arguments(0, SIZES, SHAPES, MODES, repetitions=2, one_thread_repetitions=1, warmup=1)
    check_grid(run_nvcc(built.file, arguments), 0)
    check_grid(run_nvcc(built.file, arguments + ["--corrupt-one"]), 1)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_the_nvrtc_path_runs_the_same_kernels_with_the_sum_checked(tmp_path):
    from hpml.workloads.cuda_vecadd.__main__ import gpu_arch
    from hpml.workloads.cuda_vecadd.nvrtc_path import NvrtcGrid, build_nvrtc

    arch = gpu_arch(torch.device("cuda:0"))
    built = build_nvrtc(arch, tmp_path)
    assert built.record["path"] == "nvrtc" and f"--gpu-architecture={arch}" in built.record["flags"]
    assert built.record["compiler_version"].startswith("NVRTC ") and built.record["cache_hit"] is False
    check_grid(NvrtcGrid(built.file, 0).run(SIZES, SHAPES, MODES, 2, 1, 1), 0)
    check_grid(NvrtcGrid(built.file, 0, corrupt=True).run(SIZES, SHAPES, MODES, 2, 1, 1), 1)
    again = build_nvrtc(arch, tmp_path)
    assert again.record["cache_hit"] is True and again.record["compile_s"] == 0.0


def test_hpml_launch_runs_a_small_grid_and_the_second_launch_reuses_the_build(hpml, tmp_path):
    args = ["launch", "experiment=cuda_vecadd", "workload.sizes_m=[1,2]", "workload.repetitions=2"]
    env = {"HPML_CACHE_DIR": str(tmp_path / "cache")}
    records = []
    for _ in range(2):
        done = hpml(*args, env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        doc = json.loads(next((tmp_path / "sweeps" / "latest" / "points").glob("*/result.json")).read_text())
        assert doc["status"] == "ok" and doc["derived"]["all_correct"] is True
        records.append((doc["measurements"]["gpu"]["build"], doc["measurements"]["cpu"]["build"]))
    (gpu_first, cpu_first), (gpu_again, cpu_again) = records
    assert (gpu_first["cache_hit"], cpu_first["cache_hit"]) == (False, False)
    assert (gpu_again["cache_hit"], gpu_again["compile_s"], cpu_again["compile_s"]) == (True, 0.0, 0.0)
    report = hpml("report", str(tmp_path / "sweeps" / "latest"))
    assert report.returncode == 0, report.stderr
    assert "many_blocks, explicit, K = 2 M" in report.stdout
    for chart in ("cuda_vecadd_explicit.png", "cuda_vecadd_managed.png"):
        assert (tmp_path / "sweeps" / "latest" / "report" / chart).stat().st_size > 0
