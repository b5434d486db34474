"""Helpers the config schemas share: the MISSING marker, ConfigValueError and `require`.

A module of their own because both conf/schema.py (the base tree) and conf/workload_schemas.py use them,
and conf/schema.py imports conf/workload_schemas.py (HpmlConfig checks the workload against the resources;
config_from_dict picks the workload schema by name): kept in either one, they would make an import cycle.

Imports neither Hydra nor OmegaConf, like the schemas, so that workers can read their config without them.
"""

from __future__ import annotations

from typing import Any

MISSING: Any = "???"  # OmegaConf's marker for a required value (same string as omegaconf.MISSING)


class ConfigValueError(ValueError):
    """A config value that has the right type but is not allowed; the message names the field."""


def require(condition: bool, key: str, allowed: str, value: Any) -> None:
    if not condition:
        raise ConfigValueError(f"{key}={value!r} is not allowed: {allowed}")
