"""The nvcc path: the CUDA C++ host program kernels/vecadd.cu (which includes the kernels' header) built
with nvcc for the device's own architecture, -O3, cached; then run over the whole grid in one process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Sequence

from hpml.workloads.cuda_vecadd.build_cache import BuildRequest, Built, Toolchain, build, run_compiler, version_text
from hpml.workloads.cuda_vecadd.programs import (
    CUDA_PROGRAM,
    HOST_HEADER,
    KERNELS_HEADER,
    ProgramRun,
    grid_arguments,
    run_program,
)

OUTPUT = "vecadd"


def nvcc_flags(arch: str) -> tuple:
    """arch: "sm_90": machine code for that GPU (and its PTX), not a generic target the driver must JIT."""
    return ("-O3", f"-arch={arch}", "-std=c++17")


def nvcc_request(arch: str) -> BuildRequest:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc is not on PATH: load the CUDA toolkit or use workload.build=nvrtc")
    flags = nvcc_flags(arch)
    toolchain = Toolchain(path="nvcc", compiler=(nvcc,), version=version_text([nvcc]), flags=flags, arch=arch)

    def compile_into(folder: Path) -> None:
        run_compiler([nvcc, *flags, "-o", str(folder / OUTPUT), str(CUDA_PROGRAM)], "the nvcc build")

    return BuildRequest(toolchain=toolchain, sources=(CUDA_PROGRAM, KERNELS_HEADER, HOST_HEADER), output=OUTPUT,
                        compile=compile_into)


def build_nvcc(arch: str, root: Path | None = None) -> Built:
    return build(nvcc_request(arch), root)


def cuda_arguments(device: int, elements: Sequence[int], shapes: Sequence[str], memory: Sequence[str],
                   repetitions: int, one_thread_repetitions: int, warmup: int) -> List[str]:
    return grid_arguments(elements, repetitions, warmup) + [
        "--device", str(device), "--shapes", ",".join(shapes), "--memory", ",".join(memory),
        "--one-thread-reps", str(one_thread_repetitions)]


def run_nvcc(binary: Path, arguments: Sequence[str], progress: bool = False) -> ProgramRun:
    return run_program(binary, arguments, progress)
