"""The CPU baseline: kernels/vecadd_cpu.cpp built with the host C++ compiler ($CXX, else c++ or g++), -O3,
cached like the GPU builds, then run over the grid's sizes."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Mapping, Sequence

from hpml.conf.workload.cuda_vecadd import host_cxx
from hpml.workloads.cuda_vecadd.build_cache import BuildRequest, Built, Toolchain, build, run_compiler, version_text
from hpml.workloads.cuda_vecadd.programs import CPU_PROGRAM, HOST_HEADER, ProgramRun, grid_arguments, run_program

# -pthread: the untimed fill and check use threads (the timed loop does not). No -march=native: a cached build
# may run on another node of the cluster.
CXX_FLAGS = ("-O3", "-std=c++17", "-pthread")
OUTPUT = "vecadd_cpu"


def cpu_request(program: Path = CPU_PROGRAM, environ: Mapping[str, str] = os.environ) -> BuildRequest:
    """program: the source to build (the tests build a changed copy); the header beside it is included."""
    command = host_cxx(environ)
    if command is None:
        raise RuntimeError("no host C++ compiler: set CXX or put c++ or g++ on PATH")
    toolchain = Toolchain(path="host-cxx", compiler=tuple(command), version=version_text(command),
                          flags=CXX_FLAGS, arch=platform.machine())

    def compile_into(folder: Path) -> None:
        run_compiler([*command, *CXX_FLAGS, "-o", str(folder / OUTPUT), str(program)], "the CPU baseline build")

    return BuildRequest(toolchain=toolchain, sources=(program, program.parent / HOST_HEADER.name), output=OUTPUT,
                        compile=compile_into)


def build_cpu(root: Path | None = None) -> Built:
    return build(cpu_request(), root)


def run_cpu(binary: Path, elements: Sequence[int], repetitions: int, warmup: int,
            extra: Sequence[str] = ()) -> ProgramRun:
    """extra: more arguments (the tests' --corrupt-one)."""
    return run_program(binary, grid_arguments(elements, repetitions, warmup) + list(extra))
