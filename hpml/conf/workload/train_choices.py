"""The values of the train workload's enumerated keys (workload.parallel, precision, compile, data_placement,
warmup_from, lr_decay, lr_scaling), each with what it means; the schema that uses them is conf/workload/train.py.
Read by the worker (workloads/train/) and the dataloader workload too."""

from __future__ import annotations

from enum import Enum


class Parallel(str, Enum):
    ddp = "ddp"  # DistributedDataParallel: one process per GPU (torchrun workers)
    dp = "dp"  # nn.DataParallel: one process driving workload.dp_devices GPUs of its node
    # one worker, the bare model: no wrapper, no gradient all-reduce. DDP over a single process all-reduces with
    # itself, and on a small model its per-parameter bucket copies cost more than the step's own kernels
    # (docs/results/tta_digits_device/); the time-to-accuracy presets run one GPU per point this way
    none = "none"


class Precision(str, Enum):
    fp32 = "fp32"  # fp32 math; TF32 in matmuls and convolutions only where workload.tf32=true
    tf32 = "tf32"  # fp32 weights and tensors, TF32 tensor-core math in matmuls and convolutions (whatever tf32 says)
    # torch.autocast(float16) around forward and loss with a gradient scaler (torch.amp.GradScaler): fp16's
    # 5-bit exponent underflows small gradients without one; weights and gradients stay fp32
    fp16 = "fp16"
    bf16 = "bf16"  # torch.autocast(bfloat16) around forward and loss; weights and gradients stay fp32


class CompileMode(str, Enum):
    """torch.compile's modes (workload.compile); compiling falls in the first steps, the warm-up epoch."""

    none = "none"  # eager
    default = "default"  # inductor's fused kernels
    # default plus CUDA graphs (torch's graph trees): a replay per compiled region instead of a launch per kernel
    reduce_overhead = "reduce_overhead"
    max_autotune = "max_autotune"  # reduce_overhead plus a search over matmul/convolution kernels (minutes)

    @property
    def torch_mode(self) -> str:
        """torch.compile's spelling ("reduce-overhead"); the config's has underscores (Hydra enum names)."""
        return self.value.replace("_", "-")


class DataPlacement(str, Enum):
    host = "host"  # a DataLoader: per-sample transforms on the host, a host-to-device copy per batch
    # cifar10 / image_folder: the splits decoded once and kept as uint8 on each worker's device; batches are
    # index slices of the epoch's permutation, augmented there (workloads/train/device_data.py)
    device = "device"


class BatchPrep(str, Enum):
    """data_placement=device: when a step's batch is sliced and augmented (workloads/train/device_data.py)."""

    step = "step"  # each step's batch made when the step asks for it: about 20 small kernels and their launches
    # the whole epoch's batches made at the epoch's start, in a few large kernels; each step is then a slice of them
    # (no launch): what a graphed step at a small per-GPU batch otherwise waits on (airbench's loader does this)
    epoch = "epoch"


class WarmupFrom(str, Enum):
    lr = "lr"  # Goyal et al.: from the base rate lr to the scaled rate
    zero = "zero"  # from 0 to the rate (one-cycle / triangular schedules)


class LrDecay(str, Enum):
    none = "none"  # the rate holds after the warm-up
    linear = "linear"  # from the rate after warm-up to 0 at the end of epoch lr_decay_epochs, then 0
    step = "step"  # the rate times lr_gamma at each of lr_milestones (He et al.'s schedule: / 10 at two epochs)


class LrScaling(str, Enum):
    none = "none"  # lr is used as given
    linear = "linear"  # Goyal et al.: lr * global_batch / lr_base_batch
