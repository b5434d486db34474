"""Registers the schemas of conf/schema.py and of every registered workload (conf/workload/__init__.py) in
Hydra's ConfigStore, at the root and not in the `cluster` or `workload` group: the YAML files name them by
absolute path (hpml_schema, /cluster_schema@_here_, /<workload>_schema@workload), and a user, who picks options
of the groups, never sees them among the options (`hpml launch --help`) nor can choose one."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from conf.schema import ClusterConfig, HpmlConfig
from conf.workload import WORKLOAD_SCHEMAS


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(name="hpml_schema", node=HpmlConfig)
    store.store(name="cluster_schema", node=ClusterConfig)
    for name, schema in WORKLOAD_SCHEMAS.items():
        store.store(name=f"{name}_schema", node=schema)
