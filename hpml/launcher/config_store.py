"""Registers the schemas of conf/schema.py and of every registered workload (conf/workload/__init__.py) in
Hydra's ConfigStore, at the root and not in the `cluster` or `workload` group: the YAML files name them by
absolute path (hpml_schema, /cluster_schema@_here_, /<workload>_schema@workload), and a user, who picks options
of the groups, never sees them among the options (`hpml launch --help`) nor can choose one."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from hpml.conf.schema import ClusterConfig, HpmlConfig
from hpml.conf.workload import WORKLOAD_SCHEMAS


def cluster_schema():
    """ClusterConfig, with sbatch_extra open to new keys: Hydra composes in struct mode, where even a
    Dict[str, str] field refuses a key it does not hold yet, so the README's
    `cluster.sbatch_extra='{gres: "gpu:a100:4"}'` (or `cluster.sbatch_extra.gres=...`) would need a '+'.
    The option names and values are still checked (ClusterConfig.__post_init__, launcher/backends/slurm/preflight.py)."""
    node = OmegaConf.structured(ClusterConfig)
    OmegaConf.set_struct(node.sbatch_extra, False)
    return node


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(name="hpml_schema", node=HpmlConfig)
    store.store(name="cluster_schema", node=cluster_schema())
    for name, schema in WORKLOAD_SCHEMAS.items():
        store.store(name=f"{name}_schema", node=schema)
