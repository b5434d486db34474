"""Typed schemas of the `workload` config group: train, allreduce and synthetic (conf/workload/*.yaml).

Each workload's dataclass, its enums and its own checks (those against the point's resources included:
check_data_parallel, SyntheticConfig.check_resources) live here; the base tree (sweep, resources, cluster,
HpmlConfig) and config_from_dict are in conf/schema.py, which imports this module. This module imports
conf/schema.py only for type annotations, so there is no import cycle. Like conf/schema.py it imports
neither Hydra nor OmegaConf, so that workers can use it to read their config.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Dict, List, Optional

from conf.validation import MISSING, require

if TYPE_CHECKING:
    from conf.schema import ResourcesConfig


class Backend(str, Enum):
    auto = "auto"  # nccl when the workers have GPUs, gloo otherwise
    gloo = "gloo"
    nccl = "nccl"


class Device(str, Enum):
    auto = "auto"  # cuda when resources.gpus_per_node > 0, else cpu
    cpu = "cpu"
    cuda = "cuda"


class Dataset(str, Enum):
    synthetic = "synthetic"  # random images of the configured shape, generated per worker
    cifar10 = "cifar10"  # torchvision.datasets.CIFAR10 read from data_root (never downloaded)
    image_folder = "image_folder"  # torchvision.datasets.ImageFolder at data_root/train
    # cifar10 when data_root holds torchvision's CIFAR-10 files, else synthetic (the result says which)
    auto = "auto"
    # random batches made once on the training device: no loader, no host-to-device copy (a compute
    # benchmark, like Horovod's synthetic benchmark)
    synthetic_device = "synthetic_device"


class Parallel(str, Enum):
    ddp = "ddp"  # DistributedDataParallel: one process per GPU (torchrun workers)
    dp = "dp"  # nn.DataParallel: one process driving workload.dp_devices GPUs of its node


class Precision(str, Enum):
    fp32 = "fp32"
    bf16 = "bf16"  # torch.autocast(bfloat16) around forward and loss; weights and gradients stay fp32


class LrScaling(str, Enum):
    none = "none"  # lr is used as given
    linear = "linear"  # Goyal et al.: lr * global_batch / lr_base_batch


class Scaling(str, Enum):
    weak = "weak"  # batch_size is each worker's batch (per-worker batch fixed as workers grow)
    strong = "strong"  # batch_size is the global batch, split over the workers (global batch fixed)


@dataclass
class WorkloadConfig:
    """Fields every workload has; each workload's schema extends it."""

    name: str = MISSING  # the module started by torchrun: workloads.<name>


@dataclass
class TrainConfig(WorkloadConfig):
    model: str = MISSING  # a torchvision classification model name (resnet18, resnet50, ...)
    num_classes: int = MISSING
    image_size: int = MISSING  # inputs are 3 x image_size x image_size
    dataset: Dataset = MISSING
    data_root: Optional[str] = None  # required for cifar10 / image_folder; never downloaded
    synthetic_samples: int = MISSING  # size of the synthetic data set (per epoch, all workers together)
    batch_size: int = MISSING  # per worker (scaling=weak) or global (scaling=strong)
    scaling: Scaling = MISSING
    epochs: int = MISSING  # epoch 1 is warm-up; reported epoch time is the mean of epochs 2..N
    lr: float = MISSING
    momentum: float = MISSING
    weight_decay: float = MISSING
    device: Device = MISSING
    backend: Backend = MISSING
    loader_workers: int = MISSING  # DataLoader num_workers per training worker
    checkpoint: bool = MISSING  # save after every epoch; a requeued job resumes from the last one
    # --- batch size x GPU count study (docs/studies/batch-gpu-scaling.md) ---
    parallel: Parallel = MISSING
    dp_devices: int = MISSING  # parallel=dp: GPUs the one DataParallel process spans; must be 1 for ddp
    precision: Precision = MISSING
    channels_last: bool = MISSING  # inputs and weights in NHWC memory format (faster convolutions on GPUs)
    cudnn_benchmark: bool = MISSING  # torch.backends.cudnn.benchmark (GPU only)
    tf32: bool = MISSING  # allow TF32 in fp32 matmuls and convolutions (GPU only)
    compile: bool = MISSING  # torch.compile the (wrapped) model; compilation falls in the warm-up epoch
    cifar_stem: bool = MISSING  # ResNets: 3x3 stride-1 first conv and no max-pool (the CIFAR ResNet-18)
    lr_scaling: LrScaling = MISSING
    lr_base_batch: int = MISSING  # the global batch that lr is meant for (lr_scaling=linear)
    warmup_epochs: float = MISSING  # gradual warm-up (Goyal et al.) from lr to the scaled lr; 0: none
    comm_probe_steps: int = MISSING  # ddp: steps timed with no_sync() and synced, after training; 0: off
    profile_comm_steps: int = MISSING  # GPU: steps under torch.profiler for NCCL kernel time; 0: off
    overhead_check_steps: int = MISSING  # steps per block of the plain vs instrumented loop check; 0: off
    overhead_check_rounds: int = MISSING  # alternating (plain, instrumented) block pairs
    max_batch_probe: int = MISSING  # 0: off; else double the per-device batch up to this until OOM
    # Set together by the `hardware` config group (conf/hardware/<link>.yaml), never by hand:
    link: str = MISSING  # the hardware table's entry; "none" when no peak is known
    link_peak_GBps: Optional[float] = MISSING  # the link's peak per direction, GB/s; null: unknown

    def __post_init__(self) -> None:
        require(self.num_classes >= 2, "workload.num_classes", "an integer >= 2", self.num_classes)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        require(self.synthetic_samples >= 1, "workload.synthetic_samples", "an integer >= 1",
                self.synthetic_samples)
        require(self.batch_size >= 1, "workload.batch_size", "an integer >= 1", self.batch_size)
        require(self.epochs >= 2, "workload.epochs",
                "an integer >= 2 (epoch 1 is warm-up and is not reported)", self.epochs)
        require(self.lr > 0, "workload.lr", "a number > 0", self.lr)
        require(self.loader_workers >= 0, "workload.loader_workers", "an integer >= 0", self.loader_workers)
        require(self.dataset not in (Dataset.cifar10, Dataset.image_folder) or bool(self.data_root),
                "workload.data_root",
                f"a directory holding the data set when workload.dataset={self.dataset.value}",
                self.data_root)
        require(self.dp_devices >= 1, "workload.dp_devices", "an integer >= 1", self.dp_devices)
        require(self.parallel == Parallel.dp or self.dp_devices == 1, "workload.dp_devices",
                "1 when workload.parallel=ddp (one GPU per process)", self.dp_devices)
        require(self.lr_base_batch >= 1, "workload.lr_base_batch", "an integer >= 1", self.lr_base_batch)
        require(self.warmup_epochs >= 0, "workload.warmup_epochs", "a number >= 0 (0: no warm-up)",
                self.warmup_epochs)
        for key in ("comm_probe_steps", "profile_comm_steps", "overhead_check_steps", "max_batch_probe"):
            require(getattr(self, key) >= 0, f"workload.{key}", "an integer >= 0 (0: off)", getattr(self, key))
        require(self.overhead_check_rounds >= 1, "workload.overhead_check_rounds", "an integer >= 1",
                self.overhead_check_rounds)
        require(self.max_batch_probe == 0 or self.max_batch_probe >= self.batch_size, "workload.max_batch_probe",
                f"0 (off) or a batch >= workload.batch_size={self.batch_size}", self.max_batch_probe)
        require((self.link == "none") == (self.link_peak_GBps is None), "workload.link_peak_GBps",
                "null exactly when workload.link=none; choose the link with hardware=<name> "
                "(conf/hardware/), which sets both", self.link_peak_GBps)

    @property
    def devices_per_worker(self) -> int:
        """Devices one worker process drives: dp_devices for DataParallel, 1 for DDP."""
        return self.dp_devices if self.parallel == Parallel.dp else 1


def check_data_parallel(cfg: TrainConfig, resources: ResourcesConfig) -> None:
    """parallel=dp is one process (one worker on one node) driving dp_devices GPUs of that node."""
    require(resources.nodes == 1 and resources.workers_per_node == 1, "resources.workers_per_node",
            "1 on 1 node when workload.parallel=dp (DataParallel is one process; use parallel=ddp for "
            "one process per GPU)", f"{resources.workers_per_node} on {resources.nodes} node(s)")
    if resources.gpus_per_node == 0:
        require(cfg.dp_devices == 1, "workload.dp_devices",
                "1 without GPUs (resources.gpus_per_node=0: DataParallel runs the module on the CPU)",
                cfg.dp_devices)
    else:
        require(cfg.dp_devices <= resources.gpus_per_node, "workload.dp_devices",
                f"at most resources.gpus_per_node={resources.gpus_per_node}", cfg.dp_devices)


class DType(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


DTYPE_BYTES: Dict[DType, int] = {DType.float32: 4, DType.bfloat16: 2, DType.float16: 2}


class AllreduceImpl(str, Enum):
    hpml = "hpml"  # hpml's loop: each iteration timed (CUDA events on GPU), no synchronize per iteration
    raw = "raw"  # a bare all_reduce loop timed by wall clock around the whole loop: the reference


@dataclass
class AllreduceConfig(WorkloadConfig):
    """All-reduce bandwidth micro-benchmark (workloads/allreduce.py), like nccl-tests' all_reduce_perf."""

    min_bytes: int = MISSING  # smallest message; sizes double from min_bytes up to max_bytes
    max_bytes: int = MISSING  # largest message: min_bytes * 2**k
    dtype: DType = MISSING
    device: Device = MISSING
    backend: Backend = MISSING
    warmup_iters: int = MISSING  # per size, not timed
    iters: int = MISSING  # per size, timed
    impl: AllreduceImpl = MISSING
    # Set together by the `hardware` config group (conf/hardware/<link>.yaml), never by hand:
    link: str = MISSING  # the hardware table's entry; "none" when no peak is known
    link_peak_GBps: Optional[float] = MISSING  # the link's peak per direction, GB/s (1e9 B/s); null: unknown

    def __post_init__(self) -> None:
        element = DTYPE_BYTES[self.dtype]
        require(self.min_bytes >= element and self.min_bytes % element == 0, "workload.min_bytes",
                f"a positive multiple of {element} bytes (one {self.dtype.value} element)", self.min_bytes)
        ratio = self.max_bytes // self.min_bytes
        require(self.max_bytes >= self.min_bytes and self.max_bytes % self.min_bytes == 0
                and ratio & (ratio - 1) == 0, "workload.max_bytes",
                f"workload.min_bytes={self.min_bytes} times a power of 2 (sizes double from min to max)",
                self.max_bytes)
        require(self.warmup_iters >= 0, "workload.warmup_iters", "an integer >= 0", self.warmup_iters)
        require(self.iters >= 1, "workload.iters", "an integer >= 1", self.iters)
        require((self.link == "none") == (self.link_peak_GBps is None), "workload.link_peak_GBps",
                "null exactly when workload.link=none; choose the link with hardware=<name> "
                "(conf/hardware/), which sets both", self.link_peak_GBps)
        require(self.link_peak_GBps is None or self.link_peak_GBps > 0, "workload.link_peak_GBps",
                "a number > 0 (GB/s per direction) or null", self.link_peak_GBps)

    @property
    def sizes_bytes(self) -> List[int]:
        """Every message size, doubling from min_bytes to max_bytes."""
        sizes = [self.min_bytes]
        while sizes[-1] < self.max_bytes:
            sizes.append(sizes[-1] * 2)
        return sizes


class DataParallel(str, Enum):
    ddp = "ddp"  # torch DistributedDataParallel; fusion_threshold_mb is its bucket_cap_mb
    horovod = "horovod"  # workloads/common/horovod_style.DistributedOptimizer (Horovod's, on torch.distributed)


class NcclAlgo(str, Enum):
    """NCCL's algorithm for collectives; reaches NCCL as the NCCL_ALGO environment variable, which the
    workload sets in its own process before the process group is created (workloads/synthetic.py)."""

    auto = "auto"  # NCCL chooses; NCCL_ALGO is left as the environment has it
    Ring = "Ring"
    Tree = "Tree"


@dataclass
class SyntheticConfig(WorkloadConfig):
    """Horovod's synthetic benchmark (pytorch_synthetic_benchmark.py) with device-side timing
    (workloads/synthetic.py): random data on the device, warm-up batches, then num_iters iterations of
    num_batches_per_iter batches, images/s of every iteration kept per rank."""

    model: str = MISSING  # a torchvision classification model name (Horovod's default: resnet50)
    num_classes: int = MISSING
    image_size: int = MISSING  # inputs are 3 x image_size x image_size
    batch_size: int = MISSING  # per worker (scaling=weak) or global (scaling=strong)
    scaling: Scaling = MISSING
    num_warmup_batches: int = MISSING  # not timed
    num_batches_per_iter: int = MISSING  # batches per timed iteration
    num_iters: int = MISSING  # timed iterations
    lr: float = MISSING  # plain SGD, as Horovod's benchmark
    data_parallel: DataParallel = MISSING
    fusion_threshold_mb: float = MISSING  # MiB per gradient bucket (Horovod's fusion threshold, DDP's
    #                                       bucket_cap_mb); 0: one all-reduce per gradient
    fp16_allreduce: bool = MISSING  # gradients travel as fp16 (Horovod's Compression.fp16 / DDP's fp16 hook)
    ddp_broadcast_buffers: bool = MISSING  # ddp only: rank 0's buffers (BatchNorm statistics) sent at every forward
    backward_passes_per_step: int = MISSING  # gradient accumulation: forward+backward passes per optimizer step
    paired_rounds: int = MISSING  # after the protocol: rounds of one DDP and one Horovod-style iteration side by
    #                               side in one process (workloads/paired.py); 0: off
    device: Device = MISSING
    # Set together by the `collective` config group (conf/collective/), or one by one:
    backend: Backend = MISSING
    nccl_algo: NcclAlgo = MISSING
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
        require(self.num_classes >= 2, "workload.num_classes", "an integer >= 2", self.num_classes)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        for key in ("num_warmup_batches", "paired_rounds"):
            require(getattr(self, key) >= 0, f"workload.{key}", "an integer >= 0", getattr(self, key))
        require(self.lr > 0, "workload.lr", "a number > 0", self.lr)
        require(self.fusion_threshold_mb >= 0, "workload.fusion_threshold_mb", "a number >= 0 (MiB; 0: no fusion)",
                self.fusion_threshold_mb)
        require((self.price_name == "none") == (self.gpu_hour_usd is None), "workload.gpu_hour_usd",
                "null exactly when workload.price_name=none; choose a price with pricing=<name> "
                "(conf/pricing/), which sets both", self.gpu_hour_usd)
        require(self.gpu_hour_usd is None or self.gpu_hour_usd > 0, "workload.gpu_hour_usd",
                "a number > 0 (US$ per GPU-hour) or null", self.gpu_hour_usd)

    def check_resources(self, resources: ResourcesConfig) -> None:
        """Rules between this workload and the point's resources (called by HpmlConfig)."""
        world = resources.world_size
        if self.scaling == Scaling.strong:
            require(self.batch_size % world == 0, "workload.batch_size",
                    f"a multiple of the world size {world} when workload.scaling=strong", self.batch_size)
        on_cpu = self.device == Device.cpu or (self.device == Device.auto and resources.gpus_per_node == 0)
        gloo = self.backend == Backend.gloo or (self.backend == Backend.auto and on_cpu)
        require(self.backend != Backend.nccl or not on_cpu, "workload.backend",
                "gloo or auto when the workers have no GPUs (resources.gpus_per_node=0 or workload.device=cpu)",
                self.backend.value)
        require(self.nccl_algo == NcclAlgo.auto or not gloo, "workload.nccl_algo",
                "auto unless the backend is nccl (NCCL_ALGO means nothing to gloo); sweep "
                "collective=gloo,nccl_ring,nccl_tree rather than backend x nccl_algo", self.nccl_algo.value)

    def per_worker_batch(self, world_size: int) -> int:
        return self.batch_size if self.scaling == Scaling.weak else self.batch_size // world_size


# Which schema each `workload` config-group option uses; the launcher registers them with Hydra.
WORKLOAD_SCHEMAS: Dict[str, type] = {"train": TrainConfig, "allreduce": AllreduceConfig,
                                     "synthetic": SyntheticConfig}
