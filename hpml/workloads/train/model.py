"""The model of the train workload (built by models.build_classifier: hpml's own or torchvision's, optionally
with the CIFAR ResNet stem) and how it runs on the device (memory format, cuDNN benchmark mode, TF32)."""

from __future__ import annotations

import torch

from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_choices import Parallel, Precision
from hpml.models.build import build_classifier
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train.checkpointing import checkpoint_stages

AUTOCAST_DTYPES = {Precision.fp16: torch.float16, Precision.bf16: torch.bfloat16}  # the precisions that autocast


def autocast(cfg: TrainConfig, device: torch.device, captured: bool = False):
    """torch.autocast for fp16 / bf16 (forward and loss; weights and gradients stay fp32), a no-op otherwise.
    captured: for work that a CUDA graph captures (graphed_step.py, graphed_eval.py), with the weight-cast cache
    off: a cast cached during the capture would be freed after it, and every replay would read freed memory."""
    dtype = AUTOCAST_DTYPES.get(cfg.precision)
    return torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None,
                          cache_enabled=not captured)


def input_dtype(cfg: TrainConfig) -> torch.dtype:
    """The dtype the model's inputs are made in (the device path normalizes straight into it)."""
    return AUTOCAST_DTYPES.get(cfg.precision, torch.float32)


def tf32_in_force(cfg: TrainConfig) -> bool:
    """TF32 math in fp32 matmuls and convolutions: precision=tf32 always, else as workload.tf32 says."""
    return cfg.precision == Precision.tf32 or cfg.tf32


def memory_format(cfg: TrainConfig) -> torch.memory_format:
    return torch.channels_last if cfg.channels_last else torch.contiguous_format


def build_model(cfg: TrainConfig, device: torch.device) -> torch.nn.Module:
    model = build_classifier(cfg.model, num_classes=cfg.num_classes, cifar_stem=cfg.cifar_stem,
                             in_channels=cfg.input_channels)
    if cfg.activation_checkpointing:
        checkpoint_stages(model, cfg.model)
    return model.to(device=device, memory_format=memory_format(cfg))


def gradient_bytes(model: torch.nn.Module) -> int:
    """Bytes of the gradients one step produces (what DDP all-reduces): every trainable parameter's
    element count times its element size (fp32 under bf16 autocast too: autocast leaves weights fp32)."""
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def cudnn_benchmark_in_force(cfg: TrainConfig) -> bool:
    """workload.cudnn_benchmark, except under DataParallel over several GPUs. PyTorch keeps the cuDNN plans
    that benchmark mode found per thread, and DataParallel runs every replica's forward in a new thread at
    every step, so each forward tunes its convolutions again: on 2 H200s a ResNet-18 step at batch 32 per GPU
    took 0.5 s (forward) instead of ~10 ms (docs/results/hw5_scaling/h200_4gpu_dp_stopped)."""
    return cfg.cudnn_benchmark and not (cfg.parallel == Parallel.dp and cfg.dp_devices > 1)


def configure_backends(cfg: TrainConfig, ctx: DistContext) -> None:
    if ctx.device.type == "cuda":
        torch.backends.cudnn.benchmark = cudnn_benchmark_in_force(cfg)
        if cfg.cudnn_benchmark and not torch.backends.cudnn.benchmark and ctx.is_main:
            print("[rank 0] note: cudnn.benchmark off under DataParallel over several GPUs (its per-step threads "
                  "would re-tune every forward)", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = tf32_in_force(cfg)
        torch.backends.cudnn.allow_tf32 = tf32_in_force(cfg)
