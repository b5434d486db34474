"""What one sweep point asks of the cluster (the `resources` section of the config tree).

A module of its own because the base tree (conf/schema.py) and every workload schema (conf/workload/*.py,
whose check_resources hooks take it) use it; kept in conf/schema.py it would make workload schemas import the
module that imports them. Imports neither Hydra nor OmegaConf, so that workers can read their config.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpml.conf.validation import MISSING, require

MAX_NODES = 4096
MAX_PER_NODE = 1024  # workers or CPU threads per node
MAX_GPUS_PER_NODE = 64
# Memory per node in GB: 64 TiB, above the largest single-system-image machines (HPE Superdome Flex: 48 TB); SLURM
# refuses a request no node can meet only at sbatch time, after the sweep is written
MAX_MEM_GB = 65536
# A job's wall-clock limit: a year, far above any partition's (days); SLURM keeps the limit in 32-bit minutes
# and reads a larger number as no limit or refuses the script at sbatch time.
MAX_TIME_MIN = 365 * 24 * 60


@dataclass
class ResourcesConfig:
    """What one sweep point asks of the cluster. Points with equal resources share one job array."""

    nodes: int = MISSING
    workers_per_node: int = MISSING  # torchrun --nproc_per_node: one worker per GPU, or per CPU slot
    gpus_per_node: int = MISSING  # GPUs requested per node; 0 runs on CPU
    cpus_per_worker: int = MISSING  # CPU threads each worker may use (torch.set_num_threads)
    mem_gb: int = MISSING  # memory per node; 0 leaves it to the cluster's default
    time_min: int = MISSING  # wall-clock limit of the job

    def __post_init__(self) -> None:
        # Upper bounds far above any real machine: they catch typos (a million GPUs) in one line on every
        # cluster, before a scheduler or the OS does in many. The local cluster's tighter bounds (this
        # machine's cores and GPUs) are in launcher/backends/local/preflight.py; SLURM's in launcher/backends/slurm/preflight.py.
        for key, low, high in (("nodes", 1, MAX_NODES), ("workers_per_node", 1, MAX_PER_NODE),
                               ("gpus_per_node", 0, MAX_GPUS_PER_NODE), ("cpus_per_worker", 1, MAX_PER_NODE)):
            value = getattr(self, key)
            require(value >= low, f"resources.{key}", f"an integer >= {low}", value)
            require(value <= high, f"resources.{key}", f"at most {high} (no machine has more)", value)
        require(self.gpus_per_node == 0 or self.workers_per_node <= self.gpus_per_node,
                "resources.workers_per_node", f"at most resources.gpus_per_node={self.gpus_per_node} "
                "(one worker per GPU)", self.workers_per_node)
        require(0 <= self.mem_gb <= MAX_MEM_GB, "resources.mem_gb",
                f"an integer from 0 (the cluster's default) to {MAX_MEM_GB} (GB per node; no machine has more)",
                self.mem_gb)
        require(1 <= self.time_min <= MAX_TIME_MIN, "resources.time_min",
                f"an integer from 1 to {MAX_TIME_MIN} (minutes: a year at most)", self.time_min)

    @property
    def world_size(self) -> int:
        return self.nodes * self.workers_per_node
