"""The model of the train workload: a torchvision classifier, optionally with the CIFAR ResNet stem, and how
it runs on the device (memory format, cuDNN benchmark mode, TF32).

`cifar_stem=true` (ResNets only) replaces the ImageNet stem (7x7 stride-2 conv + 3x3 stride-2 max-pool,
which shrink a 32x32 image to 8x8 before the first block) by a 3x3 stride-1 conv and no pool: the
ResNet-18 of the CIFAR-10 literature and course assignments (He et al. 2016, sec. 4.2 style stem; e.g.
kuangliu/pytorch-cifar), with torchvision's blocks unchanged.
"""

from __future__ import annotations

import torch
import torchvision

from conf.workload.train import Parallel, TrainConfig
from workloads.common.distributed import DistContext


def memory_format(cfg: TrainConfig) -> torch.memory_format:
    return torch.channels_last if cfg.channels_last else torch.contiguous_format


def build_model(cfg: TrainConfig, device: torch.device) -> torch.nn.Module:
    model = torchvision.models.get_model(cfg.model, num_classes=cfg.num_classes)
    if cfg.cifar_stem:
        if not isinstance(model, torchvision.models.ResNet):
            raise ValueError(f"workload.cifar_stem=true needs a ResNet (resnet18, resnet50, ...), not "
                             f"workload.model={cfg.model}")
        model.conv1 = torch.nn.Conv2d(3, model.conv1.out_channels, kernel_size=3, stride=1, padding=1,
                                      bias=False)
        model.maxpool = torch.nn.Identity()
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
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32
