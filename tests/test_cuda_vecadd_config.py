"""cuda_vecadd's config: one value or a list per grid field (and how to sweep them), the one-process rule,
the build-path and compiler preflight, each refusal one `hpml: error:` line that names the field."""

from __future__ import annotations

import os

import pytest

from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.cuda_vecadd import BuildPath, LaunchShape, MemoryMode, gpu_build_path, host_cxx
from hpml.contract.vecadd_format import copy_GBps, kernel_GBps, repetition_totals

GPU_POINT = ["experiment=cuda_vecadd", "cluster.assume_gpus=1"]


def test_the_preset_is_one_gpu_point_running_the_whole_grid(compose_values):
    config = config_from_dict(compose_values(["experiment=cuda_vecadd"]))
    cfg = config.workload
    assert (config.resources.gpus_per_node, config.resources.workers_per_node) == (1, 1)
    assert cfg.sizes_m == [1, 5, 10, 50, 100] and cfg.elements[-1] == 100_000_000
    assert cfg.shapes == [LaunchShape.one_thread, LaunchShape.one_block, LaunchShape.many_blocks]
    assert cfg.memory == list(MemoryMode) and (cfg.repetitions, cfg.warmup, cfg.one_thread_repetitions) == (3, 1, 1)
    assert cfg.cpu_baseline is True and cfg.build == BuildPath.auto


def test_one_value_is_a_list_of_one(compose_values):
    cfg = config_from_dict(compose_values(["experiment=cuda_vecadd", "workload.sizes_m=100",
                                           "workload.shapes=many_blocks", "workload.memory=[managed,prefetch]"])).workload
    assert cfg.sizes_m == [100] and cfg.shapes == [LaunchShape.many_blocks]
    assert cfg.memory == [MemoryMode.managed, MemoryMode.prefetch]


@pytest.mark.parametrize("override, message", [
    ("workload.sizes_m=0", "workload.sizes_m=0 is not allowed: integers from 1 to 1000 (million elements)"),
    ("workload.sizes_m=[1,1]", "workload.sizes_m=[1, 1] is not allowed: integers from 1 to 1000 (million elements): "
                               "one value or a non-empty list of distinct values"),
    ("workload.sizes_m=[]", "workload.sizes_m=[] is not allowed"),
    ("workload.shapes=[one_block,bogus]", "workload.shapes=['one_block', 'bogus'] is not allowed: one_thread | "
                                          "one_block | many_blocks | many_blocks_vec4"),
    ("workload.memory=unified", "workload.memory='unified' is not allowed: explicit | managed | prefetch"),
    ("workload.repetitions=0", "workload.repetitions=0 is not allowed: an integer >= 1"),
    ("workload.one_thread_repetitions=0", "workload.one_thread_repetitions=0 is not allowed: an integer >= 1"),
    ("workload.warmup=-1", "workload.warmup=-1 is not allowed: an integer >= 0"),
    ("resources.nodes=2", "resources.nodes=2 is not allowed: 1: cuda_vecadd runs its whole grid in one process"),
])
def test_bad_values_are_refused_naming_the_field(compose_values, override, message):
    with pytest.raises(ConfigValueError) as refused:
        config_from_dict(compose_values(["experiment=cuda_vecadd", override]))
    assert str(refused.value).startswith(message)


def test_a_bad_override_is_one_line_before_anything_is_written(hpml, tmp_path):
    done = hpml("launch", "experiment=tiny/cuda_vecadd", "workload.shapes=[bogus]")
    assert done.returncode == 2
    assert done.stderr.strip() == ("hpml: error: workload.shapes=['bogus'] is not allowed: one_thread | one_block | "
                                   "many_blocks | many_blocks_vec4: one value or a non-empty list of distinct values")
    assert not (tmp_path / "sweeps").exists()
    several = hpml("launch", "--dry-run", "experiment=cuda_vecadd", "cluster.assume_gpus=2", "resources.gpus_per_node=2",
                   "resources.workers_per_node=2")
    assert several.stderr.strip() == ("hpml: error: resources.workers_per_node=2 is not allowed: 1: cuda_vecadd runs "
                                      "its whole grid in one process on one GPU (sweep points to use more GPUs)")


@pytest.mark.parametrize("sweep, points", [
    ("workload.memory=explicit,managed", ["workload.memory=explicit", "workload.memory=managed"]),
    ("workload.memory=[explicit],[managed,prefetch]", ["workload.memory=[explicit]", "workload.memory=[managed,prefetch]"]),
    ("workload.memory=[explicit,managed]", ["workload.memory=[explicit,managed]"]),
])
def test_a_comma_sweeps_points_and_a_list_runs_in_one(hpml, sweep, points):
    done = hpml("launch", "--dry-run", *GPU_POINT, "workload.shapes=[many_blocks]", sweep)
    assert done.returncode == 0, done.stderr
    assert f"{len(points)} point(s)" in done.stdout
    planned = [line for line in done.stdout.splitlines() if "workload.shapes=[many_blocks]" in line]
    assert [line.rsplit(" ", 1)[-1] for line in planned] == points


def test_the_build_path_preflight_names_both_fixes(tmp_path):
    empty = {"PATH": str(tmp_path)}  # neither nvcc nor (unless installed) CuPy
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here: auto falls back to it")
    except ImportError:
        pass
    with pytest.raises(ConfigValueError) as refused:
        gpu_build_path(BuildPath.auto, empty)
    assert "module load cuda" in str(refused.value) and "pip install cupy-cuda12x" in str(refused.value)
    with pytest.raises(ConfigValueError, match=r"workload.build='nvrtc' is not allowed: CuPy is not installed"):
        gpu_build_path(BuildPath.nvrtc, empty)
    with pytest.raises(ConfigValueError, match=r"nvcc is not on PATH: load the CUDA toolkit"):
        gpu_build_path(BuildPath.nvcc, empty)
    (tmp_path / "nvcc").write_text("#!/bin/sh\n")
    (tmp_path / "nvcc").chmod(0o755)
    assert gpu_build_path(BuildPath.auto, empty) == BuildPath.nvcc


def test_preflight_refuses_a_missing_cuda_path_or_compiler_in_one_line(hpml):
    nvrtc = hpml("launch", "--dry-run", *GPU_POINT, "workload.build=nvrtc")
    if nvrtc.returncode != 0:  # CuPy is not installed here
        assert nvrtc.stderr.strip() == ("hpml: error: workload.build='nvrtc' is not allowed: CuPy is not installed: "
                                        "pip install cupy-cuda12x (or cupy-cuda13x), or use workload.build=nvcc")
    no_cxx = hpml("launch", "--dry-run", "experiment=tiny/cuda_vecadd", env={"CXX": "/no/such/c++"})
    assert no_cxx.returncode == 2
    assert no_cxx.stderr.strip() == ("hpml: error: workload=cuda_vecadd: no host C++ compiler for the CPU baseline: "
                                     "set CXX or put c++ or g++ on PATH (or workload.cpu_baseline=false on a GPU point)")


def test_the_host_compiler_is_cxx_else_cxx_or_gxx_on_path(tmp_path):
    assert host_cxx({"CXX": "/no/such/c++", "PATH": os.environ["PATH"]}) is None
    compiler = tmp_path / "my-g++"
    compiler.write_text("#!/bin/sh\n")
    compiler.chmod(0o755)
    assert host_cxx({"CXX": f"ccache-like {compiler}", "PATH": str(tmp_path)}) is None  # ccache-like not on PATH
    assert host_cxx({"CXX": "my-g++ -fopenmp", "PATH": str(tmp_path)}) == [str(compiler), "-fopenmp"]
    assert host_cxx({"PATH": str(tmp_path)}) is None  # neither c++ nor g++ there


def test_the_formulas_against_hand_computed_values():
    # K = 100 M floats: the kernel reads 2 x 400 MB and writes 400 MB = 1.2e9 bytes; in 0.3 ms: 4,000 GB/s
    assert kernel_GBps(100_000_000, 0.3e-3) == pytest.approx(4000.0)
    # a device copy of 600 MB reads 600 MB and writes 600 MB: 1.2e9 bytes in 0.28 ms = 4,285.714 GB/s
    assert copy_GBps(600_000_000, 0.28e-3) == pytest.approx(4285.714286)
    case = {"elements": 1, "shape": "many_blocks", "memory": "managed", "alloc_s": [1.0, 2.0], "h2d_s": None,
            "kernel_s": [0.5, 0.25], "d2h_s": [0.125, 0.125], "free_s": [0.0625, 0.0625]}
    assert repetition_totals(case) == [1.6875, 2.4375]  # h2d null (managed) counts 0
    with pytest.raises(ValueError, match="different numbers of repetitions"):
        repetition_totals({**case, "free_s": [0.1]})
