"""Horovod's synthetic benchmark on torch.distributed, timed on the device.

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo):
    python -m workloads.synthetic --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config.

The protocol is that of Horovod's examples/pytorch/pytorch_synthetic_benchmark.py:
  - a torchvision model (workload.model, ResNet-50 by default), plain SGD, cudnn.benchmark on;
  - one random batch of workload.image_size images and random labels, made once on the device: no data
    loading, no host-to-device copy;
  - a step is zero_grad, forward, cross-entropy, backward, optimizer step (with backward_passes_per_step
    > 1: that many forward+backward passes before the step, gradients accumulated);
  - workload.num_warmup_batches steps, not timed; then workload.num_iters iterations of
    workload.num_batches_per_iter steps; each iteration's images/s is kept, per rank.
Data parallelism (workload.data_parallel): ddp = torch's DistributedDataParallel (bucket_cap_mb =
fusion_threshold_mb, fp16_compress_hook for fp16_allreduce, no_sync() for the accumulating passes,
broadcast_buffers = workload.ddp_broadcast_buffers: whether rank 0's BatchNorm buffers are sent to every rank
at each forward, as torch does by default and Horovod never does);
horovod = workloads/common/horovod_style.DistributedOptimizer with the same knobs, after broadcasting
parameters and optimizer state from rank 0 (as Horovod's script does).
With workload.paired_rounds > 0, both methods then run side by side in this process, alternating
iteration by iteration (workloads/paired.py; measurements.paired).

Where it differs from Horovod's script, and why:
  - Timing. Horovod times each iteration with timeit on the host and never synchronizes the device, so an
    iteration's time is how long the host took to *queue* its kernels (the GPU may still be busy, or may
    have been idle). Here every iteration is timed on the device: CUDA events at iteration boundaries,
    read after one synchronize at the end (perf_counter on CPU); before the timed loop the device is
    synchronized and the ranks aligned by a barrier. Horovod's host-clock times are recorded too
    (host_iteration_time_s_per_rank), so the two can be compared.
  - Every rank's rates are kept, not only rank 0's. Horovod prints rank 0's mean ± 1.96 * (population)
    std over iterations as "Img/sec per GPU" and n times that as the total; the analysis reports that and
    an honest total: the sum over ranks of each rank's own rate, per iteration, with its median and
    coefficient of variation (analysis/synthetic.py).
  - The learning rate is workload.lr as given (Horovod multiplies 0.01 by the world size); it does not
    change the speed.

workload.nccl_algo reaches NCCL through the environment: the launcher starts torchrun with its own
environment unchanged, so this workload sets NCCL_ALGO in its own process before it creates the process
group (NCCL reads the variable when it creates a communicator). It forces the all-reduce only
(NCCL_ALGO=allreduce:ring / allreduce:tree, NCCL >= 2.24): other collectives keep NCCL's choice, since
there is no tree all-gather. The value in force is recorded in environment.env.NCCL_ALGO and
measurements.nccl_algo_env.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

from conf.schema import HpmlConfig
from conf.workload_schemas import DataParallel, NcclAlgo, SyntheticConfig
from workloads.common.distributed import DistContext, all_gather_objects
from workloads.common.horovod_style import (MB, DistributedOptimizer, broadcast_optimizer_state,
                                            broadcast_parameters)
from workloads.common.timing import StepClock, wall_s
from workloads.common.worker import start_worker
from workloads.paired import paired_check, paired_measurements

HOST_METHOD = ("time.perf_counter() at the same iteration boundaries, no device synchronize (what Horovod's "
               "timeit measures: on a GPU, the time to queue the work)")
LOOP_METHOD = ("wall clock around the timed loop, per rank: device synchronized and ranks aligned by a "
               "barrier before, device synchronized after")
RATE_METHOD = ("images/s of rank r in iteration i = per-worker batch * num_batches_per_iter * "
               "backward_passes_per_step / iteration_time_s_per_rank[r][i]")

Step = Callable[[], None]


PER_COLLECTIVE_NCCL = (2, 24)  # NCCL_ALGO="allreduce:tree" (one collective's algorithm) from NCCL 2.24 on


def nccl_algo_value(algo: NcclAlgo, nccl_version: Optional[tuple]) -> str:
    """NCCL_ALGO for forcing the all-reduce's algorithm only. A bare "Tree" would apply to every collective,
    and NCCL has no tree all-gather or broadcast: torch's own all_gather_object then fails ("no algorithm/
    protocol available for function AllGather ... NCCL_ALGO was set to Tree", NCCL 2.28.9 on 2 H200)."""
    if nccl_version is not None and tuple(nccl_version[:2]) >= PER_COLLECTIVE_NCCL:
        return f"allreduce:{algo.value.lower()}"
    if algo == NcclAlgo.Tree:
        raise RuntimeError(f"workload.nccl_algo=Tree needs NCCL >= 2.24 (NCCL_ALGO=allreduce:tree); this torch "
                           f"has NCCL {nccl_version}, where NCCL_ALGO=Tree breaks every other collective")
    return algo.value  # Ring: every collective has a ring algorithm


def local_nccl_version() -> Optional[tuple]:
    try:
        return tuple(torch.cuda.nccl.version())
    except Exception:  # torch built without NCCL
        return None


def set_nccl_algo(algo: NcclAlgo, nccl_version: Optional[tuple]) -> Optional[str]:
    """Export NCCL_ALGO for this process (before the process group exists); returns the value in force."""
    if algo != NcclAlgo.auto:
        os.environ["NCCL_ALGO"] = nccl_algo_value(algo, nccl_version)
    return os.environ.get("NCCL_ALGO")


def random_batch(cfg: SyntheticConfig, batch: int, ctx: DistContext, seed: int):
    """One batch of random images and labels on the device, different on every rank (Horovod's data)."""
    generator = torch.Generator().manual_seed(seed + ctx.rank)
    images = torch.randn(batch, 3, cfg.image_size, cfg.image_size, generator=generator)
    labels = torch.randint(0, cfg.num_classes, (batch,), generator=generator)
    return images.to(ctx.device), labels.to(ctx.device)


def ddp_bucket_cap_mb(fusion_threshold_mb: float) -> float:
    """DDP's bucket_cap_mb for a fusion threshold. 0 (no fusion) becomes one byte: every gradient is larger,
    so each gets a bucket of its own. torch 2.11's DDP refuses 0 itself ("bucket_cap_mb should be set by
    now", seen on 2 H200s)."""
    return fusion_threshold_mb if fusion_threshold_mb > 0 else 1 / MB


def data_parallel(model: torch.nn.Module, cfg: SyntheticConfig, ctx: DistContext, method: DataParallel):
    """(module to call, optimizer, context for a pass whose gradients are only accumulated)."""
    if method == DataParallel.ddp:
        ddp = DistributedDataParallel(model, device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None,
                                      bucket_cap_mb=ddp_bucket_cap_mb(cfg.fusion_threshold_mb),
                                      broadcast_buffers=cfg.ddp_broadcast_buffers)  # broadcasts rank 0's state
        if cfg.fp16_allreduce:
            ddp.register_comm_hook(None, fp16_compress_hook)
        return ddp, torch.optim.SGD(ddp.parameters(), lr=cfg.lr), ddp.no_sync
    optimizer = DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=cfg.lr),
                                     fusion_threshold_mb=cfg.fusion_threshold_mb,
                                     compression_fp16=cfg.fp16_allreduce,
                                     backward_passes_per_step=cfg.backward_passes_per_step)
    broadcast_parameters(model, root=0)
    broadcast_optimizer_state(optimizer, root=0)
    return model, optimizer, contextlib.nullcontext  # the hooks count the passes themselves


def make_step(module, optimizer, accumulate_only, images, labels, passes: int) -> Step:
    """Horovod's benchmark_step; with passes > 1, gradients of passes-1 passes accumulate before the last."""

    def step() -> None:
        optimizer.zero_grad()
        for micro in range(passes):
            with accumulate_only() if micro < passes - 1 else contextlib.nullcontext():
                loss = F.cross_entropy(module(images), labels)
                (loss / passes if passes > 1 else loss).backward()
        optimizer.step()

    return step


def align_ranks(device: torch.device) -> None:
    """Finish queued work everywhere, so the timed loop starts from the same point on every rank."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_protocol(step: Step, cfg: SyntheticConfig, device: torch.device) -> Dict[str, object]:
    """Warm-up, then num_iters timed iterations of num_batches_per_iter steps, on this rank."""
    warmup_start = wall_s()
    for _ in range(cfg.num_warmup_batches):
        step()
    align_ranks(device)
    warmup = wall_s() - warmup_start
    clock, host_marks = StepClock(device), []
    loop_start = wall_s()
    clock.mark()
    host_marks.append(wall_s())
    for _ in range(cfg.num_iters):
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
    """Raw arrays (every rank) and the numbers derived from them; analysis/synthetic.py recomputes its own."""
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


def benchmark(cfg: SyntheticConfig, ctx: DistContext, seed: int) -> Dict[str, Dict]:
    if ctx.device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # as Horovod's script; the warm-up absorbs the tuning
    images, labels = random_batch(cfg, cfg.per_worker_batch(ctx.world_size), ctx, seed)

    def build_step(method: DataParallel):
        torch.manual_seed(seed)  # the same initial model on every rank (rank 0's is broadcast anyway), per method
        model = torchvision.models.get_model(cfg.model, num_classes=cfg.num_classes).to(ctx.device)
        module, optimizer, accumulate_only = data_parallel(model, cfg, ctx, method)
        step = make_step(module, optimizer, accumulate_only, images, labels, cfg.backward_passes_per_step)
        return model, optimizer, step

    model, optimizer, step = build_step(cfg.data_parallel)
    mine = run_protocol(step, cfg, ctx.device)
    per_rank = all_gather_objects(mine)
    if isinstance(optimizer, DistributedOptimizer):
        optimizer.remove_hooks()
    paired = None
    if cfg.paired_rounds:  # both methods side by side in this process (workloads/paired.py)
        times = paired_check(lambda method: build_step(method)[2], cfg.paired_rounds, cfg.num_warmup_batches,
                             cfg.num_batches_per_iter, ctx.device, align_ranks)
        paired = paired_measurements(all_gather_objects(times), cfg.paired_rounds,
                                     images_per_iteration(cfg, ctx.world_size))
    extra = {"parameters": sum(p.numel() for p in model.parameters()),
             "gradient_bytes": sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad),
             "nccl_algo_env": os.environ.get("NCCL_ALGO"),
             "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if ctx.device.type == "cuda" else None,
             "paired": paired}
    return summarize(per_rank, cfg, ctx.world_size, extra)


def timing_methods(device: torch.device) -> Dict[str, str]:
    return {"iteration": StepClock(device).method, "host_iteration": HOST_METHOD, "loop": LOOP_METHOD,
            "rate": RATE_METHOD}


def export_nccl_algo(config: HpmlConfig) -> None:
    """Before the process group exists: NCCL reads NCCL_ALGO when it creates a communicator."""
    cfg: SyntheticConfig = config.workload
    set_nccl_algo(cfg.nccl_algo, local_nccl_version() if cfg.nccl_algo != NcclAlgo.auto else None)


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv, before_init=export_nccl_algo)
    cfg: SyntheticConfig = worker.config.workload
    ctx = worker.ctx
    with worker.reporting(timing_methods(ctx.device)) as body:
        if cfg.nccl_algo != NcclAlgo.auto and ctx.backend != "nccl":
            raise RuntimeError(f"workload.nccl_algo={cfg.nccl_algo.value} needs the nccl backend, but this "
                               f"point runs {ctx.backend}; use collective=nccl_ring or nccl_tree on GPUs")
        body.update(benchmark(cfg, ctx, worker.config.sweep.seed))
        if ctx.is_main:
            print_like_horovod(body["derived"], cfg, ctx)


if __name__ == "__main__":
    main()
