"""Cluster backends, one per `cluster.kind`, in one registry (as submitit keeps its executors): the launcher
asks `backend_of(kind)` and never branches on the kind itself. Adding one: docs/adding-a-backend.md."""

from __future__ import annotations

from typing import Dict, Sequence

from hpml.conf.schema import ClusterKind, HpmlConfig
from hpml.conf.validation import require
from hpml.conf.workload_contract import Placement
from hpml.launcher.backends.base import Backend, JobStates, SweepInterrupted
from hpml.launcher.backends.local import LocalBackend
from hpml.launcher.backends.slurm import SlurmBackend
from hpml.launcher.jobspec import JobSpec

BACKENDS: Dict[ClusterKind, Backend] = {backend.kind: backend for backend in (LocalBackend(), SlurmBackend())}

__all__ = ["BACKENDS", "Backend", "JobStates", "SweepInterrupted", "backend_of", "backend_of_manifest",
           "backend_of_specs", "check_config", "place"]


def backend_of(kind: ClusterKind) -> Backend:
    return BACKENDS[ClusterKind(kind)]


def backend_of_manifest(manifest: Dict) -> Backend:
    """The backend a sweep was launched on (manifest.json's "cluster"; local for a manifest that names none)."""
    return backend_of(manifest.get("cluster") or ClusterKind.local.value)


def backend_of_specs(specs: Sequence[JobSpec]) -> Backend:
    kinds = {spec.shape.cluster for spec in specs}
    if len(kinds) != 1:
        raise ValueError(f"one sweep runs on one cluster; this one mixes {sorted(k.value for k in kinds)}")
    return backend_of(kinds.pop())


def check_config(config: HpmlConfig) -> None:
    """The keys whose allowed values depend on where the points run, checked by the launcher for every point it
    plans or reruns, before anything is written (conf/ names no kind: workers validate the same config without the
    backends). Raises ConfigValueError, one line naming the key."""
    packing = ", ".join(f"cluster={kind.value}" for kind, backend in BACKENDS.items() if backend.packs_points)
    require(config.cluster.points_per_job == 1 or backend_of(config.cluster.kind).packs_points,
            "cluster.points_per_job",
            f"1 on cluster={config.cluster.kind.value} (its points run in turn already); more only on {packing}",
            config.cluster.points_per_job)


def place(config: HpmlConfig) -> None:
    """Records in the point's workload where it runs (Placement), as its backend tells: on this host only where the
    backend runs its points here (Backend.runs_on_this_host) and cluster.assume_gpus plans for no other machine.
    The preflight calls it before the workloads' checks (launcher/preflight.config_problems)."""
    on_this_host = backend_of(config.cluster.kind).runs_on_this_host and config.cluster.assume_gpus is None
    config.workload.place(Placement(config.resources, on_this_host))
