"""The compiled programs' side of the worker: where the sources are, the command line they take, and the
JSON lines they print (kernels/vecadd_host.h writes them; the NVRTC path builds the same records in Python).

    {"kind": "device", "name": ..., "compute_capability": "9.0", ...}           the GPU, once
    {"kind": "copy", "elements": K, "bytes": 6K, "copy_s": [...]}                 per size (GPU only)
    {"kind": "case", "elements": K, "shape": ..., "memory": ..., "alloc_s": [...], ..., "mismatches": [...]}
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
KERNELS_HEADER = KERNELS_DIR / "vecadd_kernels.h"  # the three __global__ kernels: one source for both paths
HOST_HEADER = KERNELS_DIR / "vecadd_host.h"  # fill, check, arguments, JSON lines
CUDA_PROGRAM = KERNELS_DIR / "vecadd.cu"
CPU_PROGRAM = KERNELS_DIR / "vecadd_cpu.cpp"

# What each part of a case times; result.json's "timing" (the table of kernels/vecadd.cu in words).
PART_METHODS = {
    "alloc_s": "cudaMalloc x 3 (explicit) or cudaMallocManaged x 3 (managed, prefetch) or malloc x 3 (cpu), "
               "host clock, ended by cudaDeviceSynchronize",
    "fill_s": "managed, prefetch: the host writing a and b into the managed arrays (not in the total); "
              "null elsewhere (explicit fills its pageable host arrays once per size, untimed)",
    "h2d_s": "explicit: cudaMemcpy of a and b; prefetch: cudaMemPrefetchAsync of a, b, c to the device; "
             "null for managed (the pages migrate inside the first kernel run) and cpu",
    "kernel_s": "the kernel between two CUDA events (managed: the first run after the host wrote a and b, "
                "first-touch migration included); cpu: the loop, host clock",
    "kernel_resident_s": "managed only: a second run of the kernel, pages already on the device",
    "d2h_s": "explicit: cudaMemcpy of c; prefetch: cudaMemPrefetchAsync of c to the host; managed: the host "
             "reading one float per 4 KiB page of c (each page migrates back); null for cpu",
    "free_s": "cudaFree x 3 (free x 3 on the cpu), host clock, ended by cudaDeviceSynchronize",
    "total": "alloc + h2d + kernel + d2h + free of each repetition (parts a mode lacks count 0); the host's "
             "fill and the exact check of c (poisoned with NaN before each repetition) are outside it",
    "copy_s": "a device-to-device cudaMemcpy of 6 K bytes between two CUDA events: it reads and writes the "
              "12 K bytes the kernel moves",
}


class ProgramError(RuntimeError):
    """A vecadd program failed: its last error line says which CUDA call (or check) and why."""


@dataclass
class ProgramRun:
    """What one program run printed, sorted by kind, and how long it took from start to exit."""

    device: Optional[Dict[str, Any]] = None
    copies: List[Dict[str, Any]] = field(default_factory=list)
    cases: List[Dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0

    def add(self, line: Dict[str, Any]) -> None:
        kind = line.get("kind")
        if kind == "device":
            self.device = {k: v for k, v in line.items() if k != "kind"}
        elif kind == "copy":
            self.copies.append({k: v for k, v in line.items() if k != "kind"})
        elif kind == "case":
            self.cases.append({k: v for k, v in line.items() if k != "kind"})
        else:
            raise ProgramError(f"unknown line kind {kind!r} from a vecadd program")


def grid_arguments(elements: Sequence[int], repetitions: int, warmup: int) -> List[str]:
    """The arguments both programs take; the CUDA one adds --device, --shapes, --memory, --one-thread-reps."""
    return ["--sizes", ",".join(str(n) for n in elements), "--reps", str(repetitions), "--warmup", str(warmup)]


def progress_line(line: Dict[str, Any]) -> str:
    """One line per finished case or copy, for the point's log while the grid runs."""
    if line.get("kind") == "case":
        kernel = sorted(line["kernel_s"])[len(line["kernel_s"]) // 2]
        return (f"[cuda_vecadd] K={line['elements']:,} {line['shape']} {line['memory']}: kernel {kernel * 1e3:.4g} ms "
                f"(median of {line['repetitions']}), wrong elements {sum(line['mismatches'])}")
    if line.get("kind") == "copy":
        return f"[cuda_vecadd] K={line['elements']:,} device copy: {min(line['copy_s']) * 1e3:.4g} ms (best)"
    return f"[cuda_vecadd] {line.get('name', line)}"


def run_program(binary: Path, arguments: Sequence[str], progress: bool = False) -> ProgramRun:
    """Runs a built program to its end (printing a line per case when `progress`); a non-zero exit is a
    ProgramError with its last stderr line."""
    started = time.perf_counter()
    process = subprocess.Popen([str(binary), *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run, other = ProgramRun(), []
    for text in process.stdout:  # the programs flush each line: the log shows the grid as it goes
        if text.startswith("{"):
            line = json.loads(text)
            run.add(line)
            if progress:
                print(progress_line(line), flush=True)
        else:
            other.append(text)
    stderr = process.stderr.read()
    if process.wait() != 0:
        lines = stderr.strip().splitlines() or [f"no error output (stdout: {''.join(other)[-200:]!r})"]
        raise ProgramError(f"{binary.name} exited {process.returncode}: {lines[-1]}")
    run.wall_s = time.perf_counter() - started
    return run
