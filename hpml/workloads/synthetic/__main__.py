"""Horovod's synthetic benchmark on torch.distributed, timed on the device.

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo):
    python -m hpml.workloads.synthetic --config <sweep>/points/<n>/config.yaml
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
horovod = horovod_style.DistributedOptimizer (beside this module) with the same knobs, after broadcasting
parameters and optimizer state from rank 0 (as Horovod's script does).
With workload.paired_rounds > 0, both methods then run side by side in this process, alternating
iteration by iteration (paired.py; measurements.paired).

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
    coefficient of variation (analysis/synthetic/).
  - The learning rate is workload.lr as given (Horovod multiplies 0.01 by the world size); it does not
    change the speed.

workload.nccl_algo reaches NCCL through NCCL_ALGO, set in this process before the process group exists
(nccl_algo.py).
"""

from __future__ import annotations

import os
from typing import Dict, Sequence

import torch
import torchvision
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.workload.synthetic import GradientSync, NcclAlgo, SyntheticConfig
from hpml.contract.collector import cycle_collection_paused
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.worker import start_worker
from hpml.workloads.synthetic.horovod_style import DistributedOptimizer
from hpml.workloads.synthetic.nccl_algo import export_nccl_algo
from hpml.workloads.synthetic.paired import paired_check, paired_measurements
from hpml.workloads.synthetic.protocol import (
    align_ranks,
    images_per_iteration,
    print_like_horovod,
    run_protocol,
    summarize,
    timing_methods,
)
from hpml.workloads.synthetic.steps import make_step, random_batch, with_gradient_sync


def benchmark(cfg: SyntheticConfig, ctx: DistContext, seed: int, telemetry: Telemetry = NO_TELEMETRY
              ) -> Dict[str, Dict]:
    if ctx.device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # as Horovod's script; the warm-up absorbs the tuning
    images, labels = random_batch(cfg, cfg.per_worker_batch(ctx.world_size), ctx, seed)

    def build_step(method: GradientSync):
        torch.manual_seed(seed)  # the same initial model on every rank (rank 0's is broadcast anyway), per method
        # the DDP wrapper and the optimizer import torch._dynamo: built without the cyclic collector (startup.py)
        with cycle_collection_paused():
            model = torchvision.models.get_model(cfg.model, num_classes=cfg.num_classes).to(ctx.device)
            module, optimizer, accumulate_only = with_gradient_sync(model, cfg, ctx, method)
        step = make_step(module, optimizer, accumulate_only, images, labels, cfg.backward_passes_per_step)
        return model, optimizer, step

    model, optimizer, step = build_step(cfg.data_parallel)
    mine = run_protocol(step, cfg, ctx.device, telemetry, ctx.world_size)
    per_rank = all_gather_objects(mine)
    if isinstance(optimizer, DistributedOptimizer):
        optimizer.remove_hooks()
    paired = None
    if cfg.paired_rounds:  # both methods side by side in this process (paired.py)
        with telemetry.phase("paired"):  # a comparison of its own: outside the protocol's timed window
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


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv, before_init=export_nccl_algo)
    cfg: SyntheticConfig = worker.workload
    ctx = worker.ctx
    with worker.reporting(timing_methods(ctx.device)) as body:
        if cfg.nccl_algo != NcclAlgo.auto and ctx.backend != "nccl":
            raise RuntimeError(f"workload.nccl_algo={cfg.nccl_algo.value} needs the nccl backend, but this "
                               f"point runs {ctx.backend}; use collective=nccl_ring or nccl_tree on GPUs")
        body.update(benchmark(cfg, ctx, worker.seed, worker.telemetry))
        if ctx.is_main:
            print_like_horovod(body["derived"], cfg, ctx)



if __name__ == "__main__":
    main()
