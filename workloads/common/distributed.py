"""Process-group set-up for workers started by torchrun (one worker per GPU, or per CPU slot)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from workloads.common.point_config import WorkerSetup


@dataclass(frozen=True)
class DistContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device
    backend: str

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(setup: WorkerSetup) -> DistContext:
    """Joins the process group torchrun prepared (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT), on the
    device and backend the workload's schema resolves (conf/workload_contract.py).

    A 1-worker run gets a process group too, so every code path is the same at every scale.
    """
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    if world_size != setup.world_size:
        raise RuntimeError(f"torchrun started {world_size} workers but resources ask for {setup.world_size}: "
                           "one torchrun per node is expected (one SLURM task per node)")
    device_type = setup.workload.device_type(setup.gpus_per_node, torch.cuda.is_available())
    torch.set_num_threads(setup.cpus_per_worker)
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")
    chosen = setup.workload.backend_name(device_type)
    dist.init_process_group(chosen, timeout=timedelta(minutes=10),
                            device_id=dev if device_type == "cuda" else None)
    return DistContext(rank=rank, local_rank=local_rank, world_size=world_size, device=dev, backend=chosen)


def all_gather_objects(obj: object) -> list:
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


def host_identity() -> dict:
    return {"host": socket.gethostname(), "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "rank": int(os.environ.get("RANK", 0)), "local_rank": int(os.environ.get("LOCAL_RANK", 0))}
