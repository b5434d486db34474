"""Process-group set-up for workers started by torchrun (one worker per GPU, or per CPU slot)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from conf.schema import ResourcesConfig
from conf.workload_schemas import Backend, Device


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


def choose_device(device: Device, resources: ResourcesConfig) -> str:
    if device == Device.auto:
        return "cuda" if resources.gpus_per_node > 0 and torch.cuda.is_available() else "cpu"
    if device == Device.cuda and not torch.cuda.is_available():
        raise RuntimeError("workload.device=cuda but this worker sees no CUDA device "
                           f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})")
    return device.value


def choose_backend(backend: Backend, device_type: str) -> str:
    if backend == Backend.auto:
        return "nccl" if device_type == "cuda" else "gloo"
    if backend == Backend.nccl and device_type != "cuda":
        raise RuntimeError("workload.backend=nccl needs GPUs; use backend=gloo (or auto) on CPU")
    return backend.value


def init_distributed(device: Device, backend: Backend, resources: ResourcesConfig) -> DistContext:
    """Joins the process group torchrun prepared (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT).

    A 1-worker run gets a process group too, so every code path is the same at every scale.
    """
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    expected = resources.world_size
    if world_size != expected:
        raise RuntimeError(f"torchrun started {world_size} workers but resources ask for {expected}: "
                           "one torchrun per node is expected (one SLURM task per node)")
    device_type = choose_device(device, resources)
    torch.set_num_threads(resources.cpus_per_worker)
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")
    chosen = choose_backend(backend, device_type)
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
