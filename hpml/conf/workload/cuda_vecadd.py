"""Schema of the `cuda_vecadd` workload (conf/workload/cuda_vecadd.yaml; the worker: workloads/cuda_vecadd/).

CUDA vector add, c = a + b over K million floats (HPML lab 5, problem 3): three launch shapes, three memory
modes and a C++ CPU baseline, the whole grid in ONE process per point (a torchrun start per grid cell
would cost more than the cells). So `sizes_m`, `shapes` and `memory` each take one value or a list:

    workload.shapes=[one_block,many_blocks]      one point running both shapes
    workload.memory=explicit,managed             a sweep: two points, one memory mode each
    workload.memory=[explicit],[managed,prefetch]  a sweep of lists: two points

Also here, because the launcher's preflight and the worker both need them and conf/ imports no workload:
which compiler builds what (`host_cxx`, `gpu_build_path`). The result's formulas that the worker's `derived`
and the report share are contract/vecadd_format.py's.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, List, Mapping, Optional, Type

from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import MISSING, ConfigValueError, require, require_repeats
from hpml.conf.workload_contract import Device, WorkloadConfig


class LaunchShape(str, Enum):
    one_thread = "one_thread"  # <<<1, 1>>>
    one_block = "one_block"  # <<<1, 256>>>
    many_blocks = "many_blocks"  # <<<ceil(n / 256), 256>>>: one thread per element
    # <<<ceil(n / 1024), 256>>>: one thread per 4 elements, 16-byte loads: not one of the lab's three; what the
    # memory system gives a kernel with 4 times the bytes in flight per thread (docs/studies/cuda-vecadd.md)
    many_blocks_vec4 = "many_blocks_vec4"


class MemoryMode(str, Enum):
    explicit = "explicit"  # cudaMalloc + cudaMemcpy in and out
    managed = "managed"  # cudaMallocManaged; pages migrate on first touch
    prefetch = "prefetch"  # cudaMallocManaged + cudaMemPrefetchAsync to the device and back


class BuildPath(str, Enum):
    auto = "auto"  # nvcc if it is on PATH, else NVRTC if CuPy is installed
    nvcc = "nvcc"  # the CUDA C++ host program (kernels/vecadd.cu), built with nvcc
    nvrtc = "nvrtc"  # the same kernels compiled by NVRTC, the host part in Python (CuPy)


MAX_SIZE_M = 1000  # 12e9 bytes (11.2 GiB) of arrays; the worker also checks the GPU's free memory
def one_or_list(key: str, value: Any, accepts: Callable[[Any], bool], allowed: str) -> List[Any]:
    """A field that takes one value or a list: as a list of distinct values, each passing `accepts`."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    message = f"{allowed}: one value or a non-empty list of distinct values"
    require(bool(values), key, message, value)
    for item in values:
        require(accepts(item), key, message, value)
    require(len(set(map(str, values))) == len(values), key, message, value)
    return values


def enum_list(key: str, value: Any, enum: Type[Enum]) -> List[Any]:
    names = [member.value for member in enum]
    items = one_or_list(key, value, lambda v: isinstance(v, str) and v in names, " | ".join(names))
    return [enum(item) for item in items]


@dataclass
class CudaVecaddConfig(WorkloadConfig):
    """CUDA vector add (workloads/cuda_vecadd/): every (size, shape, memory mode) of the grid, plus the CPU."""

    sizes_m: Any = MISSING  # K, million elements: an integer 1..1000 or a list of them
    shapes: Any = MISSING  # LaunchShape or a list of them
    memory: Any = MISSING  # MemoryMode or a list of them
    cpu_baseline: bool = MISSING  # also run the C++ CPU loop on a GPU point (a CPU point runs only that)
    repetitions: int = MISSING  # timed repetitions of each case (the CPU's and the device copy's too)
    one_thread_repetitions: int = MISSING  # of the one-thread kernel, seconds long at 100 M elements
    warmup: int = MISSING  # untimed repetitions before each case (none for one_thread: see the worker)
    build: BuildPath = MISSING

    def __post_init__(self) -> None:
        self.sizes_m = one_or_list("workload.sizes_m", self.sizes_m,
                                   lambda v: type(v) is int and 1 <= v <= MAX_SIZE_M,
                                   f"integers from 1 to {MAX_SIZE_M} (million elements)")
        self.shapes = enum_list("workload.shapes", self.shapes, LaunchShape)
        self.memory = enum_list("workload.memory", self.memory, MemoryMode)
        require(type(self.cpu_baseline) is bool, "workload.cpu_baseline", "true or false", self.cpu_baseline)
        for key in ("repetitions", "one_thread_repetitions"):
            value = getattr(self, key)
            require(type(value) is int and value >= 1, f"workload.{key}", "an integer >= 1", value)
        require(type(self.warmup) is int and self.warmup >= 0, "workload.warmup", "an integer >= 0", self.warmup)
        require_repeats(self, ("repetitions", "one_thread_repetitions", "warmup"))

    @property
    def elements(self) -> List[int]:
        return [k * 1_000_000 for k in self.sizes_m]

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        one_process = ("1: cuda_vecadd runs its whole grid in one process on one GPU (sweep points to use "
                       "more GPUs)")
        require(resources.nodes == 1, "resources.nodes", one_process, resources.nodes)
        require(resources.workers_per_node == 1, "resources.workers_per_node", one_process,
                resources.workers_per_node)

    def preflight_problems(self) -> List[str]:
        problems = []
        # a CPU point needs no CUDA compiler; without its placement (a schema built alone), the device key says
        on_cpu = self.runs_on_cpu(self.placement.resources) if self.placement else self.device == Device.cpu
        if (on_cpu or self.cpu_baseline) and host_cxx() is None:
            problems.append("workload=cuda_vecadd: no host C++ compiler for the CPU baseline: set CXX or put "
                            "c++ or g++ on PATH (or workload.cpu_baseline=false on a GPU point)")
        if not on_cpu:
            try:
                gpu_build_path(self.build)
            except ConfigValueError as error:
                problems.append(str(error))
        return problems


def host_cxx(environ: Mapping[str, str] = os.environ) -> Optional[List[str]]:
    """The host C++ compiler command: $CXX (split as a shell would: "ccache g++" works), else c++, else g++
    on PATH; its program resolved to a full path. None when there is none."""
    words = shlex.split(environ.get("CXX", ""))
    candidates = [words] if words else [["c++"], ["g++"]]
    for command in candidates:
        program = shutil.which(command[0], path=environ.get("PATH"))
        if program:
            return [program] + command[1:]
    return None


def gpu_build_path(build: BuildPath, environ: Mapping[str, str] = os.environ) -> BuildPath:
    """The build path a GPU point takes: nvcc or nvrtc (auto resolved); ConfigValueError with one line saying
    what to change when it is not available here."""
    nvcc = shutil.which("nvcc", path=environ.get("PATH")) is not None
    cupy = importlib.util.find_spec("cupy") is not None
    if build == BuildPath.auto:
        require(nvcc or cupy, "workload.build", "a path this machine has: neither nvcc is on PATH (load the "
                "CUDA toolkit, e.g. `module load cuda`) nor CuPy installed for the NVRTC path (pip install "
                "cupy-cuda12x or cupy-cuda13x)", build.value)
        return BuildPath.nvcc if nvcc else BuildPath.nvrtc
    if build == BuildPath.nvcc:
        require(nvcc, "workload.build", "nvcc is not on PATH: load the CUDA toolkit (e.g. `module load cuda`) "
                "or use workload.build=nvrtc (needs CuPy)", build.value)
    else:
        require(cupy, "workload.build", "CuPy is not installed: pip install cupy-cuda12x (or cupy-cuda13x), or "
                "use workload.build=nvcc", build.value)
    return build
