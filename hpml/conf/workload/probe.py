"""Schema of the `probe` workload (conf/workload/probe.yaml; the worker: workloads/probe/).

The hardware probe: each GPU's measured matmul TFLOP/s, device memory and host-link GB/s, next to the published
peaks of conf/hardware/gpu_peaks.py. Its rule against the resources: one worker per requested GPU, so that one
result covers every GPU of the allocation; tf32 only where there is a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import MISSING, require, require_buffer, require_repeats, require_square_matrix
from hpml.conf.workload_contract import WorkloadConfig

# Matmul dtypes, named as the peak table's tflops keys (conf/hardware/gpu_peaks.py): fp32 is float32 with TF32
# off, tf32 the same product with TF32 tensor cores on.
MATMUL_DTYPES = ("fp32", "tf32", "bf16", "fp16")


@dataclass
class ProbeConfig(WorkloadConfig):
    """Measured peaks of each GPU (workloads/probe/, measuring with workloads/common/device_peaks.py)."""

    matmul_n: int = MISSING  # square matmul n x n x n: 2 n^3 FLOPs
    matmul_dtypes: List[str] = MISSING  # a subset of MATMUL_DTYPES, each measured in turn
    products_per_round: int = MISSING  # matmul rounds alternate the probe's timing and the reference's (plain
    #                                    torch.matmul, wall clock): this many products each, per round
    copy_bytes: int = MISSING  # each buffer of the device copy and each of the triad's 3 float32 arrays
    transfer_bytes: int = MISSING  # each host<->device copy (GPU only)
    warmup: int = MISSING  # untimed repetitions before each measurement, at least
    warmup_s: float = MISSING  # and untimed seconds at least: a GPU under its power cap clocks down after a burst
    reps: int = MISSING  # timed repetitions of each measurement (matmul: rounds), at least (in rounds of reps),
    measure_s: float = MISSING  # and timed seconds at least: the clock swings under a power cap

    def __post_init__(self) -> None:
        for key in ("matmul_n", "products_per_round", "transfer_bytes", "reps"):
            require(getattr(self, key) >= 1, f"workload.{key}", "an integer >= 1", getattr(self, key))
        require(self.warmup >= 0, "workload.warmup", "an integer >= 0", self.warmup)
        require_repeats(self, ("products_per_round", "warmup", "reps"))
        for key in ("warmup_s", "measure_s"):
            require(getattr(self, key) >= 0, f"workload.{key}", "a number of seconds >= 0", getattr(self, key))
        require(self.copy_bytes >= 4 and self.copy_bytes % 4 == 0, "workload.copy_bytes",
                "a positive multiple of 4 bytes (float32 elements)", self.copy_bytes)
        require_square_matrix("workload.matmul_n", self.matmul_n)
        require_buffer("workload.copy_bytes", self.copy_bytes, self.copy_bytes, "each copy and triad buffer")
        require_buffer("workload.transfer_bytes", self.transfer_bytes, self.transfer_bytes, "each host<->device copy")
        require(len(self.matmul_dtypes) >= 1 and set(self.matmul_dtypes) <= set(MATMUL_DTYPES)
                and len(set(self.matmul_dtypes)) == len(self.matmul_dtypes), "workload.matmul_dtypes",
                f"a list of distinct values from {', '.join(MATMUL_DTYPES)}", list(self.matmul_dtypes))

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        require(resources.gpus_per_node == 0 or resources.workers_per_node == resources.gpus_per_node,
                "resources.workers_per_node", f"resources.gpus_per_node={resources.gpus_per_node} (the probe "
                "measures every GPU of the allocation, one worker each)", resources.workers_per_node)
        require("tf32" not in self.matmul_dtypes or not self.runs_on_cpu(resources), "workload.matmul_dtypes",
                "no tf32 on the CPU (TF32 is a mode of NVIDIA tensor cores)", list(self.matmul_dtypes))
        # The windows alone must fit in the job's time: each measurement (every matmul dtype, copy, triad and,
        # on GPUs, four host transfers) warms up and times for at least warmup_s + measure_s, GPU after GPU.
        measurements = len(self.matmul_dtypes) + 2 + (0 if self.runs_on_cpu(resources) else 4)
        gpus = 1 if self.runs_on_cpu(resources) else resources.gpus_per_node * resources.nodes
        windows_s = measurements * (self.warmup_s + self.measure_s) * gpus
        require(windows_s < 60 * resources.time_min, "workload.warmup_s + workload.measure_s",
                f"small enough that {measurements} measurements x (warmup_s + measure_s) x {gpus} GPU(s) fit in "
                f"resources.time_min={resources.time_min} min (now at least {windows_s:.3g} s)",
                self.warmup_s + self.measure_s)
