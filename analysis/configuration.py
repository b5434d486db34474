"""What a result's config says about what was measured: its configuration, as flat dotted keys.

A configuration is everything in the config that can change what is measured: config.workload.* and any
other group, but not resources.* (the worker count is what a scaling study varies), sweep.* (names,
directories, repeat index and seed) or cluster.* (where and how it was submitted). Each workload's
analysis drops more keys of its own (the batch, a probe's step count) before it groups runs.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping

# Config groups that say where and how a point ran, not what it measured.
NOT_CONFIGURATION_GROUPS = ("sweep", "resources", "cluster")
# Keys that say where, not what: the same data set under /scratch/a on one cluster and /home/b on another is one
# configuration (a comparison of hardware types runs on machines whose paths differ).
NOT_CONFIGURATION_KEYS = ("workload.data_root",)


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{"workload": {"batch_size": 32}} -> {"workload.batch_size": 32}; lists and empty objects stay values.
    (type() is dict, not isinstance against typing.Mapping: JSON gives dicts, and the ABC check is what made
    the report slow on 10,000 results.)"""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        if type(value) is dict and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def configuration_items(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The config values that define a configuration, by dotted key, sorted."""
    kept = {group: tree for group, tree in config.items() if group not in NOT_CONFIGURATION_GROUPS}
    return dict(sorted((k, v) for k, v in flatten(kept).items() if k not in NOT_CONFIGURATION_KEYS))


def items_key(items: Mapping[str, Any]) -> str:
    """Canonical JSON of configuration items: equal configurations give equal text, any value unambiguous."""
    return json.dumps(items, sort_keys=True)
