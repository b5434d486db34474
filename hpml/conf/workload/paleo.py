"""Schema of the `paleo` workload (conf/workload/paleo.yaml; the worker: workloads/paleo/).

Per-layer forward timing of one model on one device, next to the whole forward and the device's measured
peaks, for PALEO's performance model (Qi, Sparks and Talwalkar, ICLR 2017). Its rules against the resources:
one worker (the layers of one device are timed), and TF32 only where there is a GPU to use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from hpml.conf.dtypes import DType
from hpml.conf.hardware.gpu_peaks import PEAKS
from hpml.conf.model_input import input_problem
from hpml.conf.resources import ResourcesConfig
from hpml.conf.torchvision_models import model_problem
from hpml.conf.validation import (
    MISSING,
    require,
    require_buffer,
    require_classes,
    require_input_batch,
    require_repeats,
    require_square_matrix,
)
from hpml.conf.workload_contract import WorkloadConfig, check_one_process


@dataclass
class PaleoConfig(WorkloadConfig):
    """Per-layer CUDA-event timing of an inference forward (workloads/paleo/), for PALEO (analysis/paleo/)."""

    model: str = MISSING  # hpml's own (models/names.py) or a torchvision classification model
    num_classes: int = MISSING
    image_size: int = MISSING  # inputs are batch_size x 3 x image_size x image_size, random
    batch_size: int = MISSING
    dtype: DType = MISSING  # weights and inputs in this dtype (model.to(dtype), no autocast)
    tf32: bool = MISSING  # float32 only, GPU only: let float32 matmuls and convolutions use TF32 tensor cores
    channels_last: bool = MISSING  # NHWC inputs and weights
    cudnn_benchmark: bool = MISSING  # cuDNN picks each convolution's fastest algorithm (during the warm-up)
    warmup_iters: int = MISSING  # forwards (with and without the per-layer hooks) before anything is timed
    repetitions: int = MISSING  # timed rounds: one whole forward without hooks, then one forward timed per layer
    # The platform's measured peaks (workloads/common/device_peaks.py), in the same run:
    peak_matmul_n: int = MISSING  # square matmul n x n x n in the run's dtype: 2 n^3 FLOPs
    peak_copy_bytes: int = MISSING  # device-to-device copy of this many bytes (read + written = 2x)
    peak_repetitions: int = MISSING  # timed matmuls and copies, each
    peak_warmup: int = MISSING  # untimed matmuls and copies before the timed ones, at least
    peak_window_s: float = MISSING  # and at least this long warming up, and this long timed (power-capped clocks)
    # What the analysis does with the numbers (the worker records them only):
    ppp: float = MISSING  # PALEO's platform percent of peak (PPP) for the predicted compute time, 0 < ppp <= 1
    reference_gpu: str = MISSING  # conf/hardware/gpu_peaks.py entry for the study's "time per image at its
    #                               published peaks" (fp32 and fp64): k80 in the study

    def __post_init__(self) -> None:
        for key in ("num_classes", "batch_size", "repetitions", "peak_matmul_n", "peak_copy_bytes",
                    "peak_repetitions"):
            require(getattr(self, key) >= 1, f"workload.{key}", "an integer >= 1", getattr(self, key))
        require_classes(self.num_classes)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        require_input_batch(self.batch_size, self.image_size)
        require(self.peak_copy_bytes % 4 == 0, "workload.peak_copy_bytes",
                "a positive multiple of 4 (the copy moves float32 elements)", self.peak_copy_bytes)
        require_buffer("workload.peak_copy_bytes", self.peak_copy_bytes, self.peak_copy_bytes, "each copy buffer")
        require_square_matrix("workload.peak_matmul_n", self.peak_matmul_n)
        require(self.warmup_iters >= 0, "workload.warmup_iters", "an integer >= 0", self.warmup_iters)
        require(self.peak_warmup >= 0, "workload.peak_warmup", "an integer >= 0", self.peak_warmup)
        require_repeats(self, ("warmup_iters", "repetitions", "peak_repetitions", "peak_warmup"))
        require(0 <= self.peak_window_s <= 60, "workload.peak_window_s", "a number of seconds from 0 to 60",
                self.peak_window_s)
        require(0 < self.ppp <= 1, "workload.ppp", "a number in (0, 1]: the share of the peak a layer reaches",
                self.ppp)
        require(self.reference_gpu in PEAKS, "workload.reference_gpu",
                f"one of {', '.join(PEAKS)} (conf/hardware/gpu_peaks.py)", self.reference_gpu)
        require(not self.tf32 or self.dtype == DType.float32, "workload.tf32",
                f"false unless workload.dtype=float32 (TF32 is a float32 matmul mode; dtype is {self.dtype.value})",
                self.tf32)

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        check_one_process(resources, "workload paleo times the layers of one device; sweep points for more devices")
        require(not self.tf32 or not self.runs_on_cpu(resources), "workload.tf32",
                "false on the CPU (TF32 is a mode of NVIDIA tensor cores)", self.tf32)

    def preflight_problems(self) -> List[str]:
        problem = model_problem(self.model) or input_problem(self.model, self.image_size, self.num_classes)
        return [problem] if problem else []
