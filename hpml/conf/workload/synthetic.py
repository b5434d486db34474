"""Schema of the `synthetic` workload (conf/workload/synthetic.yaml; the worker: workloads/synthetic/).

Horovod's synthetic benchmark with device-side timing. Its own rules against the resources: strong scaling's
batch split, and NCCL_ALGO only where the backend is nccl.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from hpml.conf.model_input import input_problem
from hpml.conf.resources import ResourcesConfig
from hpml.conf.torchvision_models import torchvision_models
from hpml.conf.validation import (
    MISSING,
    require,
    require_classes,
    require_input_batch,
    require_price,
    require_repeats,
    shown,
)
from hpml.conf.workload_contract import Backend, Scaling, WorkloadConfig, check_strong_scaling_batch
from hpml.contract.train_format import per_worker_batch as worker_batch


class GradientSync(str, Enum):
    """How gradients are averaged over the workers (the YAML key is `data_parallel`). Not torch's
    nn.DataParallel: both choices are multi-process data parallelism."""

    ddp = "ddp"  # torch DistributedDataParallel; fusion_threshold_mb is its bucket_cap_mb
    horovod = "horovod"  # workloads/synthetic/horovod_style.DistributedOptimizer (Horovod's, on torch.distributed)


class NcclAlgo(str, Enum):
    """NCCL's algorithm for collectives; reaches NCCL as the NCCL_ALGO environment variable, which the
    workload sets in its own process before the process group is created (workloads/synthetic/nccl_algo.py)."""

    auto = "auto"  # NCCL chooses; NCCL_ALGO is left as the environment has it
    Ring = "Ring"
    Tree = "Tree"


@dataclass
class SyntheticConfig(WorkloadConfig):
    """Horovod's synthetic benchmark (pytorch_synthetic_benchmark.py) with device-side timing
    (workloads/synthetic/): random data on the device, warm-up batches, then num_iters iterations of
    num_batches_per_iter batches, images/s of every iteration kept per rank.
    `backend` is set together with nccl_algo by the `collective` config group (conf/collective/)."""

    model: str = MISSING  # a torchvision classification model name (Horovod's default: resnet50)
    num_classes: int = MISSING
    image_size: int = MISSING  # inputs are 3 x image_size x image_size
    batch_size: int = MISSING  # per worker (scaling=weak) or global (scaling=strong)
    scaling: Scaling = MISSING
    num_warmup_batches: int = MISSING  # not timed
    num_batches_per_iter: int = MISSING  # batches per timed iteration
    num_iters: int = MISSING  # timed iterations
    lr: float = MISSING  # plain SGD, as Horovod's benchmark
    data_parallel: GradientSync = MISSING
    fusion_threshold_mb: float = MISSING  # MiB per gradient bucket (Horovod's fusion threshold, DDP's
    #                                       bucket_cap_mb); 0: one all-reduce per gradient
    fp16_allreduce: bool = MISSING  # gradients travel as fp16 (Horovod's Compression.fp16 / DDP's fp16 hook)
    ddp_broadcast_buffers: bool = MISSING  # ddp only: rank 0's buffers (BatchNorm statistics) sent at every forward
    backward_passes_per_step: int = MISSING  # gradient accumulation: forward+backward passes per optimizer step
    paired_rounds: int = MISSING  # after the protocol: rounds of one DDP and one Horovod-style iteration side by
    #                               side in one process (workloads/synthetic/paired.py); 0: off
    nccl_algo: NcclAlgo = MISSING  # set with backend by the `collective` config group, or one by one
    # What a measured rate means for a whole training run (analysis only):
    epoch_images: int = MISSING  # images in one epoch, e.g. 1281167 (ImageNet-1k train)
    train_epochs: int = MISSING  # epochs of the training whose cost is estimated (e.g. 90 for ResNet-50)
    # Set together by the `pricing` config group (conf/pricing/<name>.yaml), never by hand:
    price_name: str = MISSING  # the price table's entry; "none" when no price is known
    gpu_hour_usd: Optional[float] = MISSING  # price of one GPU for one hour, US$; null: unknown

    def __post_init__(self) -> None:
        for key in ("num_classes", "batch_size", "num_batches_per_iter", "num_iters", "backward_passes_per_step",
                    "epoch_images", "train_epochs"):
            require(getattr(self, key) >= 1, f"workload.{key}", "an integer >= 1", getattr(self, key))
        require_classes(self.num_classes)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        require_input_batch(self.batch_size, self.image_size)
        for key in ("num_warmup_batches", "paired_rounds"):
            require(getattr(self, key) >= 0, f"workload.{key}", "an integer >= 0", getattr(self, key))
        require_repeats(self, ("num_warmup_batches", "num_batches_per_iter", "num_iters", "backward_passes_per_step",
                               "paired_rounds"))
        require(self.lr > 0, "workload.lr", "a number > 0", self.lr)
        require(self.fusion_threshold_mb >= 0, "workload.fusion_threshold_mb", "a number >= 0 (MiB; 0: no fusion)",
                self.fusion_threshold_mb)
        require_price(self.price_name, self.gpu_hour_usd)

    def check_resources(self, resources: ResourcesConfig) -> None:
        check_strong_scaling_batch(self.batch_size, self.scaling, resources.world_size)
        super().check_resources(resources)
        require(self.nccl_algo == NcclAlgo.auto or self.expected_backend(resources) != Backend.gloo,
                "workload.nccl_algo",
                "auto unless the backend is nccl (NCCL_ALGO means nothing to gloo); sweep "
                "collective=gloo,nccl_ring,nccl_tree rather than backend x nccl_algo", self.nccl_algo.value)

    def preflight_problems(self) -> List[str]:
        """The worker builds the model with torchvision.models.get_model: a torchvision name that takes the input."""
        if self.model not in torchvision_models():
            return [f"workload.model={shown(self.model)}: not a torchvision classification model (the synthetic "
                    "benchmark builds it with torchvision.models.get_model; e.g. resnet50, resnet18)"]
        problem = input_problem(self.model, self.image_size, self.num_classes)
        return [problem] if problem else []

    def per_worker_batch(self, world_size: int) -> int:
        return worker_batch(self.batch_size, self.scaling.value, world_size)
