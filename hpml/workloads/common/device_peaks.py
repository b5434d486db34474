"""Measured peaks of one device: matmul TFLOP/s, device memory and host-link GB/s, as raw samples.

Shared by the hardware probe (workloads/probe/) and the PALEO workload (workloads/paleo/). Every function
takes a torch.device; warms up for at least `warmup` repetitions and `warmup_s` seconds (warm_up); times at least
`reps` repetitions and `measure_s` seconds (time_repetitions); and returns a JSON-ready record whose `times_s`
holds one duration per timed repetition (seconds). Rates come from conf.hardware.gpu_peaks' formulas
(tflops_per_s, GBps) applied to them, by the caller or the analysis. All work on the CPU too, except the host
transfers (CUDA only). The seconds matter on a GPU at its power cap: see warm_up and time_repetitions.

What each times (see the METHOD strings, which the records carry):
- matmul_times      one torch.matmul(a, b, out=c) of n x n by n x n; FLOPs = 2 n^3 (matmul_flops). Inputs are
                    random normal (never zeros: a matmul on zeros runs faster), in the dtype asked for; fp32
                    runs with TF32 off, tf32 is fp32 with TF32 on. Where one input set fits in the GPU's L2
                    cache, several sets rotate so that each product reads its inputs from device memory.
                    CUDA events at repetition boundaries, read after one synchronize (perf_counter on CPU).
- matmul_reference_times
                    the same product through plain torch.matmul(a, b) (a new output each call), timed another
                    way: host wall clock around a loop of `calls` products, the device synchronized before and
                    after; one sample = loop time / calls. The independent check of matmul_times; paired with
                    it round by round in matmul_paired_times (what the probe runs).
- copy_times        dst.copy_(src) of nbytes on the device; moves 2 x nbytes (each byte read once, written once).
- triad_times       STREAM's triad a = b + s * c (torch.add(b, c, alpha=s, out=a)) over float32 arrays of
                    nbytes each; moves 3 x nbytes (two arrays read, one written).
- transfer_times    one copy of nbytes host-to-device ("h2d") or device-to-host ("d2h"), with pinned (page-
                    locked) or pageable host memory; moves nbytes over the host link. Host wall clock from the
                    call to the end of a device synchronize: a pageable copy is staged through a pinned buffer
                    by the CUDA driver on the host, which device events would not see whole.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Dict, Iterator, List

import torch

from hpml.contract.rates import matmul_flops
from hpml.workloads.common.timing import StepClock, synchronize, wall_s

# matmul dtypes, named as conf.hardware.gpu_peaks' tflops keys; tf32 is float32 with TF32 tensor cores on
MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16")
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# torch.set_float32_matmul_precision: "highest" keeps float32 matmuls in IEEE fp32, "high" lets them use TF32
FLOAT32_PRECISION = {"fp32": "highest", "tf32": "high"}

TRANSFER_DIRECTIONS = ("h2d", "d2h")
TRIAD_SCALAR = 3.0  # STREAM's s
MAX_INPUT_SETS = 64  # rotation's bound: tiny matrices stay in L2 whatever we do (and are launch-bound anyway)
L2_MULTIPLE = 2  # rotate over at least twice the L2's bytes, so a set is evicted before it comes round again

EVENT_METHOD = "CUDA events at repetition boundaries, read after one torch.cuda.synchronize()"
CPU_METHOD = "time.perf_counter() at repetition boundaries (CPU work is synchronous)"
REFERENCE_METHOD = ("plain torch.matmul(a, b) in a loop, host wall clock (time.perf_counter) from a device "
                    "synchronize before the loop to one after it; sample = loop time / calls")
PAIRED_NOTE = "; in rounds alternating with the other method (matmul_paired_times)"
TRANSFER_METHOD = ("host wall clock (time.perf_counter) from the copy call to the end of a device synchronize "
                   "after it, one copy per repetition")


def repetition_method(device: torch.device) -> str:
    return EVENT_METHOD if device.type == "cuda" else CPU_METHOD


def warm_up(step: Callable[[int], None], device: torch.device, warmup: int, warmup_s: float) -> int:
    """Runs step(i) untimed at least `warmup` times and for at least `warmup_s` seconds (the device synchronized
    after each, so the seconds are the device's work, not launches queued ahead); how many ran.

    Why seconds: under its 700 W cap (NVML's throttle reason "SW power cap") an H200 ran bf16 matmuls at ~785
    TFLOP/s for the first tens of milliseconds of load, then clocked down from 1980 MHz to 1300-1600 MHz
    (590-690 TFLOP/s): a warm-up counted in repetitions measures that burst, not the rate a long job gets
    (docs/results/probe/README.md)."""
    start, done = wall_s(), 0
    while done < warmup or wall_s() - start < warmup_s:
        step(done)
        synchronize(device)
        done += 1
    return done


def time_repetitions(step: Callable[[int], None], device: torch.device, warmup: int, reps: int,
                     warmup_s: float = 0.0, measure_s: float = 0.0) -> List[float]:
    """Warms up (warm_up), then times step(i) repetition by repetition, in rounds of `reps` back to back, until
    at least `measure_s` seconds have passed (one round at least); seconds per repetition, every round's.

    Between rounds the device is synchronized (the events are read); that gap falls between two rounds, in no
    repetition's interval. Why seconds again: under a power cap the clock drifts by up to 15 % within a
    second, so a window of a few milliseconds catches one moment of it (docs/results/probe/README.md)."""
    _check_count("reps", reps)
    done = warm_up(step, device, warmup, warmup_s)
    times: List[float] = []
    start = wall_s()
    while not times or wall_s() - start < measure_s:
        times += timed_round(step, device, done, reps)  # synchronizes: the wall clock counts finished work
        done += reps
    return times


def timed_round(step: Callable[[int], None], device: torch.device, first: int, count: int) -> List[float]:
    """step(first), ..., step(first + count - 1) back to back, each timed (StepClock); one synchronize at the end."""
    clock = StepClock(device)
    clock.mark()
    for i in range(first, first + count):
        step(i)
        clock.mark()
    return clock.intervals_s()


@contextlib.contextmanager
def float32_matmul_precision(dtype: str) -> Iterator[None]:
    """fp32: TF32 off; tf32: TF32 on; the setting before is restored after (other dtypes: left as it is)."""
    before = torch.get_float32_matmul_precision()
    if dtype in FLOAT32_PRECISION:
        torch.set_float32_matmul_precision(FLOAT32_PRECISION[dtype])
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _check_count(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


def _check_matmul_dtype(dtype: str, device: torch.device) -> None:
    if dtype not in MATMUL_DTYPES:
        raise ValueError(f"matmul dtype must be one of {', '.join(MATMUL_DTYPES)}, got {dtype!r}")
    if dtype == "tf32" and device.type != "cuda":
        raise ValueError("tf32 is a mode of NVIDIA tensor cores: there is no tf32 matmul on the CPU")


def l2_cache_bytes(device: torch.device) -> int:
    """The GPU's L2 cache size; 0 on the CPU (no rotation there)."""
    if device.type != "cuda":
        return 0
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))


def input_sets_for(set_bytes: int, l2_bytes: int) -> int:
    """How many input sets to rotate: 1 when one set is at least the L2; otherwise enough sets to cover
    L2_MULTIPLE x the L2, at most MAX_INPUT_SETS."""
    if l2_bytes <= 0 or set_bytes >= l2_bytes:
        return 1
    return min(MAX_INPUT_SETS, math.ceil(L2_MULTIPLE * l2_bytes / set_bytes))


def random_matrices(n: int, dtype: str, device: torch.device, count: int, seed: int) -> List[torch.Tensor]:
    """`count` random normal n x n matrices in dtype, made on the device from a seeded generator."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return [torch.randn(n, n, generator=generator, device=device, dtype=torch.float32).to(TORCH_DTYPES[dtype])
            for _ in range(count)]


def _matmul_inputs(device: torch.device, n: int, dtype: str, seed: int):
    """Random inputs (rotating sets where one fits in L2, see input_sets_for) and one output, for dtype."""
    _check_matmul_dtype(dtype, device)
    element = torch.finfo(TORCH_DTYPES[dtype]).bits // 8
    sets = input_sets_for(2 * n * n * element, l2_cache_bytes(device))
    a, b = random_matrices(n, dtype, device, sets, seed), random_matrices(n, dtype, device, sets, seed + 1)
    return a, b, torch.empty(n, n, device=device, dtype=TORCH_DTYPES[dtype])


def _matmul_record(n: int, dtype: str, times: List[float], method: str, **extra: Any) -> Dict[str, Any]:
    return {"n": n, "dtype": dtype, "flops": matmul_flops(n), **extra, "times_s": times, "method": method}


def _reference_sample(a: torch.Tensor, b: torch.Tensor, calls: int, device: torch.device) -> float:
    """Seconds per product of `calls` plain torch.matmul(a, b) (a new output each), wall-clocked as one loop."""
    synchronize(device)
    start = wall_s()
    for _ in range(calls):
        torch.matmul(a, b)
    synchronize(device)
    return (wall_s() - start) / calls


def matmul_times(device: torch.device, n: int, dtype: str, warmup: int, reps: int, seed: int = 0,
                 warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Any]:
    """One n x n x n product per repetition (see the module docstring); 2 n^3 FLOPs each."""
    a, b, out = _matmul_inputs(device, n, dtype, seed)
    with float32_matmul_precision(dtype):
        times = time_repetitions(lambda i: torch.matmul(a[i % len(a)], b[i % len(a)], out=out), device, warmup,
                                 reps, warmup_s, measure_s)
    return _matmul_record(n, dtype, times, repetition_method(device), input_sets=len(a))


def matmul_reference_times(device: torch.device, n: int, dtype: str, calls: int, samples: int, warmup: int,
                           seed: int = 0, warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Any]:
    """The same product timed independently of matmul_times: plain torch.matmul in wall-clocked loops of
    `calls`, at least `samples` loops and `measure_s` seconds."""
    _check_count("calls", calls)
    _check_count("samples", samples)
    a, b, _ = _matmul_inputs(device, n, dtype, seed)
    times: List[float] = []
    with float32_matmul_precision(dtype):
        warm_up(lambda i: torch.matmul(a[0], b[0]), device, warmup, warmup_s)
        start = wall_s()
        while len(times) < samples or wall_s() - start < measure_s:
            times.append(_reference_sample(a[0], b[0], calls, device))
    return _matmul_record(n, dtype, times, REFERENCE_METHOD, calls_per_sample=calls)


def matmul_paired_times(device: torch.device, n: int, dtype: str, calls: int, rounds: int, warmup: int,
                        seed: int = 0, warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Dict[str, Any]]:
    """matmul_times' timing and the reference's, in alternating rounds on one warmed-up GPU: each round `calls`
    products timed one by one (the probe), then `calls` plain torch.matmul in one wall-clocked loop (the
    reference); at least `rounds` rounds and `measure_s` seconds. Paired, because under a power cap the clock
    drifts by more than the 5 % the two are compared within: rounds of a few tens of milliseconds put both
    methods through the same drift (docs/results/probe/README.md). {"probe": record, "reference": record}."""
    _check_count("calls", calls)
    _check_count("rounds", rounds)
    a, b, out = _matmul_inputs(device, n, dtype, seed)
    probe: List[float] = []
    reference: List[float] = []

    def product(i: int) -> None:
        torch.matmul(a[i % len(a)], b[i % len(a)], out=out)

    with float32_matmul_precision(dtype):
        done = warm_up(product, device, warmup, warmup_s)
        start = wall_s()
        while len(reference) < rounds or wall_s() - start < measure_s:
            probe += timed_round(product, device, done, calls)
            done += calls
            reference.append(_reference_sample(a[0], b[0], calls, device))
    return {"probe": _matmul_record(n, dtype, probe, repetition_method(device) + PAIRED_NOTE, input_sets=len(a)),
            "reference": _matmul_record(n, dtype, reference, REFERENCE_METHOD + PAIRED_NOTE, calls_per_sample=calls)}


def _float32_elements(nbytes: int) -> int:
    if nbytes < 4 or nbytes % 4:
        raise ValueError(f"nbytes must be a positive multiple of 4 (float32 elements), got {nbytes}")
    return nbytes // 4


def copy_times(device: torch.device, nbytes: int, warmup: int, reps: int, seed: int = 0,
               warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Any]:
    """dst.copy_(src) of nbytes on the device; bytes_moved = 2 x nbytes (read + written)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    src = torch.randn(_float32_elements(nbytes), generator=generator, device=device)
    dst = torch.empty_like(src)
    times = time_repetitions(lambda i: dst.copy_(src), device, warmup, reps, warmup_s, measure_s)
    return {"buffer_bytes": nbytes, "bytes_moved": 2 * nbytes, "times_s": times, "method": repetition_method(device)}


def triad(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, scalar: float = TRIAD_SCALAR) -> torch.Tensor:
    """STREAM's triad in place: a = b + scalar * c, one kernel (torch.add with alpha), no temporary."""
    return torch.add(b, c, alpha=scalar, out=a)


def triad_times(device: torch.device, nbytes: int, warmup: int, reps: int, seed: int = 0,
                warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Any]:
    """a = b + s * c over float32 arrays of nbytes each; bytes_moved = 3 x nbytes (2 read, 1 written)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    elements = _float32_elements(nbytes)
    b = torch.randn(elements, generator=generator, device=device)
    c = torch.randn(elements, generator=generator, device=device)
    a = torch.empty_like(b)
    times = time_repetitions(lambda i: triad(a, b, c), device, warmup, reps, warmup_s, measure_s)
    return {"array_bytes": nbytes, "bytes_moved": 3 * nbytes, "scalar": TRIAD_SCALAR, "times_s": times,
            "method": repetition_method(device)}


def transfer_times(device: torch.device, nbytes: int, direction: str, pinned: bool, warmup: int,
                   reps: int, warmup_s: float = 0.0, measure_s: float = 0.0) -> Dict[str, Any]:
    """One host<->device copy of nbytes per repetition; bytes_moved = nbytes. CUDA devices only."""
    if device.type != "cuda":
        raise ValueError(f"host transfers need a CUDA device, got {device}")
    if direction not in TRANSFER_DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(TRANSFER_DIRECTIONS)}, got {direction!r}")
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")
    _check_count("reps", reps)
    host = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    if pinned:
        host = host.pin_memory()
    on_device = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst, src = (on_device, host) if direction == "h2d" else (host, on_device)

    def copy(i: int) -> None:
        dst.copy_(src, non_blocking=pinned)  # pinned: an asynchronous DMA, waited for by the synchronize

    warm_up(copy, device, warmup, warmup_s)
    times: List[float] = []
    first = wall_s()
    while len(times) < reps or wall_s() - first < measure_s:
        synchronize(device)
        start = wall_s()
        copy(len(times))
        synchronize(device)
        times.append(wall_s() - start)
    return {"direction": direction, "pinned": pinned, "bytes_moved": nbytes, "times_s": times,
            "method": TRANSFER_METHOD}
