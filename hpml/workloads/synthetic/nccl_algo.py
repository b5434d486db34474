"""NCCL_ALGO for the synthetic workload (workload.nccl_algo, set with the backend by conf/collective/).

workload.nccl_algo reaches NCCL through the environment: the launcher starts torchrun with its own
environment unchanged, so this workload sets NCCL_ALGO in its own process before it creates the process
group (NCCL reads the variable when it creates a communicator). It forces the all-reduce only
(NCCL_ALGO=allreduce:ring / allreduce:tree, NCCL >= 2.24): other collectives keep NCCL's choice, since
there is no tree all-gather. The value in force is recorded in environment.env.NCCL_ALGO and
measurements.nccl_algo_env.
"""

from __future__ import annotations

import os
from typing import Optional

import torch

from hpml.conf.workload.synthetic import NcclAlgo, SyntheticConfig

PER_COLLECTIVE_NCCL = (2, 24)  # NCCL_ALGO="allreduce:tree" (one collective's algorithm) from NCCL 2.24 on


def nccl_algo_value(algo: NcclAlgo, nccl_version: Optional[tuple]) -> str:
    """NCCL_ALGO for forcing the all-reduce's algorithm only. A bare "Tree" would apply to every collective,
    and NCCL has no tree all-gather or broadcast: torch's own all_gather_object then fails ("no algorithm/
    protocol available for function AllGather ... NCCL_ALGO was set to Tree", NCCL 2.28.9 on 2 H200)."""
    if nccl_version is not None and tuple(nccl_version[:2]) >= PER_COLLECTIVE_NCCL:
        return f"allreduce:{algo.value.lower()}"
    if algo == NcclAlgo.Tree:
        raise RuntimeError(f"workload.nccl_algo=Tree needs NCCL >= 2.24 (NCCL_ALGO=allreduce:tree); this torch "
                           f"has NCCL {nccl_version}, where NCCL_ALGO=Tree breaks every other collective")
    return algo.value  # Ring: every collective has a ring algorithm


def local_nccl_version() -> Optional[tuple]:
    try:
        return tuple(torch.cuda.nccl.version())
    except Exception:  # torch built without NCCL
        return None


def set_nccl_algo(algo: NcclAlgo, nccl_version: Optional[tuple]) -> Optional[str]:
    """Export NCCL_ALGO for this process (before the process group exists); returns the value in force."""
    if algo != NcclAlgo.auto:
        os.environ["NCCL_ALGO"] = nccl_algo_value(algo, nccl_version)
    return os.environ.get("NCCL_ALGO")


def export_nccl_algo(cfg: SyntheticConfig) -> None:
    """start_worker's before_init: NCCL reads NCCL_ALGO when it creates a communicator, so it is set before the
    process group exists."""
    set_nccl_algo(cfg.nccl_algo, local_nccl_version() if cfg.nccl_algo != NcclAlgo.auto else None)
