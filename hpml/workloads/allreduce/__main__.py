"""All-reduce bandwidth micro-benchmark, like nccl-tests' all_reduce_perf (sum, in place).

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo):
    python -m hpml.workloads.allreduce --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config.

For every message size, doubling from workload.min_bytes to workload.max_bytes:
  1. check   element i is 1 on rank i mod n and 0 on the others, so after one all-reduce every element
             must be exactly 1 (recorded as `correct`; a wrong sum fails the point, after every size was
             measured);
  2. warm-up workload.warmup_iters all-reduces, not timed;
  3. timed   workload.iters all-reduces, timed the way workload.impl says:
               hpml  each iteration: CUDA events at iteration boundaries, read after one synchronize
                     (perf_counter on CPU); no synchronize inside the loop;
               raw   only the whole loop: barrier + synchronize before, synchronize after, wall clock. The
                     reference that hpml's per-iteration timing is compared with.
             Both record each rank's wall-clock time of the whole loop too.

Derived numbers use nccl-tests' definitions: the time of an iteration is that of its slowest rank, and the
size's time is the mean over iterations; algbw = bytes / time; busbw = algbw * 2(n-1)/n (0 for one rank);
utilization = busbw / workload.link_peak_GBps (per direction, from conf/hardware/). GB = 1e9 bytes.
(nccl-tests itself averages the ranks by default, -a 1; the slowest rank is its -a 3. The per-rank arrays
are kept, so the analysis can take either.) The formulas are contract/collectives.py's, which the analysis
uses too when it recomputes them from the raw arrays.

Per-iteration events cost a host call each; where launches are the bottleneck (small messages) that shows in
impl=hpml's times. What it cost on H200s: docs/studies/horovod-synthetic.md, "The cost of timing every
iteration". For latency-bound sizes, take impl=raw's numbers (or both, from one sweep: workload.impl=hpml,raw).
"""

from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.dtypes import DTYPE_BYTES, DType
from hpml.conf.workload.allreduce import AllreduceConfig, AllreduceImpl
from hpml.contract.collectives import algbw_GBps, busbw_GBps
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.timing import StepClock, synchronize, wall_s
from hpml.workloads.common.worker import start_worker

TORCH_DTYPES = {DType.float32: torch.float32, DType.bfloat16: torch.bfloat16, DType.float16: torch.float16}

LOOP_METHOD = ("wall clock (time.perf_counter) around the timed loop, per rank: device synchronized and "
               "ranks aligned by a barrier before, device synchronized after")
TIME_METHOD = ("per size: the mean over timed iterations of the slowest rank's iteration time (impl=hpml), "
               "or the slowest rank's loop time / iters (impl=raw)")


class WrongSum(RuntimeError):
    """An all-reduce returned a wrong sum: the measured times are not to be trusted."""


def align_ranks(device: torch.device) -> None:
    """Finish this rank's queued work, then wait for every rank, so a timed loop starts together."""
    synchronize(device)
    dist.barrier()
    synchronize(device)  # NCCL's barrier is itself a collective on the device: let it finish


def fill_check_pattern(buffer: torch.Tensor, rank: int, world_size: int) -> None:
    """Element i is 1 on rank i mod n, 0 elsewhere: the sum is 1 everywhere, exact in every dtype at any n
    (each partial sum is 0 or 1; bfloat16 could not count past 256 ones), and a rank whose contribution
    is lost or doubled leaves 0s or 2s in its own elements (a rank beyond the element count owns none)."""
    buffer.zero_()
    buffer[rank::world_size] = 1


def sum_is_correct(buffer: torch.Tensor) -> bool:
    return bool(torch.all(buffer == 1))


def time_each_iteration(buffer: torch.Tensor, iters: int, device: torch.device,
                        telemetry: Telemetry = NO_TELEMETRY) -> Tuple[List[float], float]:
    """impl=hpml: (seconds per iteration, seconds for the whole loop) on this rank."""
    clock = StepClock(device)
    align_ranks(device)
    with _timed_size(telemetry, buffer):
        start = wall_s()
        clock.mark()
        for _ in range(iters):
            dist.all_reduce(buffer)
            clock.mark()
        per_iteration = clock.intervals_s()  # the one synchronize
        loop = wall_s() - start  # inside the phase: its end mark is not part of the loop
    return per_iteration, loop


def time_whole_loop(buffer: torch.Tensor, iters: int, device: torch.device,
                    telemetry: Telemetry = NO_TELEMETRY) -> float:
    """impl=raw: seconds for a bare loop of all-reduces on this rank (the reference)."""
    align_ranks(device)
    with _timed_size(telemetry, buffer):
        start = wall_s()
        for _ in range(iters):
            dist.all_reduce(buffer)
        synchronize(device)
        elapsed = wall_s() - start
    return elapsed


def _timed_size(telemetry: Telemetry, buffer: torch.Tensor):
    """GPU telemetry's phase of one message size: its timed loop only (index: the size in bytes)."""
    return telemetry.phase("size", index=buffer.numel() * buffer.element_size(), timed=True)


def measure_size(nbytes: int, cfg: AllreduceConfig, ctx: DistContext, telemetry: Telemetry = NO_TELEMETRY) -> Dict:
    """Check, warm up and time one message size; returns its raw record with every rank's numbers."""
    dtype = TORCH_DTYPES[cfg.dtype]
    elements = nbytes // DTYPE_BYTES[cfg.dtype]  # the schema checked that sizes are whole elements
    buffer = torch.empty(elements, dtype=dtype, device=ctx.device)
    fill_check_pattern(buffer, ctx.rank, ctx.world_size)
    dist.all_reduce(buffer)
    correct = sum_is_correct(buffer)
    buffer.zero_()  # repeated in-place sums of zeros stay zero: no overflow to inf however many iterations
    for _ in range(cfg.warmup_iters):
        dist.all_reduce(buffer)
    if cfg.impl == AllreduceImpl.hpml:
        per_iteration, loop = time_each_iteration(buffer, cfg.iters, ctx.device, telemetry)
    else:
        per_iteration, loop = None, time_whole_loop(buffer, cfg.iters, ctx.device, telemetry)
    del buffer
    ranks = all_gather_objects({"iteration_time_s": per_iteration, "loop_time_s": loop, "correct": correct})
    return {
        "bytes": nbytes,
        "elements": elements,
        "warmup_iters": cfg.warmup_iters,
        "iters": cfg.iters,
        "correct": all(rank["correct"] for rank in ranks),
        "correct_per_rank": [rank["correct"] for rank in ranks],
        "loop_time_s_per_rank": [rank["loop_time_s"] for rank in ranks],
        # [rank][iteration]; null for impl=raw, which times only the whole loop
        "iteration_time_s_per_rank": None if per_iteration is None else [r["iteration_time_s"] for r in ranks],
    }


def slowest_rank_iteration_times(size_record: Dict) -> List[float]:
    """Per iteration, the slowest rank's time; for impl=raw one value: the slowest rank's loop / iters."""
    per_rank = size_record["iteration_time_s_per_rank"]
    if per_rank is None:
        return [max(size_record["loop_time_s_per_rank"]) / size_record["iters"]]
    return [max(ranks) for ranks in zip(*per_rank)]


def derive_size(size_record: Dict, world_size: int, link_peak_GBps: Optional[float]) -> Dict:
    times = slowest_rank_iteration_times(size_record)
    time_s = statistics.fmean(times)
    algbw = algbw_GBps(size_record["bytes"], time_s)
    busbw = busbw_GBps("all_reduce", size_record["bytes"], time_s, world_size)
    return {
        "bytes": size_record["bytes"],
        "time_s": time_s,
        "time_std_s": statistics.pstdev(times) if size_record["iteration_time_s_per_rank"] is not None else None,
        "algbw_GBps": algbw,
        "busbw_GBps": busbw,
        "utilization": busbw / link_peak_GBps if link_peak_GBps else None,
        "correct": size_record["correct"],
    }


def summarize(records: List[Dict], cfg: AllreduceConfig, world_size: int) -> Dict:
    sizes = [derive_size(r, world_size, cfg.link_peak_GBps) for r in records]
    measurements = {"dtype": cfg.dtype.value, "sizes": records}
    derived = {
        "sizes": sizes,
        "all_correct": all(s["correct"] for s in sizes),
        "max_busbw_GBps": max(s["busbw_GBps"] for s in sizes),  # the best size's, not nccl-tests' average
        "link": cfg.link,
        "link_peak_GBps": cfg.link_peak_GBps,
    }
    return {"measurements": measurements, "derived": derived}


def format_row(size: Dict) -> str:
    utilization = "" if size["utilization"] is None else f"{size['utilization']:7.1%}"
    return (f"{size['bytes']:>12d} {size['time_s'] * 1e6:12.2f} {size['algbw_GBps']:12.4g} "
            f"{size['busbw_GBps']:12.4g} {utilization:>8} {'ok' if size['correct'] else 'WRONG':>7}")


def run_benchmark(cfg: AllreduceConfig, ctx: DistContext, telemetry: Telemetry = NO_TELEMETRY) -> List[Dict]:
    if ctx.is_main:
        print(f"[rank 0] all-reduce sum, {cfg.dtype.value}, {ctx.world_size} rank(s), {ctx.backend}, "
              f"impl={cfg.impl.value}, link={cfg.link}\n"
              f"{'bytes':>12} {'time (us)':>12} {'algbw GB/s':>12} {'busbw GB/s':>12} {'util':>8} "
              f"{'sum':>7}", flush=True)
    records = []
    for nbytes in cfg.sizes_bytes:
        records.append(measure_size(nbytes, cfg, ctx, telemetry))
        if ctx.is_main:
            print(format_row(derive_size(records[-1], ctx.world_size, cfg.link_peak_GBps)), flush=True)
    return records


def check_sums(records: List[Dict]) -> None:
    wrong = [r["bytes"] for r in records if not r["correct"]]
    if wrong:
        raise WrongSum(f"the all-reduce sum was wrong at {len(wrong)} size(s) (first: {wrong[0]} bytes); "
                       "the times of this point are not to be trusted")


def timing_methods(cfg: AllreduceConfig, device: torch.device) -> Dict[str, str]:
    methods = {"loop": LOOP_METHOD, "time_s": TIME_METHOD}
    if cfg.impl == AllreduceImpl.hpml:
        methods["iteration"] = StepClock(device).method
        if device.type == "cuda":
            methods["iteration"] += ("; each event record is a host call inside the loop, which adds its cost "
                                     "to every iteration where launches are the bottleneck (compare impl=raw)")
    return methods


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: AllreduceConfig = worker.workload
    ctx = worker.ctx
    with worker.reporting(timing_methods(cfg, ctx.device)) as body:
        records = run_benchmark(cfg, ctx, worker.telemetry)
        body.update(summarize(records, cfg, ctx.world_size))
        check_sums(records)  # after the summary: a point failed for a wrong sum still shows every size


if __name__ == "__main__":
    main()
