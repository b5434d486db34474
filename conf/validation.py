"""Helpers every config schema uses: the MISSING marker, ConfigValueError and `require`.

A module of their own, at the bottom of conf/'s imports: conf/schema.py (the base tree), conf/resources.py,
conf/workload_contract.py and each workload's schema (conf/workload/<name>.py) all use them, and conf/schema.py
imports the workload schemas; kept in any of those, they would make an import cycle.

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
