"""CUDA vector add, c = a + b over K million floats: the CPU, one thread, one block, many blocks; explicit
copies, unified memory, unified memory prefetched (HPML lab 5, problem 3).

Started by torchrun, one worker (the schema allows no more: conf/workload/cuda_vecadd.py):
    python -m hpml.workloads.cuda_vecadd --config <sweep>/points/<n>/config.yaml

On a GPU point the worker
  1. builds the grid's program for the device's own arch (sm_90 on Hopper), cached (build_cache.py): the CUDA
     C++ host program kernels/vecadd.cu with nvcc, or, where nvcc is missing, the same kernels
     (kernels/vecadd_kernels.h) through NVRTC with the host part in Python (nvrtc_path.py);
  2. runs the whole grid in one process: per size a device-to-device copy of the kernel's bytes, then every
     (memory mode, launch shape) case, `warmup` untimed and `repetitions` timed repetitions each (the
     one-thread kernel `one_thread_repetitions`, no warm-up); what each part times: programs.PART_METHODS;
  3. builds and runs the C++ CPU baseline (kernels/vecadd_cpu.cpp) over the same sizes, if cpu_baseline.
A CPU point runs step 3 only. Rank 0 writes result.json: per case the raw per-repetition arrays, the build
records (path, compiler and version, flags, arch, cache key, hit, compile seconds), the device, and its
published peaks (conf/hardware/gpu_peaks.py, null for a GPU not in the table). A wrong sum anywhere fails
the point after everything was recorded.

Kernel bandwidth = 3 x 4 x K bytes / kernel time (GB = 1e9 B); the copy's = 2 x 6 K bytes / copy time.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Optional, Sequence

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.conf.workload.cuda_vecadd import BuildPath, CudaVecaddConfig, gpu_build_path
from hpml.contract.units import GIB
from hpml.contract.vecadd_format import copy_GBps, kernel_bytes, kernel_GBps, repetition_totals
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.worker import start_worker
from hpml.workloads.cuda_vecadd.cpu_path import build_cpu, run_cpu
from hpml.workloads.cuda_vecadd.nvcc_path import build_nvcc, cuda_arguments, run_nvcc
from hpml.workloads.cuda_vecadd.programs import PART_METHODS, ProgramRun

# The largest size's arrays (12 K bytes) may take at most this share of the GPU's free memory: managed memory
# beyond what the card has can hang the GPU, not only the program.
MEMORY_SHARE = 0.5


class WrongSum(RuntimeError):
    """c != a + b somewhere: the times of this point are not to be trusted."""


def gpu_arch(device: torch.device) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def check_device_memory(cfg: CudaVecaddConfig, device: torch.device) -> None:
    free, _ = torch.cuda.mem_get_info(device)
    need = kernel_bytes(max(cfg.elements))
    if need > MEMORY_SHARE * free:
        raise RuntimeError(f"workload.sizes_m={max(cfg.sizes_m)} needs {need / GIB:.1f} GiB of arrays, more than "
                           f"{MEMORY_SHARE:.0%} of the {free / GIB:.1f} GiB free on {torch.cuda.get_device_name(device)}")


def run_gpu_grid(cfg: CudaVecaddConfig, device: torch.device, telemetry: Telemetry = NO_TELEMETRY,
                 corrupt: bool = False) -> Dict[str, Any]:
    """Builds (cached) and runs the GPU grid on `device`; the result's "gpu" block."""
    path, arch = gpu_build_path(cfg.build), gpu_arch(device)
    shapes, memory = [s.value for s in cfg.shapes], [m.value for m in cfg.memory]
    if path == BuildPath.nvcc:
        built = build_nvcc(arch)
        arguments = cuda_arguments(device.index, cfg.elements, shapes, memory, cfg.repetitions,
                                   cfg.one_thread_repetitions, cfg.warmup) + (["--corrupt-one"] if corrupt else [])
        with telemetry.phase("gpu_grid", timed=True):
            run = run_nvcc(built.file, arguments, progress=True)
    else:
        from hpml.workloads.cuda_vecadd.nvrtc_path import NvrtcGrid, build_nvrtc

        built = build_nvrtc(arch)
        grid = NvrtcGrid(built.file, device.index, corrupt=corrupt)
        with telemetry.phase("gpu_grid", timed=True):
            run = grid.run(cfg.elements, shapes, memory, cfg.repetitions, cfg.one_thread_repetitions, cfg.warmup,
                           progress=True)
    peaks = peaks_for_device(torch.cuda.get_device_name(device))
    return {"build": built.record, "device": run.device, "copies": run.copies, "cases": run.cases,
            "program_wall_s": run.wall_s,
            # the published peaks of this device's entry (one CUDA device's share), null off the table
            "peak": None if peaks is None else peaks.per_device().as_record()}


def run_cpu_baseline(cfg: CudaVecaddConfig, telemetry: Telemetry = NO_TELEMETRY) -> Dict[str, Any]:
    """Builds (cached) and runs the CPU loop over the grid's sizes; the result's "cpu" block."""
    built = build_cpu()
    with telemetry.phase("cpu_baseline"):
        run: ProgramRun = run_cpu(built.file, cfg.elements, cfg.repetitions, cfg.warmup)
    return {"build": built.record, "cases": run.cases, "program_wall_s": run.wall_s}


def case_summary(case: Dict[str, Any], peak: Optional[float], copy: Optional[float]) -> Dict[str, Any]:
    """peak: the published memory GB/s; copy: the same run's copy GB/s at this size (None: none)."""
    kernel_s = statistics.median(case["kernel_s"])
    bandwidth = kernel_GBps(case["elements"], kernel_s)
    return {"elements": case["elements"], "shape": case["shape"], "memory": case["memory"],
            "total_median_s": statistics.median(repetition_totals(case)), "kernel_median_s": kernel_s,
            "kernel_GBps": bandwidth, "of_peak": bandwidth / peak if peak else None,
            "of_copy": bandwidth / copy if copy else None, "correct": not any(case["mismatches"])}


def summarize(gpu: Optional[Dict[str, Any]], cpu: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    copies: Dict[int, float] = {}
    peak = None
    if gpu is not None:
        copies = {c["elements"]: copy_GBps(c["bytes"], statistics.median(c["copy_s"])) for c in gpu["copies"]}
        peak = gpu["peak"]["memory_GBps"] if gpu["peak"] else None
    cases = [case_summary(case, peak, copies.get(case["elements"])) for case in (gpu["cases"] if gpu else [])]
    cases += [case_summary(case, None, None) for case in (cpu["cases"] if cpu else [])]
    derived = {"cases": cases, "copy_GBps": {str(k): v for k, v in copies.items()},
               "all_correct": all(case["correct"] for case in cases)}
    return {"measurements": {"gpu": gpu, "cpu": cpu}, "derived": derived}


def check_sums(derived: Dict[str, Any]) -> None:
    wrong = [f"{c['shape']}/{c['memory']} at {c['elements']}" for c in derived["cases"] if not c["correct"]]
    if wrong:
        raise WrongSum(f"c != a + b in {len(wrong)} case(s) (first: {wrong[0]} elements); the times of this "
                       "point are not to be trusted")


def print_summary(derived: Dict[str, Any]) -> None:
    print(f"{'K':>11} {'shape':>12} {'memory':>9} {'total ms':>10} {'kernel ms':>10} {'GB/s':>9} {'sum':>5}")
    for c in derived["cases"]:
        print(f"{c['elements']:>11} {c['shape']:>12} {c['memory']:>9} {c['total_median_s'] * 1e3:10.3f} "
              f"{c['kernel_median_s'] * 1e3:10.3f} {c['kernel_GBps']:9.1f} {'ok' if c['correct'] else 'WRONG':>5}",
              flush=True)


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: CudaVecaddConfig = worker.workload
    device = worker.ctx.device
    with worker.reporting(PART_METHODS) as body:
        gpu = cpu = None
        if device.type == "cuda":
            check_device_memory(cfg, device)
            gpu = run_gpu_grid(cfg, device, worker.telemetry)
        if device.type == "cpu" or cfg.cpu_baseline:
            cpu = run_cpu_baseline(cfg, worker.telemetry)
        body.update(summarize(gpu, cpu))
        print_summary(body["derived"])
        check_sums(body["derived"])  # after the summary: a point failed for a wrong sum still shows every case


if __name__ == "__main__":
    main()
