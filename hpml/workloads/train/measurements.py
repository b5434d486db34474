"""What the train workload measures besides the epochs, and the result's measurements and derived numbers.

Before the first epoch, optionally, the largest batch that fits (batch_probe.py). After the last, on every
rank (they run collectives): DDP's communication (no_sync probe, profiler: parallel.py) and the plain vs
instrumented loop check (overhead.py). `summarize` turns the EpochLog and these extras into result.json's
"measurements" (raw arrays) and "derived" (numbers over the timed epochs: contract.result_format's rule, which
the analysis applies to the raw arrays again).
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

import torch

from hpml.conf.workload.train import Dataset, TrainConfig
from hpml.conf.workload.train_choices import DataPlacement, Parallel
from hpml.contract.result_format import timed_epoch_indices
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.common.random_inputs import random_images, random_labels
from hpml.workloads.train import efficiency, graphed_step, overhead, parallel
from hpml.workloads.train.batch_probe import probe_max_batch
from hpml.workloads.train.data import per_worker_batch, placement_used
from hpml.workloads.train.device_data import DeviceEpochs
from hpml.workloads.train.epochs import EpochLog, Stepper
from hpml.workloads.train.model import autocast, build_model, memory_format, tf32_in_force
from hpml.workloads.train.phases import NullClock
from hpml.workloads.train.tta import EvaluationLog, time_to_accuracy

EPOCH_METHOD = ("wall clock from a barrier at the epoch's start to the end of its last step (device "
                "synchronized), per rank; an epoch's time is its slowest rank's")
TRAIN_METHOD = ("sum over the epoch's steps of the h2d, forward, backward and optimizer phases (data "
                "loading excluded), per rank; an epoch's train time is its slowest rank's")
STEP_METHOD = "interval between consecutive step ends (the first from the epoch start), rank 0"
BATCH_PROBE_METHOD = "workloads/train/batch_probe.py: doubling per-device batch, 2 steps each, plain model"


@dataclass
class Extras:
    """Measurements besides the epochs (None when off)."""

    batch_probe: Optional[Dict[str, Any]] = None
    comm_probe: Optional[Dict[str, Any]] = None
    comm_profile: Optional[Dict[str, Any]] = None
    overhead_check: Optional[Dict[str, Any]] = None
    ddp_bucket_bytes: Optional[List[int]] = None
    gradient_bytes: int = 0
    steps_per_epoch: int = 0
    lr_target: float = 0.0
    evaluations: Optional[EvaluationLog] = None  # workload.eval_every > 0
    checkpoint_discarded: Optional[Dict[str, Any]] = None  # a checkpoint that could not be used: why, where it went
    flops: Optional[Dict[str, Any]] = None  # the model's FLOPs per sample (efficiency.count_flops)
    peak: Optional[Dict[str, Any]] = None  # the device's dense peak for the precision (efficiency.device_peak)
    busy_probe: Optional[Dict[str, Any]] = None  # GPU: the device's busy time per step (efficiency.device_busy_probe)
    graph_capture_s: Optional[float] = None  # workload.cuda_graphs: the capture's wall time


def input_block(cfg: TrainConfig, kind: Dataset) -> dict:
    """What the model was fed (docs/result-schema.md, measurements.input): channels and side, the data's own side,
    how the images got there, and whether training flipped them."""
    how = "as stored" if cfg.fit_padding == 0 else (
        f"zero-padded {cfg.fit_padding} px on each side ({cfg.image_size}x{cfg.image_size} -> "
        f"{cfg.model_side}x{cfg.model_side}: {cfg.model} was designed for {cfg.model_side}x{cfg.model_side})")
    return {"channels": cfg.input_channels, "size": cfg.model_side, "data_size": cfg.image_size,
            "padding": cfg.fit_padding, "how": how,
            "flip": cfg.flip and kind not in (Dataset.synthetic, Dataset.synthetic_device)}


def timing_words(clock_method: str) -> Dict[str, str]:
    return {"epoch": EPOCH_METHOD, "train_epoch": TRAIN_METHOD, "step": f"{STEP_METHOD}; {clock_method}",
            "phases": clock_method, "comm": parallel.COMM_METHOD, "efficiency": efficiency.FLOPS_METHOD,
            "busy": efficiency.BUSY_METHOD, "overhead_check": overhead.METHOD,
            "batch_probe": BATCH_PROBE_METHOD}


def probe_batches(cfg: TrainConfig, ctx: DistContext) -> Dict[str, Any]:
    fmt = memory_format(cfg)

    def make_batch(batch: int):
        images = random_images(batch, cfg.image_size, device=ctx.device)
        labels = random_labels(batch, cfg.num_classes, device=ctx.device)
        return images.contiguous(memory_format=fmt), labels

    probe = probe_max_batch(lambda: build_model(cfg, ctx.device), make_batch, ctx.device, cfg.batch_size,
                            cfg.max_batch_probe, lambda: autocast(cfg, ctx.device))
    per_rank = all_gather_objects(probe["largest_fitting"])
    probe["largest_fitting_per_rank"] = per_rank
    return probe


def endless(loader) -> Iterator:
    """Batches of the loader, epoch after epoch (for the checks after training)."""
    return itertools.chain.from_iterable(itertools.repeat(loader))


def after_training(stepper: Stepper, model, loader, cfg: TrainConfig, ctx: DistContext, extras: Extras) -> None:
    """The measurements that follow the last epoch, on every rank (they run collectives)."""
    extras.ddp_bucket_bytes = parallel.ddp_bucket_bytes(model)
    images, labels = next(iter(loader))
    extras.flops = efficiency.count_flops(cfg.model, cfg.num_classes, cfg.cifar_stem, tuple(images.shape[1:]))
    extras.peak = efficiency.device_peak(ctx.device, cfg.precision.value,
                                         tf32_in_force(cfg) and ctx.device.type == "cuda")
    extras.graph_capture_s = getattr(stepper, "capture_s", None)
    images = images.to(ctx.device, memory_format=stepper.memory_format)
    fixed = stepper.forward_backward_on(images, labels.to(ctx.device))
    if cfg.comm_probe_steps and cfg.parallel == Parallel.ddp:
        extras.comm_probe = parallel.comm_probe(model, fixed, ctx.device, cfg.comm_probe_steps)
    if cfg.profile_comm_steps and cfg.parallel == Parallel.ddp and ctx.device.type == "cuda":
        extras.comm_profile = parallel.nccl_kernel_seconds(fixed, cfg.profile_comm_steps)
    batches = endless(loader)

    def run_steps(clock, steps: int) -> None:
        for _ in range(steps):
            stepper(batches, clock)
    if cfg.bound_probe_steps and ctx.device.type == "cuda":
        extras.busy_probe = efficiency.device_busy_probe(lambda steps: run_steps(NullClock(), steps),
                                                         cfg.bound_probe_steps)
    if cfg.overhead_check_steps:
        extras.overhead_check = overhead.overhead_check(
            run_steps, ctx.device, cfg.overhead_check_steps, cfg.overhead_check_rounds,
            samples_per_step=per_worker_batch(cfg, ctx.world_size) * ctx.world_size * cfg.batch_augmentation,
            data_on_device=isinstance(loader, DeviceEpochs))


def summarize(log: EpochLog, cfg: TrainConfig, world_size: int, extras: Extras, kind: Dataset,
              note: Optional[str]) -> Dict:
    """Raw arrays and the numbers derived from them (the timed epochs: all but the cold ones)."""
    batch = per_worker_batch(cfg, world_size)
    devices = world_size * cfg.devices_per_worker
    epoch_times = [max(ranks) for ranks in log.epoch_time_s_per_rank]
    train_times = [max(ranks) for ranks in log.train_time_s_per_rank]
    timed = timed_epoch_indices(len(epoch_times), log.cold_epochs)
    timed_steps = [s for i in timed for s in log.step_time_s[i]]
    samples_per_epoch = extras.steps_per_epoch * batch * world_size
    measurements = {
        "epoch_time_s": epoch_times,
        "epoch_time_s_per_rank": log.epoch_time_s_per_rank,
        "train_time_s": train_times,
        "train_time_s_per_rank": log.train_time_s_per_rank,
        "step_time_s": log.step_time_s,
        "phase_time_s": log.phase_time_s,
        "phase_sum_s_per_rank": log.phase_sum_s_per_rank,
        "train_loss": log.train_loss,
        "train_accuracy": log.train_accuracy,
        "lr_last": log.lr_last,
        "loop_time_s": log.loop_time_s,
        "eval_time_s": log.eval_time_s,
        "loss_scale": log.loss_scale,
        "peak_memory_allocated_bytes": log.peak_memory_allocated_bytes,
        "precision": cfg.precision.value,
        "tf32": tf32_in_force(cfg) if torch.cuda.is_available() else None,
        "activation_checkpointing": cfg.activation_checkpointing,
        "lr_target": extras.lr_target,
        "steps_per_epoch": extras.steps_per_epoch,
        "per_worker_batch": batch,
        "global_batch": batch * world_size,
        # batch augmentation: a step trains on batch_augmentation copies of each of its global_batch samples
        "batch_augmentation": cfg.batch_augmentation,
        "accumulation_chunks": cfg.accumulation_chunks,
        "samples_per_epoch": samples_per_epoch,
        "parallel": cfg.parallel.value,
        "devices": devices,
        "per_device_batch": batch * world_size // devices,
        "dataset": kind.value,
        "dataset_note": note,
        "input": input_block(cfg, kind),
        "data_placement": placement_used(cfg, kind).value,  # host | device: the data path that ran
        # device path: when its batches were made (step | epoch, workload.batch_prep); None on the host path
        "batch_prep": cfg.batch_prep.value if placement_used(cfg, kind) == DataPlacement.device else None,
        "gradient_bytes": extras.gradient_bytes,
        "ddp_bucket_bytes": extras.ddp_bucket_bytes,
        "comm_probe": extras.comm_probe,
        "comm_profile": extras.comm_profile,
        "overhead_check": extras.overhead_check,
        "batch_probe": extras.batch_probe,
        # the point restarted from epoch 1 because its checkpoint could not be used: {"reason", "set_aside"}
        "checkpoint_discarded": extras.checkpoint_discarded,
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if torch.cuda.is_available() else None,
        "cold_epochs": log.cold_epochs,
    }
    epoch_mean = statistics.fmean(epoch_times[i] for i in timed)
    derived = {
        "timed_epochs": len(timed),
        "epoch_time_s": epoch_mean,
        "epoch_time_std_s": statistics.pstdev(epoch_times[i] for i in timed),
        "train_time_s": statistics.fmean(train_times[i] for i in timed),
        "step_time_median_s": statistics.median(timed_steps),
        "samples_per_s": samples_per_epoch / epoch_mean,
        "final_train_loss": log.train_loss[-1],
        "final_train_accuracy": log.train_accuracy[-1],
    }
    comm_s = extras.comm_probe["exposed_comm_s"] if extras.comm_probe and world_size > 1 else None
    measurements["efficiency"] = efficiency.efficiency_record(
        flops=extras.flops, peak=extras.peak, step_time_s=log.step_time_s, data_time_s=log.phase_time_s["data"],
        timed=timed, samples_per_step=batch * world_size * cfg.batch_augmentation, devices=devices,
        per_device_batch=batch * world_size // devices, comm_s=comm_s, busy=extras.busy_probe,
        settings={"precision": cfg.precision.value, "channels_last": cfg.channels_last, "compile": cfg.compile.value,
                  "cuda_graphs": cfg.cuda_graphs, "batch_prep": measurements["batch_prep"]})
    measurements["compile"] = cfg.compile.value
    measurements["cuda_graphs"] = cfg.cuda_graphs
    measurements["phase_note"] = graphed_step.PHASE_NOTE if cfg.cuda_graphs else None
    derived.update(efficiency_derived(measurements["efficiency"]),
                   setup=setup_costs(log.step_time_s, epoch_times, epoch_mean, extras.graph_capture_s,
                                     derived["step_time_median_s"]))
    if extras.evaluations is not None:  # contract/saved_model.py: the evaluation record and time to accuracy
        measurements["evaluation"] = extras.evaluations.as_dict()
        derived["tta"] = time_to_accuracy(extras.evaluations, cfg.target_accuracy)
    return {"measurements": measurements, "derived": derived}


def efficiency_derived(record: Dict[str, Any]) -> Dict[str, Any]:
    """derived's headline numbers of measurements.efficiency: MFU (or why n/a) and the verdict."""
    return {"achieved_tflops": record["achieved_tflops"], "mfu": record["mfu"], "mfu_na": record["na"],
            "bound": record["bound"]["verdict"], "bound_knob": record["bound"]["knob"]}


def setup_costs(step_time_s: List[List[float]], epoch_times: List[float], epoch_mean: float,
                graph_capture_s: Optional[float], steady_step_s: float) -> Dict[str, Any]:
    """What the first epoch paid on top of a steady one (compilation, graph capture, cuDNN tuning), apart from the
    steady step: the first step's time, epoch 1's excess over a timed epoch, and the capture's own wall time. The
    time to accuracy counts all of it (its clock starts before epoch 1)."""
    return {"first_step_s": step_time_s[0][0], "first_epoch_extra_s": epoch_times[0] - epoch_mean,
            "first_step_extra_s": step_time_s[0][0] - steady_step_s, "graph_capture_s": graph_capture_s}
