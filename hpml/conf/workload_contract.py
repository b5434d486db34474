"""What every workload's schema declares, and the hooks through which the rest of hpml checks it.

Each workload's schema (conf/workload/<name>.py, registered in conf/workload/__init__.py) extends
`WorkloadConfig`. The base tree calls the hooks instead of asking which workload it holds:

    HpmlConfig.__post_init__   ->  workload.check_resources(resources)   rules between workload and resources
    launcher/preflight.py      ->  workload.place(Placement(...))         where the point runs, as its backend says
                               ->  workload.preflight_problems()          checks that look outside the config

Device and backend live here because every worker needs them, and their resolution rules (auto: cuda when the
point asks for GPUs, nccl on cuda, gloo on cpu) have one home: the config check and the worker's choice at
start-up (workloads/common/distributed.py) both call the methods below. `Scaling` is here too because two
workloads (train, synthetic) read their batch size through it.

Imports neither Hydra nor OmegaConf, so that workers can read their config without them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import MISSING, require


class Device(str, Enum):
    auto = "auto"  # cuda when resources.gpus_per_node > 0, else cpu
    cpu = "cpu"
    cuda = "cuda"


class Backend(str, Enum):
    auto = "auto"  # nccl when the workers have GPUs, gloo otherwise
    gloo = "gloo"
    nccl = "nccl"


class Scaling(str, Enum):
    weak = "weak"  # batch_size is each worker's batch (per-worker batch fixed as workers grow)
    strong = "strong"  # batch_size is the global batch, split over the workers (global batch fixed)


@dataclass(frozen=True)
class Placement:
    """Where a point runs, as far as its whole config tells: what a preflight check that compares the point with a
    machine (its memory) needs besides the workload's own keys."""

    resources: ResourcesConfig
    # The point's backend runs its points on the machine that launches them (Backend.runs_on_this_host: local) and
    # cluster.assume_gpus is not set: this host's memory and GPUs are the point's. False on SLURM (a login node is
    # not a compute node) and when planning a --dry-run for another machine.
    on_this_host: bool


@dataclass
class WorkloadConfig:
    """Fields every workload has; each workload's schema extends it."""

    name: str = MISSING  # the module started by torchrun: workloads.<name>
    device: Device = MISSING
    backend: Backend = MISSING

    # --- hooks -------------------------------------------------------------------------------------------

    def check_resources(self, resources: ResourcesConfig) -> None:
        """Rules between this workload and the point's resources, raising ConfigValueError (HpmlConfig calls
        it). A workload with rules of its own extends it and calls this one too."""
        require(self.backend != Backend.nccl or not self.runs_on_cpu(resources), "workload.backend",
                "gloo or auto when the workers have no GPUs (resources.gpus_per_node=0 or workload.device=cpu)",
                self.backend.value)

    def preflight_problems(self) -> List[str]:
        """Problems that only a look outside the config finds (a model name, files on disk), one line each,
        saying what to change. Called by the launcher before anything is submitted."""
        return []

    def place(self, placement: Placement) -> None:
        """The launcher's preflight records where the point runs, as the point's backend tells
        (launcher.backends.place), for preflight_problems (which takes no arguments). Not a field: it is never
        written to a point's config.yaml and takes no part in comparing configs. Workers never place their config:
        only the preflight reads it."""
        self._placement = placement

    @property
    def placement(self) -> Optional[Placement]:
        """Where the point runs; None for a config the launcher has not placed (a check then skips it)."""
        return getattr(self, "_placement", None)

    # --- device and backend ------------------------------------------------------------------------------

    @property
    def devices_per_worker(self) -> int:
        """GPUs one worker process drives (train's DataParallel drives several; every other workload one)."""
        return 1

    @property
    def captures_collectives(self) -> bool:
        """Whether the workers capture NCCL collectives in a CUDA graph (train's whole-step graph with DDP): their
        process group is then made by PyTorch's recipe for that (workloads/common/distributed.py)."""
        return False

    def runs_on_cpu(self, resources: ResourcesConfig) -> bool:
        """Whether the point's workers run on the CPU, as far as the config can tell."""
        return self.device == Device.cpu or (self.device == Device.auto and resources.gpus_per_node == 0)

    def expected_backend(self, resources: ResourcesConfig) -> Backend:
        """The backend the point's workers will use, as far as the config can tell (auto resolved)."""
        if self.backend != Backend.auto:
            return self.backend
        return Backend.gloo if self.runs_on_cpu(resources) else Backend.nccl

    def device_type(self, gpus_per_node: int, cuda_available: bool) -> str:
        """The worker's torch device type, "cuda" or "cpu"; cuda_available: what this process sees."""
        if self.device == Device.auto:
            return "cuda" if gpus_per_node > 0 and cuda_available else "cpu"
        if self.device == Device.cuda and not cuda_available:
            raise RuntimeError("workload.device=cuda but this worker sees no CUDA device "
                               f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})")
        return self.device.value

    def backend_name(self, device_type: str) -> str:
        """The torch.distributed backend for a worker on `device_type`."""
        if self.backend == Backend.auto:
            return "nccl" if device_type == "cuda" else "gloo"
        if self.backend == Backend.nccl and device_type != "cuda":
            raise RuntimeError("workload.backend=nccl needs GPUs; use backend=gloo (or auto) on CPU")
        return self.backend.value


def check_strong_scaling_batch(batch_size: int, scaling: Scaling, world_size: int) -> None:
    """With scaling=strong, batch_size is the global batch: it must split evenly over the workers."""
    if scaling == Scaling.strong:
        require(batch_size % world_size == 0, "workload.batch_size",
                f"a multiple of the world size {world_size} when workload.scaling=strong", batch_size)


def check_one_process(resources: ResourcesConfig, why: str) -> None:
    """Workloads that run in one process (paleo, quantize): one worker on one node, or one line naming the key;
    `why` completes "1 on 1 node (...)"."""
    require(resources.world_size == 1, "resources.workers_per_node", f"1 on 1 node ({why})",
            resources.workers_per_node if resources.nodes == 1 else f"{resources.workers_per_node} on "
                                                                    f"{resources.nodes} nodes")


def check_loader_workers_fit(loader_workers: int, resources: ResourcesConfig) -> None:
    """A DataLoader's worker processes share the CPUs the point gives each worker process (SLURM allocates
    workers_per_node x cpus_per_worker); more would measure their contention, not the setting."""
    require(loader_workers <= resources.cpus_per_worker, "workload.loader_workers",
            f"at most resources.cpus_per_worker={resources.cpus_per_worker}, the CPUs each worker process is "
            "given (its loader processes share them); raise resources.cpus_per_worker, up to the node's cores",
            loader_workers)
