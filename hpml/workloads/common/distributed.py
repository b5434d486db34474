"""Process-group set-up for workers started by torchrun (one worker per GPU, or per CPU slot)."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from hpml.workloads.common.point_config import WorkerSetup

# Bound on any one collective (gloo) or on the NCCL watchdog, and on forming the group. It only matters when a
# peer hangs or a remote node dies: a worker whose torchrun dies goes at once (die_with_torchrun), and torchrun
# stops the other local workers within 30 s when one exits. It must exceed the longest stretch one rank may
# work alone before the next collective (a CPU batch probe, building a large model, loading a data set), which
# is minutes on a laptop: 10 minutes, after which a hung peer costs at most that much held GPU time.
COLLECTIVE_TIMEOUT = timedelta(minutes=10)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_torchrun() -> None:
    """Under torchrun (which starts each worker in a session of its own, out of reach of the terminal's
    signals): ask Linux to SIGKILL this worker when torchrun dies, however it dies. Without it a worker whose
    torchrun was killed sat for 18 minutes waiting for dead peers. SIGKILL: a worker blocked inside a
    collective runs no Python handler. Elsewhere than Linux, or outside torchrun, it does nothing."""
    if sys.platform != "linux" or "TORCHELASTIC_RUN_ID" not in os.environ:
        return
    parent = os.getppid()
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # torchrun died between the two calls: the signal will never come
        os.kill(os.getpid(), signal.SIGKILL)


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
    die_with_torchrun()
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
    if device_type == "cuda" and setup.workload.captures_collectives:
        # PyTorch's recipe for capturing DDP's backward in a CUDA graph: the NCCL watchdog's asynchronous error
        # handling off in this process (read when the process group is made)
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    dist.init_process_group(chosen, timeout=COLLECTIVE_TIMEOUT,
                            device_id=dev if device_type == "cuda" else None)
    return DistContext(rank=rank, local_rank=local_rank, world_size=world_size, device=dev, backend=chosen)


def all_gather_objects(obj: object) -> list:
    if dist.get_world_size() == 1:  # nothing to gather; NCCL's object gather would cost host-device round trips
        return [obj]
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


def host_identity() -> dict:
    return {"host": socket.gethostname(), "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "rank": int(os.environ.get("RANK", 0)), "local_rank": int(os.environ.get("LOCAL_RANK", 0))}
