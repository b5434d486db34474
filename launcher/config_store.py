"""Registers the schemas of conf/schema.py and of every registered workload (conf/workload/__init__.py) in
Hydra's ConfigStore (the YAML files under conf/ name them: hpml_schema, cluster_schema,
<workload>_schema@workload)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from conf.schema import ClusterConfig, HpmlConfig
from conf.workload import WORKLOAD_SCHEMAS


def register_schemas() -> None:
    store = ConfigStore.instance()
    store.store(name="hpml_schema", node=HpmlConfig)
    store.store(group="cluster", name="cluster_schema", node=ClusterConfig)
    for name, schema in WORKLOAD_SCHEMAS.items():
        store.store(group="workload", name=f"{name}_schema", node=schema)
