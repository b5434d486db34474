"""DDP or DataParallel training of a torchvision classifier, timed per phase, per step and per epoch.

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo), or one worker per node driving
several GPUs with DataParallel (workload.parallel=dp):
    python -m hpml.workloads.train --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config. Epoch 1 is warm-up: the reported epoch time is the mean of
epochs 2..N, each epoch's time being that of its slowest rank.

Two epoch times (docs/studies/batch-gpu-scaling.md):
- total: wall clock from a barrier at the epoch's start to the end of its last step (device synchronized);
- train: the sum over steps of h2d + forward + backward + optimizer (phases.py): data loading excluded.
After the last epoch, optional measurements run on every rank: DDP's communication (no_sync probe,
profiler), the plain vs instrumented loop check. Before the first, optionally, the largest batch that fits
(measurements.py).

This module is the run top-down (`main`, `train`); beside it: the step and the epoch record (epochs.py), data
and batch sizes (data.py), the model and its backend settings (model.py), DDP / DataParallel (parallel.py),
the learning-rate schedule (lr_schedule.py) and the result's numbers (measurements.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.workload.train import Dataset, TrainConfig
from hpml.conf.workload.train_choices import CompileMode, DataPlacement
from hpml.contract.collector import cycle_collection_paused
from hpml.contract.result_format import WARMUP_EPOCHS
from hpml.contract.sweep_layout import CHECKPOINT_FILE
from hpml.workloads.common.checkpoint import EpochCheckpoint
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.timing import wall_s
from hpml.workloads.common.worker import start_worker
from hpml.workloads.train import lr_schedule, parallel
from hpml.workloads.train.data import build_loader, per_worker_batch, placement_used, resolve_dataset, set_epoch
from hpml.workloads.train.device_data import device_data
from hpml.workloads.train.epochs import EpochLog, Stepper, record_epoch, run_epoch
from hpml.workloads.train.evaluation import eval_loader, evaluate
from hpml.workloads.train.graphed_eval import EvalGraph
from hpml.workloads.train.graphed_step import GraphedStepper, ddp_stream, graph_optimizer
from hpml.workloads.train.lr_schedule import target_lr
from hpml.workloads.train.measurements import Extras, after_training, probe_batches, summarize, timing_words
from hpml.workloads.train.model import build_model, configure_backends, gradient_bytes
from hpml.workloads.train.phases import PhaseClock
from hpml.workloads.train.saved_model import save_model
from hpml.workloads.train.tta import EvaluationLog


def train(cfg: TrainConfig, seed: int, ctx: DistContext, point_dir: Path, kind: Dataset, extras: Extras,
          telemetry: Telemetry = NO_TELEMETRY) -> EpochLog:
    torch.manual_seed(seed)
    configure_backends(cfg, ctx)
    if cfg.max_batch_probe:
        extras.batch_probe = probe_batches(cfg, ctx)
    placement = placement_used(cfg, kind)
    # the DDP wrapper and the optimizer import torch._dynamo: set up without the cyclic collector (startup.py)
    with cycle_collection_paused():
        loader, held_out = training_data(cfg, seed, ctx, kind, placement)
        model = build_model(cfg, ctx.device)
        extras.gradient_bytes = gradient_bytes(model)
        side = ddp_stream(ctx.device) if cfg.cuda_graphs else None
        with torch.cuda.stream(side):  # None: the current stream (a no-op context)
            model = parallel.wrap_model(model, cfg, ctx)
        if side is not None:
            torch.cuda.current_stream(ctx.device).wait_stream(side)  # DDP's broadcast of rank 0's weights
        step_model = compiled(model, cfg)
        global_batch = per_worker_batch(cfg, ctx.world_size) * ctx.world_size
        extras.steps_per_epoch = len(loader)
        extras.lr_target = target_lr(cfg.lr, cfg.lr_scaling, global_batch, cfg.lr_base_batch)
        lr_of_step = lr_schedule.schedule(cfg, len(loader), extras.lr_target)
        if cfg.cuda_graphs:  # the whole step in one CUDA graph (graphed_step.py; the config allowed it)
            optimizer = graph_optimizer(model, lr_of_step(0), cfg.momentum, cfg.weight_decay)
            stepper = GraphedStepper(step_model, optimizer, cfg, ctx, lr_of_step, side)
        else:
            optimizer = torch.optim.SGD(model.parameters(), lr=lr_of_step(0), momentum=cfg.momentum,
                                        weight_decay=cfg.weight_decay)
            stepper = Stepper(step_model, optimizer, cfg, ctx, lr_of_step)
    log, clock = EpochLog(), PhaseClock(ctx.device, data_on_device=placement == DataPlacement.device)
    checkpoint = EpochCheckpoint(point_dir / CHECKPOINT_FILE) if cfg.checkpoint else None
    first_epoch = checkpoint.restore(model, optimizer, log, ctx.device, set_aside=ctx.is_main) if checkpoint else 0
    extras.checkpoint_discarded = checkpoint.discarded if checkpoint else None
    if extras.checkpoint_discarded and ctx.is_main:
        print(f"[rank 0] restarting from epoch 1: {extras.checkpoint_discarded['reason']} (set aside as "
              f"{extras.checkpoint_discarded['set_aside']})", flush=True)
    stepper.global_step = first_epoch * len(loader)
    if first_epoch < cfg.epochs:  # epoch 1 is always cold, whatever an older checkpoint recorded
        log.cold_epochs = sorted({0, *log.cold_epochs, first_epoch})
    if first_epoch and ctx.is_main:
        print(f"[rank 0] resumed from {checkpoint.path} after epoch {first_epoch}", flush=True)
    extras.evaluations = EvaluationLog() if held_out is not None else None
    # the held-out batch's forward graphed too, where the training step is (graphed_eval.py)
    eval_graph = EvalGraph(per_worker_batch(cfg, ctx.world_size), cfg, ctx.device) \
        if cfg.cuda_graphs and held_out is not None else None
    training_start = None  # the time-to-accuracy clock: from the first epoch's start, evaluations included
    for epoch in range(first_epoch, cfg.epochs):
        set_epoch(loader, epoch)
        stepper.reset_sums()
        dist.barrier()
        start = wall_s()
        training_start = start if training_start is None else training_start
        # GPU telemetry's epoch: the same window as the epoch time, timed as the result counts it (cold: not)
        with telemetry.phase("epoch", index=epoch, timed=epoch not in log.cold_epochs,
                             samples=len(loader) * global_batch):
            phases = run_epoch(stepper, loader, clock)  # ends with a device synchronize
        elapsed = wall_s() - start
        record_epoch(log, stepper, phases, elapsed)
        if ctx.is_main:
            print(f"[rank 0] epoch {epoch + 1}/{cfg.epochs}: total {max(log.epoch_time_s_per_rank[-1]):.3f} s, "
                  f"train {max(log.train_time_s_per_rank[-1]):.3f} s, loss {log.train_loss[-1]:.4f}, "
                  f"accuracy {log.train_accuracy[-1]:.4f}, lr {stepper.lr:.4g}", flush=True)
            if checkpoint:  # after the epoch's clock stopped: saving is not part of the epoch time
                checkpoint.save(epoch + 1, model, optimizer, log)
        evaluated = held_out is not None and (epoch + 1) % cfg.eval_every == 0
        if evaluated:
            evaluate_now(model, held_out, cfg, ctx, extras.evaluations, epoch, stepper.global_step, training_start,
                         telemetry, eval_graph)
        dist.barrier()
        log.loop_time_s.append(wall_s() - start)
        log.eval_time_s.append(extras.evaluations.eval_s[-1] if evaluated else 0.0)
        # every rank saw the same all-reduced accuracy, so all stop together; never before epoch 2 (warm-up)
        reached = extras.evaluations is not None and extras.evaluations.first_at(cfg.target_accuracy) is not None
        if reached and epoch + 1 > WARMUP_EPOCHS:
            break
    if cfg.save_model and ctx.is_main:
        classes = getattr(loader, "classes", None) or getattr(getattr(loader, "dataset", None), "classes", None) \
            or [str(i) for i in range(cfg.num_classes)]
        save_model(point_dir, model, cfg, classes, ctx.device)
    after_training(stepper, model, loader, cfg, ctx, extras)
    return log


def compiled(model: torch.nn.Module, cfg: TrainConfig) -> torch.nn.Module:
    """torch.compile in workload.compile's mode (DDP: the wrapper is compiled, DDPOptimizer splits at buckets)."""
    if cfg.compile == CompileMode.none:
        return model
    return torch.compile(model, mode=cfg.compile.torch_mode)


def training_data(cfg: TrainConfig, seed: int, ctx: DistContext, kind: Dataset, placement: DataPlacement):
    """(this rank's training batches, its held-out batches or None): a DataLoader pair on the host path, the
    splits resident on the device on the device path (device_data.py)."""
    batch = per_worker_batch(cfg, ctx.world_size)
    if placement == DataPlacement.device:
        return device_data(cfg, kind, ctx, batch, seed)
    return build_loader(cfg, seed, ctx, kind), eval_loader(cfg, ctx, batch) if cfg.eval_every else None


def evaluate_now(model, held_out, cfg: TrainConfig, ctx: DistContext, evaluations: EvaluationLog, epoch: int,
                 step: int, training_start: float, telemetry: Telemetry, graph: Optional[EvalGraph] = None) -> None:
    """One evaluation, timed as its own phase (outside every epoch time), recorded with the TTA clock."""
    began = wall_s()
    with telemetry.phase("eval", index=epoch, timed=False):
        top1, loss = evaluate(model, held_out, cfg, ctx, graph)
    ended = wall_s()
    evaluations.record(epoch + 1, step, top1, loss, elapsed_s=ended - training_start, eval_s=ended - began)
    if ctx.is_main:
        print(f"[rank 0] evaluation after epoch {epoch + 1}: top-1 {top1:.4f}, loss {loss:.4f}, "
              f"{ended - began:.3f} s", flush=True)



@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: TrainConfig = worker.workload
    ctx = worker.ctx
    kind, note = resolve_dataset(cfg)
    if ctx.is_main and note:
        print(f"[rank 0] note: {note}", flush=True)
    extras = Extras()
    # An out-of-memory point keeps what the batch probe found: the report shows it as "does not fit".
    on_device = placement_used(cfg, kind) == DataPlacement.device
    with worker.reporting(timing_words(PhaseClock(ctx.device, data_on_device=on_device).method),
                          oom_measurements=lambda: {"batch_probe": extras.batch_probe, "dataset": kind.value}) as body:
        log = train(cfg, worker.seed, ctx, worker.point_dir, kind, extras, worker.telemetry)
        body.update(summarize(log, cfg, ctx.world_size, extras, kind, note))
    # Reached only when result.json was written with status ok (reporting re-raises any failure): the
    # point is complete and its checkpoint, kept for a requeue or resume, is no longer needed.
    if ctx.is_main and not cfg.keep_checkpoint:
        EpochCheckpoint(worker.point_dir / CHECKPOINT_FILE).remove()


if __name__ == "__main__":
    main()
