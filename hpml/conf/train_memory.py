"""A lower bound of the memory one training step of a `train` point needs, checked before the sweep is written.

Why: a batch and image size far beyond the device (workload.batch_size=8192 at image_size=512) passed every
compose-time check and failed in the worker with CUDA out of memory, or the host's OOM killer on a CPU, after the
sweep folder was written. contract/limits.py bounds single buffers at 64 GiB; this bounds the whole step by the
memory of the device it will run on.

What is counted, per worker and device (DataParallel: its first device, which holds the optimizer), in bytes:
- weights and buffers as built (fp32: autocast keeps fp32 weights); a gradient per trainable parameter; when
  workload.momentum > 0, SGD's momentum buffers, as many again (they exist from the second step on);
- activations kept for backward: the outputs of the model's leaf modules that autograd saves, each storage once
  (conf/model_input.py finds them in the launch's one meta-device forward: an in-place ReLU shares its BatchNorm's
  output; ResNet's downsample output, read only by the residual add, is freed at once and not counted), for the
  samples of one forward pass: per device x batch_augmentation / accumulation_chunks. Their element: 4 bytes in
  fp32 / tf32, 2 under fp16 / bf16 autocast (the narrowest any autocast op keeps: a convolution's half output and
  the BatchNorm and ReLU after it stay half; LayerNorm keeps fp32). None with workload.activation_checkpointing
  (the stage boundaries that stay are not counted: still a floor);
- the step's input images on the device (its samples x batch_augmentation, in the input dtype);
- workload.data_placement=device: the decoded training split (uint8 N x 3 x H x W and int64 labels), when the
  data set is on disk here to count (the held-out split is left out); with workload.batch_prep=epoch also the
  epoch's made batches (the rank's whole batches x batch_augmentation, in the input dtype, and their labels).
They are not all held at once: the step's floor is the larger of the end of a forward pass (weights, momentum,
every kept activation; no gradient yet, as the worker zeroes them with set_to_none, except the earlier chunks' with
accumulation) and the end of the backward (weights, momentum, gradients), plus the inputs and the split.
Not counted, and all of it real: the gradients of activations during backward, what ops other than leaf modules
keep (the residual adds' outputs, max-pool indices, attention), DDP's gradient buckets, autocast's weight copies,
cuDNN workspaces, the CUDA context, the allocator's rounding. How far below a real step's peak it stays was
measured on a GPU (docs/decisions.md); a point is refused only when this floor itself exceeds the memory.

Which memory: a GPU point is compared with one GPU's memory, a CPU point's workers (each its own copy of all of
the above) with the node's:
- GPU: the config has no GPU memory size (conf/hardware/ names links and peak rates, not memory), so only a
  point that runs here (cluster=local, no cluster.assume_gpus) is checked, against this host's GPU 0 as torch
  sees it (every point's local rank 0 uses it). On SLURM the launching host is a login node, whose GPU (if any)
  is not the compute node's: no check.
- CPU: resources.mem_gb (GiB, sbatch --mem=<n>G) where a SLURM point sets it; a local point: this host's
  MemTotal + SwapTotal (/proc/meminfo; a point that swaps still runs, and mem_gb is not enforced here). A SLURM
  point with mem_gb=0 gets the cluster's default, unknown here: no check. (A VM whose memory balloons as it is
  used shows a small MemTotal at first; the few-TiB steps this check exists for exceed any such host.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

from hpml.conf.data_on_disk import OnDisk
from hpml.conf.model_input import meta_forward
from hpml.conf.validation import named
from hpml.contract.units import GIB

# `cfg` below is a TrainConfig (conf/workload/train.py), which calls this module from its preflight: importing it
# here would make an import cycle, so its str enums are compared with their values.
CIFAR10_IMAGE_BYTES = 3 * 32 * 32  # a row of CIFAR-10's python batches: 32 x 32 RGB, uint8
LABEL_BYTES = 8  # int64
AUTOCAST = ("fp16", "bf16")
MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class StepMemory:
    """Bytes one training step holds at least on one device of one worker, and when."""

    weights: int  # parameters and buffers as built (fp32)
    gradients: int  # one fp32 gradient per trainable parameter
    momentum: int  # SGD's momentum buffers (workload.momentum > 0), as many again; 0 without momentum
    activations: int  # leaf outputs kept for backward by one forward pass (0 with activation checkpointing)
    inputs: int  # the step's input images
    data: int  # the decoded training split (data_placement=device), 0 when not counted
    epoch_batches: int  # batch_prep=epoch: the epoch's made batches on the device, 0 otherwise or when not counted
    accumulating: bool  # accumulation_chunks > 1: a later chunk's forward runs with the gradients already there

    @property
    def total(self) -> int:
        """The larger of two moments of the step: the end of a forward pass (every kept activation at once, no
        gradient yet: the worker zeroes them with set_to_none; with accumulation, a later chunk's forward has the
        earlier chunks' gradients) and the end of the backward (the gradients, the activations freed)."""
        held = self.weights + self.momentum + self.inputs + self.data + self.epoch_batches
        return held + max(self.activations + (self.gradients if self.accumulating else 0), self.gradients)


def step_memory(cfg: Any, per_worker: int, found: Optional[OnDisk]) -> StepMemory:
    """The lower bound of one step's memory on one device of a worker (the module docstring says what it counts).
    per_worker: the worker's samples per step (conf.workload.train.per_worker_batch); found: its data set on disk
    (conf.workload.train_data.on_disk), None when there is none to count."""
    forward = meta_forward(cfg.model, cfg.model_side, cfg.num_classes, cfg.cifar_stem, cfg.input_channels)
    fp32 = forward.parameters * 4
    per_device = per_worker // cfg.devices_per_worker * cfg.batch_augmentation
    element = 2 if cfg.precision in AUTOCAST else 4
    forward_samples = per_device // cfg.accumulation_chunks
    activations = 0 if cfg.activation_checkpointing else forward.saved_leaf_outputs * forward_samples * element
    return StepMemory(weights=forward.state_bytes, gradients=fp32, momentum=fp32 if cfg.momentum > 0 else 0,
                      activations=activations, inputs=per_device * cfg.input_channels * cfg.model_side ** 2 * element,
                      data=device_split_bytes(cfg, found), epoch_batches=epoch_batches_bytes_of(cfg, per_worker, found),
                      accumulating=cfg.accumulation_chunks > 1)


def device_split_bytes(cfg: Any, found: Optional[OnDisk]) -> int:
    """The decoded training split a worker keeps on its device (data_placement=device), 0 when there is none or
    the data set is not on disk here to count (or dataset=auto found no CIFAR-10: synthetic data, on the host)."""
    if cfg.data_placement != "device" or found is None:
        return 0
    # as decoded: CIFAR-10's rows, an image folder resized to image_size in RGB, Fashion-MNIST's 1 x 28 x 28 padded
    # to the model's side once (workloads/train/device_data.py)
    image = CIFAR10_IMAGE_BYTES if cfg.dataset in ("cifar10", "auto") else cfg.input_channels * cfg.model_side ** 2
    return found.train_samples * (image + LABEL_BYTES)


def samples_per_rank(samples: int, world: int, batch: int) -> int:
    """The samples a rank trains on in an epoch: its DistributedSampler share (drop_last), whole batches only."""
    return samples // world // batch * batch


def epoch_batches_bytes(samples: int, world: int, batch: int, copies: int, image_elements: int,
                        element_bytes: int) -> int:
    """batch_prep=epoch: the bytes of one epoch's made batches on a rank (the images in the input dtype, int64
    labels); the worker sizes its buffer with this (workloads/train/device_data.py)."""
    rows = samples_per_rank(samples, world, batch) * copies
    return rows * (image_elements * element_bytes + LABEL_BYTES)


def epoch_batches_bytes_of(cfg: Any, per_worker: int, found: Optional[OnDisk]) -> int:
    """epoch_batches_bytes for a point (0 unless data_placement=device with batch_prep=epoch and the data on disk)."""
    if cfg.data_placement != "device" or cfg.batch_prep != "epoch" or found is None:
        return 0
    element = 2 if cfg.precision in AUTOCAST else 4  # the input dtype (workloads/train/model.input_dtype)
    return epoch_batches_bytes(found.train_samples, cfg.placement.resources.world_size, per_worker,
                               cfg.batch_augmentation, cfg.input_channels * cfg.model_side ** 2, element)


def available_memory(cfg: Any) -> Optional[Tuple[int, str]]:
    """(bytes, where the figure comes from) of the memory the point's step is compared with, or None when it
    cannot be known from here (the module docstring says when)."""
    placement = cfg.placement
    if placement is None:
        return None
    resources = placement.resources
    if not cfg.runs_on_cpu(resources):
        # A login node without GPUs, or a SLURM point (another machine's GPUs): nothing here to compare with.
        return local_gpu_memory() if placement.on_this_host else None
    if not placement.on_this_host:
        return (resources.mem_gb * GIB, f"resources.mem_gb={resources.mem_gb}") if resources.mem_gb else None
    total = host_memory()
    return (total, "this host's MemTotal + SwapTotal") if total else None


@functools.lru_cache(maxsize=None)
def local_gpu_memory() -> Optional[Tuple[int, str]]:
    """GPU 0's total memory as torch sees it on this host (CUDA_VISIBLE_DEVICES applied), or None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    device = torch.cuda.get_device_properties(0)
    return device.total_memory, f"this host's GPU 0 ({device.name})"


def host_memory(meminfo: Path = MEMINFO) -> Optional[int]:
    """MemTotal + SwapTotal of /proc/meminfo in bytes (a point that swaps still runs); None where there is no
    MemTotal (not Linux)."""
    fields = {}
    try:
        for line in meminfo.read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = int(value.split()[0]) * 1024 if value.split() else 0
    except (OSError, ValueError):
        return None
    return fields["MemTotal"] + fields.get("SwapTotal", 0) if "MemTotal" in fields else None


def step_memory_problem(cfg: Any, per_worker: int, found: Optional[OnDisk]) -> Optional[str]:
    """One line when the step's lower bound exceeds the memory of the device the point runs on, else None
    (arguments: step_memory's)."""
    known = available_memory(cfg)
    if known is None:
        return None
    available, source = known
    resources = cfg.placement.resources
    need = step_memory(cfg, per_worker, found)
    on_cpu = cfg.runs_on_cpu(resources)
    workers = resources.workers_per_node if on_cpu else 1
    if need.total * workers <= available:
        return None
    where = f"{workers} worker(s) x {_gib(need.total)} on the node" if on_cpu else f"{_gib(need.total)} on one GPU"
    checkpointed = " (checkpointed: not counted)" if cfg.activation_checkpointing else ""
    parts = [f"weights {_gib(need.weights)}", f"gradients {_gib(need.gradients)}", f"momentum {_gib(need.momentum)}",
             f"activations kept for backward {_gib(need.activations)}{checkpointed}",
             f"input batch {_gib(need.inputs)}"]
    parts += [f"decoded training split {_gib(need.data)}"] if need.data else []
    parts += [f"the epoch's made batches (workload.batch_prep=epoch) {_gib(need.epoch_batches)}"
              ] if need.epoch_batches else []
    return (f"{samples_text(cfg, per_worker)} of workload.image_size={cfg.image_size} through workload.model="
            f"{named(cfg.model)}: one training step needs at least {where} ({', '.join(parts)}; "
            f"precision={cfg.precision.value}), more than the {_gib(available)} of {source}; {remedies(cfg)}")


def samples_text(cfg: Any, per_worker: int) -> str:
    """The images one device holds in a step, with every key that made the number: the batch, split over the
    workers (strong scaling), times the augmented copies, in chunks (issue 33: a refusal blamed batch_size=64
    for the 64 x 1024 images of batch_augmentation=1024)."""
    per_device = per_worker // cfg.devices_per_worker * cfg.batch_augmentation
    made = [f"workload.batch_size={cfg.batch_size}"]
    if cfg.scaling.value == "strong":
        made[0] += f" (global, over {cfg.placement.resources.world_size} workers: workload.scaling=strong)"
    if cfg.batch_augmentation > 1:
        made.append(f"workload.batch_augmentation={cfg.batch_augmentation} copies of each")
    text = f"{per_device:,} images a step on one device ({' x '.join(made)})"
    if cfg.accumulation_chunks > 1:
        text += (f", {per_device // cfg.accumulation_chunks:,} per forward "
                 f"(workload.accumulation_chunks={cfg.accumulation_chunks})")
    return text


def remedies(cfg: Any) -> str:
    """What lowers the number, the keys that made it first."""
    keys = ["workload.batch_augmentation"] if cfg.batch_augmentation > 1 else []
    keys += ["workload.batch_size", "workload.image_size"]
    return (f"lower {', '.join(keys[:-1])} or {keys[-1]}, or raise workload.accumulation_chunks or set "
            "workload.activation_checkpointing=true")


def _gib(nbytes: int) -> str:
    return f"{nbytes / GIB:.2f} GiB"


__all__ = ["StepMemory", "available_memory", "host_memory", "step_memory", "step_memory_problem"]
