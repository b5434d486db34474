"""What a result's config says about what was measured: its configuration, as flat dotted keys.

A configuration is everything in the config that can change what is measured: config.workload.* and any
other group, but not resources.* (the worker count is what a scaling study varies), sweep.* (names,
directories, repeat index and seed) or cluster.* (where and how it was submitted). Each workload's
analysis drops more keys of its own (the batch, a probe's step count) before it groups runs.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Tuple

import orjson

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


# Thousands of results share a handful of configurations: what was worked out for one is looked up by the
# compact JSON text of its kept groups (orjson, ~10x cheaper than flattening, sorting and json.dumps again).
# orjson writes NaN as null; a key whose value could be either is not one a Hydra config has (a typed field
# is a float or optional, and NaN is no default).
_FLAT: Dict[bytes, Dict[str, Any]] = {}  # the kept groups' text -> their flat items
_SEEN: Dict[Tuple[bytes, Tuple[str, ...]], Tuple[Dict[str, Any], str]] = {}  # (text, dropped) -> items, key


def _kept_groups(config: Mapping[str, Any]) -> Dict[str, Any]:
    return {group: tree for group, tree in config.items() if group not in NOT_CONFIGURATION_GROUPS}


def _flat_items(kept: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(sorted((k, v) for k, v in flatten(kept).items() if k not in NOT_CONFIGURATION_KEYS))


def configuration_items(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The config values that define a configuration, by dotted key, sorted (a new dict each call)."""
    return configuration_group(config)[0]


def configuration_group(config: Mapping[str, Any], dropped: Tuple[str, ...] = ()) -> Tuple[Dict[str, Any], str]:
    """(the configuration items without the keys in `dropped`, a new dict each call; their items_key)."""
    kept = _kept_groups(config)
    try:
        text = orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # what orjson cannot write (an integer past 64 bits) is worked out every time
        items = {k: v for k, v in _flat_items(kept).items() if k not in dropped}
        return items, items_key(items)
    found = _SEEN.get((text, dropped))
    if found is None:
        if text not in _FLAT:  # flattened once per configuration, whatever the keys dropped
            _FLAT[text] = _flat_items(kept)
        items = {k: v for k, v in _FLAT[text].items() if k not in dropped}
        found = _SEEN[(text, dropped)] = (items, items_key(items))
    return dict(found[0]), found[1]


def items_key(items: Mapping[str, Any]) -> str:
    """Canonical JSON of configuration items: equal configurations give equal text, any value unambiguous."""
    return json.dumps(items, sort_keys=True)
