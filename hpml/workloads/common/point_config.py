"""A worker's view of its point's config.yaml: read with yaml.safe_load, validated by the launcher's own
code (conf.schema.config_from_dict, every __post_init__ and check_resources hook), then cut down to what a
worker may use: its workload's typed schema, the seed, a few resource facts and the telemetry settings
(`WorkerSetup`).

One validation path for launcher and workers: a value the launcher would refuse, the worker refuses with the
same message (a ConfigValueError). No Hydra and no OmegaConf in workers.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Sequence, Tuple

import yaml

from hpml.conf.schema import TelemetryConfig, config_from_dict
from hpml.conf.workload_contract import WorkloadConfig


@dataclass(frozen=True)
class WorkerSetup:
    """The slice of a point's config that a worker gets (not the whole tree)."""

    workload: WorkloadConfig  # the workload's own schema, e.g. conf.workload.train.TrainConfig
    seed: int  # sweep.seed
    world_size: int  # resources.nodes x resources.workers_per_node: what torchrun must have started
    gpus_per_node: int  # resources.gpus_per_node: 0 keeps device=auto on the CPU
    cpus_per_worker: int  # torch.set_num_threads
    telemetry: TelemetryConfig  # the `telemetry` section: whether local rank 0 samples its node's GPUs, how often


def read_point_config(path: str | Path) -> Tuple[WorkerSetup, Dict[str, Any]]:
    """(the worker's slice, the file's values as written: result.json's "config")."""
    values = yaml.safe_load(Path(path).read_text())
    config = config_from_dict(values)
    setup = WorkerSetup(workload=config.workload, seed=config.sweep.seed, world_size=config.resources.world_size,
                        gpus_per_node=config.resources.gpus_per_node,
                        cpus_per_worker=config.resources.cpus_per_worker, telemetry=config.telemetry)
    return setup, values


def parse_worker_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)  # run as `python -m hpml.workloads.<name>`
    prog = f"python -m {spec.parent}" if spec is not None and spec.parent else None
    parser = argparse.ArgumentParser(prog=prog, description="hpml workload worker (started by torchrun)")
    parser.add_argument("--config", required=True, help="the point's resolved config.yaml")
    return parser.parse_args(argv)
