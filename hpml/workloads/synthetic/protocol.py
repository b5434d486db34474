"""The synthetic benchmark's protocol on one rank (warm-up, then timed iterations) and what the result makes
of every rank's times: raw arrays, Horovod's printed numbers and the sum over ranks."""

from __future__ import annotations

import statistics
from typing import Callable, Dict, List

import torch
import torch.distributed as dist

from hpml.conf.workload.synthetic import SyntheticConfig
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.timing import StepClock, wall_s

HOST_METHOD = ("time.perf_counter() at the same iteration boundaries, no device synchronize (what Horovod's "
               "timeit measures: on a GPU, the time to queue the work)")

LOOP_METHOD = ("wall clock around the timed loop, per rank: device synchronized and ranks aligned by a "
               "barrier before, device synchronized after")

RATE_METHOD = ("images/s of rank r in iteration i = per-worker batch * num_batches_per_iter * "
               "backward_passes_per_step / iteration_time_s_per_rank[r][i]")


Step = Callable[[], None]


def align_ranks(device: torch.device) -> None:
    """Finish queued work everywhere, so the timed loop starts from the same point on every rank."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_protocol(step: Step, cfg: SyntheticConfig, device: torch.device, telemetry: Telemetry = NO_TELEMETRY,
                 world_size: int = 1) -> Dict[str, object]:
    """Warm-up, then num_iters timed iterations of num_batches_per_iter steps, on this rank. GPU telemetry
    marks the warm-up and each timed iteration (its images: every rank's)."""
    images = images_per_iteration(cfg, world_size) * world_size
    warmup_images = cfg.num_warmup_batches * cfg.per_worker_batch(world_size) * cfg.backward_passes_per_step
    warmup_start = wall_s()
    with telemetry.phase("warmup", samples=warmup_images * world_size):
        for _ in range(cfg.num_warmup_batches):
            step()
        align_ranks(device)
    warmup = wall_s() - warmup_start
    clock, host_marks = StepClock(device), []
    loop_start = wall_s()
    clock.mark()
    host_marks.append(wall_s())
    for iteration in range(cfg.num_iters):
        with telemetry.phase("iteration", index=iteration, timed=True, samples=images):
            for _ in range(cfg.num_batches_per_iter):
                step()
        clock.mark()
        host_marks.append(wall_s())
    device_times = clock.intervals_s()  # the one synchronize
    loop = wall_s() - loop_start
    host_times = [b - a for a, b in zip(host_marks, host_marks[1:])]
    return {"iteration_time_s": device_times, "host_iteration_time_s": host_times, "loop_time_s": loop,
            "warmup_time_s": warmup}


def images_per_iteration(cfg: SyntheticConfig, world_size: int) -> int:
    """Images one rank processes in one timed iteration."""
    return cfg.per_worker_batch(world_size) * cfg.num_batches_per_iter * cfg.backward_passes_per_step


def horovod_numbers(rates: List[float], world_size: int) -> Dict[str, float]:
    """What Horovod prints from rank 0's rates: mean ± 1.96 * population std (np.std, ddof=0), per GPU and
    times the world size ("Total img/sec on N GPU(s)")."""
    mean, spread = statistics.fmean(rates), 1.96 * statistics.pstdev(rates)
    return {"per_gpu_mean": mean, "per_gpu_pm": spread, "total_mean": mean * world_size,
            "total_pm": spread * world_size}


def summarize(per_rank: List[Dict[str, object]], cfg: SyntheticConfig, world_size: int,
              extra: Dict[str, object]) -> Dict[str, Dict]:
    """Raw arrays (every rank) and the numbers derived from them; the analysis (analysis/synthetic/)
    recomputes its own."""
    batch = cfg.per_worker_batch(world_size)
    images = images_per_iteration(cfg, world_size)
    device_times = [rank["iteration_time_s"] for rank in per_rank]
    rates = [[images / t for t in times] for times in device_times]
    totals = [sum(column) for column in zip(*rates)]  # per iteration: the sum of every rank's own rate
    measurements = {
        "per_worker_batch": batch,
        "global_batch": batch * world_size,
        "images_per_iteration_per_rank": images,
        "num_warmup_batches": cfg.num_warmup_batches,
        "num_batches_per_iter": cfg.num_batches_per_iter,
        "num_iters": cfg.num_iters,
        "backward_passes_per_step": cfg.backward_passes_per_step,
        "iteration_time_s_per_rank": device_times,  # [rank][iteration], device-side
        "host_iteration_time_s_per_rank": [rank["host_iteration_time_s"] for rank in per_rank],
        "loop_time_s_per_rank": [rank["loop_time_s"] for rank in per_rank],
        "warmup_time_s_per_rank": [rank["warmup_time_s"] for rank in per_rank],
        **extra,
    }
    derived = {
        "horovod": horovod_numbers(rates[0], world_size),
        "total_images_per_s_median": statistics.median(totals),
        "total_images_per_s_cv": (statistics.stdev(totals) / statistics.fmean(totals)) if len(totals) > 1 else 0.0,
        "cv_ddof": 1,
    }
    return {"measurements": measurements, "derived": derived}


def print_like_horovod(derived: Dict, cfg: SyntheticConfig, ctx: DistContext) -> None:
    hvd, unit = derived["horovod"], "GPU" if ctx.device.type == "cuda" else "CPU"
    print(f"[rank 0] Model: {cfg.model}, batch size {cfg.per_worker_batch(ctx.world_size)} per {unit}, "
          f"{cfg.data_parallel.value}, {ctx.backend}\n"
          f"[rank 0] Img/sec per {unit}: {hvd['per_gpu_mean']:.1f} +-{hvd['per_gpu_pm']:.1f} (Horovod's way, "
          f"timed on the device)\n"
          f"[rank 0] Total img/sec on {ctx.world_size} {unit}(s): {hvd['total_mean']:.1f} +-{hvd['total_pm']:.1f}\n"
          f"[rank 0] Sum over ranks, median over iterations: {derived['total_images_per_s_median']:.1f} img/s "
          f"(CV {derived['total_images_per_s_cv']:.2%}, ddof=1)", flush=True)


def timing_methods(device: torch.device) -> Dict[str, str]:
    return {"iteration": StepClock(device).method, "host_iteration": HOST_METHOD, "loop": LOOP_METHOD,
            "rate": RATE_METHOD}
