"""Reads a sweep point's resolved config.yaml into the typed schema (no Hydra in workers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from omegaconf import OmegaConf

from conf.schema import HpmlConfig
from conf.workload_schemas import WORKLOAD_SCHEMAS


def load_point_config(path: str | Path) -> HpmlConfig:
    """Validates the file against the schema of its workload and runs every __post_init__ check."""
    raw = OmegaConf.load(path)
    name = raw.workload.name
    if name not in WORKLOAD_SCHEMAS:
        raise ValueError(f"workload.name={name!r} is not one of {sorted(WORKLOAD_SCHEMAS)}")
    schema = OmegaConf.structured(HpmlConfig)
    schema.workload = OmegaConf.structured(WORKLOAD_SCHEMAS[name])
    return OmegaConf.to_object(OmegaConf.merge(schema, raw))


def parse_worker_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="hpml workload worker (started by torchrun)")
    parser.add_argument("--config", required=True, help="the point's resolved config.yaml")
    return parser.parse_args(argv)
