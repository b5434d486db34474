"""What a result records about where it ran: hosts, versions, GPUs, an allow-list of environment variables."""

from __future__ import annotations

import os
import platform
from typing import Dict, List, Mapping

import torch
import torch.distributed as dist

from hpml.workloads.common.cpu import ISA_OVERRIDES, describe_cpu
from hpml.workloads.common.provenance import code_provenance, gpu_provenance

# Only these variables are recorded: enough to reproduce a run, never the whole (secret-bearing) environment.
# Every NCCL_* variable is recorded too (ENV_ALLOW_PREFIXES): NCCL's tuning knobs (NCCL_MIN_NCHANNELS,
# NCCL_BUFFSIZE, ...) change the measured bandwidth, and none of them holds a secret.
ENV_ALLOW_PREFIXES = ("NCCL_",)
ENV_ALLOW_LIST = (
    "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
    "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES",
    "SLURM_JOB_PARTITION", "SLURM_CLUSTER_NAME", "SLURM_GPUS_ON_NODE", "SLURM_CPUS_PER_TASK",
    "SLURM_RESTART_COUNT", *ISA_OVERRIDES,
)


def allowed_env(environ: Mapping[str, str] = os.environ) -> Dict[str, str]:
    return {k: v for k, v in sorted(environ.items()) if k in ENV_ALLOW_LIST or k.startswith(ENV_ALLOW_PREFIXES)}


def gpu_names() -> List[str]:
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def nccl_version() -> str | None:
    if not torch.cuda.is_available():
        return None
    try:
        return ".".join(str(v) for v in torch.cuda.nccl.version())
    except Exception:  # torch built without NCCL
        return None


def writes_the_result() -> bool:
    """Rank 0 (or a process outside a process group): the one that writes result.json."""
    return not dist.is_initialized() or dist.get_rank() == 0


def provenance() -> dict:
    """The code's version and checkout, and rank 0's host's GPU driver and topology. Only the rank that
    writes the result looks them up: 8 ranks each running git and nvidia-smi at start would only wait on
    each other. The other ranks record null."""
    if not writes_the_result():
        return {"hpml": None, "gpu_driver": None, "gpu_topology": None, "gpu_info_error": None}
    return {"hpml": code_provenance(), **gpu_provenance(torch.cuda.is_available())}


def describe_environment(ranks: List[dict], world_size: int, backend: str, device: str) -> dict:
    """ranks: one host_identity() per rank, gathered from every worker."""
    return {
        "world_size": world_size,
        "hosts": sorted({r["host"] for r in ranks}),
        "ranks": ranks,
        "backend": backend,
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl_version(),
        "gpus": gpu_names(),
        "cpu_threads_per_worker": torch.get_num_threads(),
        "cpu": describe_cpu(),
        "env": allowed_env(),
        **provenance(),
    }
