"""The NVRTC path, where nvcc is missing (common on compute nodes): the same kernels, the host part in Python.

NVRTC (through CuPy, an optional dependency) compiles the text of kernels/vecadd_kernels.h, the very file
vecadd.cu includes, to a cubin for the device's arch; the cubin is cached like the nvcc build
(build_cache.py) and loaded with cupy.RawModule(path=...). `NvrtcGrid` then does what vecadd.cu's main does,
step for step and in the same order, with CuPy's wrappers of the same runtime calls (cudaMalloc,
cudaMemcpy, cudaMallocManaged, cudaMemPrefetchAsync, events), and returns the same records (programs.py).
Every runtime call raises on an error status; each launch's status is checked by CuPy (cuLaunchKernel), and
the synchronize that ends every timed part raises an error the kernel hit.

CuPy is imported only when this path runs: the rest of the workload, and CPU points, do without it.
"""

from __future__ import annotations

import ctypes
import re
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from hpml.workloads.cuda_vecadd.build_cache import BuildRequest, Built, Toolchain, build
from hpml.workloads.cuda_vecadd.programs import KERNELS_HEADER, ProgramRun, progress_line

OUTPUT = "vecadd_kernels.cubin"
KERNEL_NAMES = {"one_thread": "vecadd_one_thread", "one_block": "vecadd_one_block",
                "many_blocks": "vecadd_many_blocks", "many_blocks_vec4": "vecadd_many_blocks_vec4"}
ELEMENTS_PER_THREAD = {"many_blocks": 1, "many_blocks_vec4": 4}  # the shapes with a grid of many blocks
THREADS_PER_BLOCK = int(re.search(r"#define VECADD_THREADS_PER_BLOCK (\d+)", KERNELS_HEADER.read_text()).group(1))
PAGE_FLOATS = 4096 // 4  # one float per 4 KiB page: what the managed mode's copy-out reads
MEM_ATTACH_GLOBAL = 1  # cudaMemAttachGlobal: cudaMallocManaged's default flag
TO_HOST = None  # prefetch()'s destination for the host


def nvrtc_flags(arch: str) -> tuple:
    """NVRTC optimizes device code fully by default (nvcc's -O3 is a host-compiler flag)."""
    return (f"--gpu-architecture={arch}", "-std=c++17")


def nvrtc_request(arch: str) -> BuildRequest:
    import cupy
    from cupy.cuda import nvrtc

    flags = nvrtc_flags(arch)
    major, minor = nvrtc.getVersion()
    toolchain = Toolchain(path="nvrtc", compiler=("nvrtc",), version=f"NVRTC {major}.{minor} (CuPy {cupy.__version__})",
                          flags=flags, arch=arch)

    def compile_into(folder: Path) -> None:
        program = nvrtc.createProgram(KERNELS_HEADER.read_text(), "vecadd_kernels.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(program, list(flags))
            except nvrtc.NVRTCError as error:
                raise RuntimeError(f"NVRTC could not compile {KERNELS_HEADER.name}: {error}\n"
                                   f"{nvrtc.getProgramLog(program)}") from error
            (folder / OUTPUT).write_bytes(nvrtc.getCUBIN(program))
        finally:
            nvrtc.destroyProgram(program)

    return BuildRequest(toolchain=toolchain, sources=(KERNELS_HEADER,), output=OUTPUT, compile=compile_into)


def build_nvrtc(arch: str, root: Path | None = None) -> Built:
    return build(nvrtc_request(arch), root)


# --- cudaMemPrefetchAsync -----------------------------------------------------------------------------------

class _MemLocation(ctypes.Structure):
    """CUmemLocation: {CUmemLocationType type; int id;} (cuda.h)."""

    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


MEM_LOCATION_DEVICE, MEM_LOCATION_HOST = 1, 2  # CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST
_driver_prefetch = None


def prefetch(pointer: int, nbytes: int, device: Optional[int]) -> None:
    """cuMemPrefetchAsync_v2 (CUDA >= 12.2 drivers; CUDA 13's only form) on the legacy default stream, to
    `device`, or to the host when device is TO_HOST. Called through the driver library: CuPy's
    runtime.memPrefetchAsync takes a device ordinal, and under CUDA 13 the host (-1) is refused there as an
    invalid device (seen on an H200 with CuPy 14.2)."""
    global _driver_prefetch
    if _driver_prefetch is None:
        function = ctypes.CDLL("libcuda.so.1").cuMemPrefetchAsync_v2
        function.argtypes = [ctypes.c_uint64, ctypes.c_size_t, _MemLocation, ctypes.c_uint, ctypes.c_void_p]
        function.restype = ctypes.c_int
        _driver_prefetch = function
    location = _MemLocation(MEM_LOCATION_HOST, 0) if device is TO_HOST else _MemLocation(MEM_LOCATION_DEVICE, device)
    status = _driver_prefetch(pointer, nbytes, location, 0, None)
    if status != 0:
        raise RuntimeError(f"cuMemPrefetchAsync to {'the host' if device is TO_HOST else f'device {device}'} "
                           f"failed: CUresult {status}")


# --- the host part (vecadd.cu's, in Python) ---------------------------------------------------------------

def blocks_for(shape: str, n: int) -> int:
    if shape not in ELEMENTS_PER_THREAD:
        return 1
    per_block = THREADS_PER_BLOCK * ELEMENTS_PER_THREAD[shape]
    return (n + per_block - 1) // per_block


def threads_for(shape: str) -> int:
    return 1 if shape == "one_thread" else THREADS_PER_BLOCK


class Inputs:
    """vecadd_host.h's inputs for n elements, made once per size: a[i] = (i % 1000) / 2,
    b[i] = (i % 997) / 4 + 1, and their float32 sum, which the check compares c with (so a and b, which under
    managed memory now live on the GPU, are not read back)."""

    def __init__(self, n: int):
        self.a = np.resize(np.arange(1000, dtype=np.float32) * np.float32(0.5), n)
        self.b = np.resize(np.arange(997, dtype=np.float32) * np.float32(0.25) + np.float32(1.0), n)
        self.sum = self.a + self.b


def poison(c: np.ndarray) -> None:
    c.view(np.uint32)[:] = 0xFFFFFFFF  # NaN, as memset(0xFF)


def count_mismatches(c: np.ndarray, expected: np.ndarray) -> int:
    return int(np.count_nonzero(~(c == expected)))


def host_view(pointer: int, n: int) -> np.ndarray:
    """The host's view of n floats of managed memory at `pointer`."""
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(pointer))


class Parts:
    """One case's timed repetitions, part by part (seconds); a part the mode lacks stays empty: null."""

    NAMES = ("alloc_s", "fill_s", "h2d_s", "kernel_s", "kernel_resident_s", "d2h_s", "free_s")

    def __init__(self) -> None:
        self.values: Dict[str, List[float]] = {name: [] for name in self.NAMES}
        self.mismatches: List[int] = []

    def record(self, shape: str, memory: str, n: int, warmup: int) -> Dict[str, Any]:
        return {"elements": n, "shape": shape, "memory": memory, "repetitions": len(self.values["kernel_s"]),
                "warmup": warmup, "blocks": blocks_for(shape, n), "threads_per_block": threads_for(shape),
                **{name: values or None for name, values in self.values.items()}, "mismatches": self.mismatches}


class NvrtcGrid:
    """The grid on one GPU through CuPy: the same steps as vecadd.cu, the same records."""

    def __init__(self, cubin: Path, device: int, corrupt: bool = False):
        import cupy

        self.cupy, self.rt, self.device, self.corrupt = cupy, cupy.cuda.runtime, device, corrupt
        cupy.cuda.Device(device).use()
        module = cupy.RawModule(path=str(cubin))
        self.kernels = {shape: module.get_function(name) for shape, name in KERNEL_NAMES.items()}

    def launch(self, shape: str, a: int, b: int, c: int, n: int) -> None:
        self.kernels[shape]((blocks_for(shape, n),), (threads_for(shape),),
                            (np.uint64(a), np.uint64(b), np.uint64(c), np.uint64(n)))

    def timed_launch(self, shape: str, a: int, b: int, c: int, n: int) -> float:
        start, stop = self.cupy.cuda.Event(), self.cupy.cuda.Event()
        start.record()
        self.launch(shape, a, b, c, n)
        stop.record()
        stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, stop) / 1e3

    def since(self, started: float) -> float:
        self.rt.deviceSynchronize()
        return time.perf_counter() - started

    def device_record(self) -> Dict[str, Any]:
        rt = self.rt
        prop = rt.getDeviceProperties(self.device)
        name = prop["name"].decode() if isinstance(prop["name"], bytes) else str(prop["name"])
        return {"index": self.device, "name": name, "compute_capability": f"{prop['major']}.{prop['minor']}",
                "multiprocessors": prop["multiProcessorCount"], "memory_bytes": prop["totalGlobalMem"],
                "runtime_version": rt.runtimeGetVersion(), "driver_version": rt.driverGetVersion(),
                "concurrent_managed_access": rt.deviceGetAttribute(rt.cudaDevAttrConcurrentManagedAccess,
                                                                   self.device)}

    def warm_up(self) -> None:
        n = 1024
        buffer = self.rt.malloc(3 * 4 * n)
        for shape in KERNEL_NAMES:
            self.launch(shape, buffer, buffer + 4 * n, buffer + 8 * n, n)
        self.rt.deviceSynchronize()
        self.rt.free(buffer)

    def copy_record(self, n: int, reps: int) -> Dict[str, Any]:
        rt, nbytes = self.rt, 6 * n
        source, target = rt.malloc(nbytes), rt.malloc(nbytes)
        rt.memset(source, 0, nbytes)
        rt.memcpy(target, source, nbytes, rt.memcpyDeviceToDevice)  # warm-up
        seconds = []
        for _ in range(reps):
            start, stop = self.cupy.cuda.Event(), self.cupy.cuda.Event()
            start.record()
            rt.memcpy(target, source, nbytes, rt.memcpyDeviceToDevice)
            stop.record()
            stop.synchronize()
            seconds.append(self.cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        rt.free(source)
        rt.free(target)
        return {"elements": n, "bytes": nbytes, "copy_s": seconds}

    def explicit_repetition(self, shape: str, n: int, inputs: Inputs, c_host: np.ndarray, parts: Parts) -> None:
        rt, nbytes, values = self.rt, 4 * n, parts.values
        started = time.perf_counter()
        a, b, c = rt.malloc(nbytes), rt.malloc(nbytes), rt.malloc(nbytes)
        values["alloc_s"].append(self.since(started))
        rt.memset(c, 0xFF, nbytes)
        poison(c_host)
        rt.deviceSynchronize()

        started = time.perf_counter()
        rt.memcpy(a, inputs.a.ctypes.data, nbytes, rt.memcpyHostToDevice)
        rt.memcpy(b, inputs.b.ctypes.data, nbytes, rt.memcpyHostToDevice)
        values["h2d_s"].append(self.since(started))

        values["kernel_s"].append(self.timed_launch(shape, a, b, c, n))

        started = time.perf_counter()
        rt.memcpy(c_host.ctypes.data, c, nbytes, rt.memcpyDeviceToHost)
        values["d2h_s"].append(self.since(started))

        self.check(c_host, inputs, parts)
        started = time.perf_counter()
        for pointer in (a, b, c):
            rt.free(pointer)
        values["free_s"].append(self.since(started))

    def managed_repetition(self, shape: str, memory: str, n: int, inputs: Inputs, parts: Parts) -> None:
        rt, nbytes, values = self.rt, 4 * n, parts.values
        started = time.perf_counter()
        a, b, c = (rt.mallocManaged(nbytes, MEM_ATTACH_GLOBAL) for _ in range(3))
        values["alloc_s"].append(self.since(started))
        host_a, host_b, host_c = host_view(a, n), host_view(b, n), host_view(c, n)

        started = time.perf_counter()
        host_a[:] = inputs.a
        host_b[:] = inputs.b
        values["fill_s"].append(time.perf_counter() - started)
        rt.memset(c, 0xFF, nbytes)  # poisoned on the device: c's pages start there
        rt.deviceSynchronize()

        if memory == "prefetch":
            started = time.perf_counter()
            for pointer in (a, b, c):
                prefetch(pointer, nbytes, self.device)
            values["h2d_s"].append(self.since(started))

        values["kernel_s"].append(self.timed_launch(shape, a, b, c, n))
        if memory == "managed" and shape != "one_thread":  # as vecadd.cu: not for the one-thread kernel
            values["kernel_resident_s"].append(self.timed_launch(shape, a, b, c, n))

        started = time.perf_counter()
        if memory == "prefetch":
            prefetch(c, nbytes, TO_HOST)
            values["d2h_s"].append(self.since(started))
        else:
            float(host_c[::PAGE_FLOATS].sum(dtype=np.float64))  # every page of c migrates back
            values["d2h_s"].append(time.perf_counter() - started)

        self.check(host_c, inputs, parts)
        del host_a, host_b, host_c
        started = time.perf_counter()
        for pointer in (a, b, c):
            rt.free(pointer)
        values["free_s"].append(self.since(started))

    def check(self, c: np.ndarray, inputs: Inputs, parts: Parts) -> None:
        if self.corrupt:  # tests only: the check must then find one wrong element per repetition
            c[c.size // 2] += np.float32(1.0)
        parts.mismatches.append(count_mismatches(c, inputs.sum))

    def run(self, elements: List[int], shapes: List[str], memory: List[str], repetitions: int,
            one_thread_repetitions: int, warmup: int, progress: bool = False) -> ProgramRun:
        """vecadd.cu's main: the device, a warm-up, then per size the copy and every (mode, shape) case."""
        started = time.perf_counter()
        run = ProgramRun(device=self.device_record())
        self.warm_up()
        for n in elements:
            run.copies.append(self.copy_record(n, repetitions))
            inputs, c_host = Inputs(n), np.empty(n, dtype=np.float32)  # the explicit mode's pageable host arrays
            for mode in memory:
                for shape in shapes:
                    slow = shape == "one_thread"  # seconds at 100 M: its own count, no warm-up (see vecadd.cu)
                    timed, untimed = (one_thread_repetitions, 0) if slow else (repetitions, warmup)
                    discarded, parts = Parts(), Parts()
                    for r in range(untimed + timed):
                        into = discarded if r < untimed else parts
                        if mode == "explicit":
                            self.explicit_repetition(shape, n, inputs, c_host, into)
                        else:
                            self.managed_repetition(shape, mode, n, inputs, into)
                    run.cases.append(parts.record(shape, mode, n, untimed))
                    if progress:
                        print(progress_line({"kind": "case", **run.cases[-1]}), flush=True)
        run.wall_s = time.perf_counter() - started
        return run
