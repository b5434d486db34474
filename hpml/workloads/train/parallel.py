"""DDP or DataParallel, and how the communication time of DDP is measured.

Parallel modes (workload.parallel):
- ddp: DistributedDataParallel, one torchrun worker per GPU (or per CPU slot on gloo). Gradients are
  averaged by all-reduces of ~25 MB buckets that start while backward still runs.
- dp: nn.DataParallel in one worker over workload.dp_devices GPUs of the node: every forward scatters the
  batch, replicates the model from GPU 0 and gathers the outputs on GPU 0; backward reduces the gradients
  onto GPU 0; the optimizer steps there. Without CUDA, PyTorch's DataParallel calls the module as is:
  the same code path runs on a CPU-only machine with one device.

Communication time of DDP, measured two ways after training (the result's `timing.comm` says so):
1. no_sync probe (`comm_probe`): on one batch already on the device, blocks of forward+backward steps run
   under DDP's no_sync() (no gradient all-reduce: compute only) and synced, alternating; each step timed
   (CUDA events, or perf_counter on CPU). exposed comm per step = median(synced) - median(no_sync): the
   communication that backward could not hide. No optimizer step: the weights do not change.
2. profiler (`nccl_kernel_seconds`, GPU only): torch.profiler over synced steps; the summed device time of
   kernels whose name contains "nccl", per step: the whole all-reduce time, overlapped or not (it also
   counts time an NCCL kernel waits for a slower rank).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import torch
from torch.nn.parallel import DataParallel, DistributedDataParallel

from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_choices import Parallel
from hpml.workloads.common.distributed import DistContext

COMM_METHOD = ("after training, on one batch on the device: forward+backward steps under DDP no_sync() "
               "(compute only) and synced, alternating blocks, each step timed (CUDA events / perf_counter); "
               "exposed comm per step = median(synced) - median(no_sync), no optimizer step. GPU: "
               "torch.profiler over synced steps, device time of kernels named *nccl* per step (the whole "
               "all-reduce time, overlapped or not)")


def wrap_model(model: torch.nn.Module, cfg: TrainConfig, ctx: DistContext) -> torch.nn.Module:
    if cfg.parallel == Parallel.none:  # one worker (the schema checked it): nothing to synchronize
        return model
    if cfg.parallel == Parallel.ddp:
        return DistributedDataParallel(model, device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None)
    if ctx.device.type == "cuda":
        if torch.cuda.device_count() < cfg.dp_devices:
            raise RuntimeError(f"workload.dp_devices={cfg.dp_devices} but this worker sees "
                               f"{torch.cuda.device_count()} GPU(s)")
        return DataParallel(model, device_ids=list(range(cfg.dp_devices)))
    if torch.cuda.is_available():  # DataParallel would scatter to the GPUs, whatever the model's device
        raise RuntimeError("workload.parallel=dp with workload.device=cpu on a machine with GPUs: "
                           "DataParallel always uses the GPUs; use device=auto/cuda or parallel=ddp")
    return DataParallel(model)  # no CUDA: calls the module itself


def ddp_bucket_bytes(model: torch.nn.Module) -> Optional[List[int]]:
    """Sizes of DDP's gradient buckets (after its first iterations rebuilt them); None for DataParallel."""
    if not isinstance(model, DistributedDataParallel):
        return None
    sizes = str(model._get_ddp_logging_data().get("bucket_sizes", ""))
    return [int(size) for size in sizes.split(",") if size.strip()] or None


class _StepTimer:
    """Per-step times of a block: CUDA events read after the block, or perf_counter on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def time_steps(self, step: Callable[[], None], steps: int) -> List[float]:
        if not self.cuda:
            marks = [time.perf_counter()]
            for _ in range(steps):
                step()
                marks.append(time.perf_counter())
            return [b - a for a, b in zip(marks, marks[1:])]
        events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
        events[0].record()
        for i in range(steps):
            step()
            events[i + 1].record()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) / 1000.0 for a, b in zip(events, events[1:])]


def comm_probe(model: torch.nn.Module, forward_backward: Callable[[], None], device: torch.device,
               steps: int, rounds: int = 2) -> Dict[str, object]:
    """Step times of forward+backward under no_sync() and synced, in `rounds` alternating block pairs
    (each block preceded by one untimed step of its kind). Raw times and the medians' difference."""
    timer = _StepTimer(device)
    times: Dict[str, List[float]] = {"no_sync": [], "sync": []}
    for _ in range(rounds):
        for mode in ("no_sync", "sync"):
            context = model.no_sync if mode == "no_sync" else contextlib.nullcontext

            def step() -> None:
                with context():
                    forward_backward()

            step()  # untimed: the first synced step after no_sync ones all-reduces in a cold state
            times[mode] += timer.time_steps(step, steps)
    compute, synced = statistics.median(times["no_sync"]), statistics.median(times["sync"])
    return {"steps_per_block": steps, "rounds": rounds, "no_sync_step_s": times["no_sync"],
            "sync_step_s": times["sync"], "no_sync_median_s": compute, "sync_median_s": synced,
            "exposed_comm_s": synced - compute}


def nccl_seconds(kernels: Iterable[Tuple[str, float]]) -> float:
    """Total seconds of the NCCL kernels among (kernel name, device time in microseconds) pairs."""
    return sum(us for name, us in kernels if "nccl" in name.lower()) / 1e6


def nccl_kernel_seconds(forward_backward: Callable[[], None], steps: int) -> Dict[str, object]:
    """GPU only: the NCCL kernel time per synced step, from torch.profiler (device activity only)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    forward_backward()  # untimed
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            forward_backward()
        torch.cuda.synchronize()
    kernels = [(e.key, e.device_time_total) for e in prof.key_averages() if e.device_type == DeviceType.CUDA]
    nccl = [(name, us) for name, us in kernels if "nccl" in name.lower()]
    return {"steps": steps, "nccl_kernel_s_per_step": nccl_seconds(kernels) / steps,
            "nccl_kernels_us": {name: us for name, us in nccl},
            "all_kernels_s_per_step": sum(us for _, us in kernels) / 1e6 / steps}
