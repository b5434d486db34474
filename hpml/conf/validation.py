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


MAX_SHOWN_VALUE = 80  # characters of a refused value quoted in the message (a 5,000-character name is cut)


def shown(value: Any) -> str:
    """The value as an error message quotes it: repr (a line break stays visible as \\n), cut short."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_VALUE else f"{text[:MAX_SHOWN_VALUE]}...({len(text)} characters)"


def named(text: str) -> str:
    """A name (a model's, a path) as a message says it: as given when short and on one line, else as shown()."""
    return text if len(text) <= MAX_SHOWN_VALUE and text.isprintable() else shown(text)


def require(condition: bool, key: str, allowed: str, value: Any) -> None:
    if not condition:
        raise ConfigValueError(f"{key}={shown(value)} is not allowed: {allowed}")


def require_price(price_name: str, gpu_hour_usd: Any) -> None:
    """The `pricing` group's pair (conf/pricing/<name>.yaml sets both): a price exactly when a name other than none."""
    require((price_name == "none") == (gpu_hour_usd is None), "workload.gpu_hour_usd",
            "null exactly when workload.price_name=none; choose a price with pricing=<name> "
            "(conf/pricing/), which sets both", gpu_hour_usd)
    require(gpu_hour_usd is None or gpu_hour_usd > 0, "workload.gpu_hour_usd",
            "a number > 0 (US$ per GPU-hour) or null", gpu_hour_usd)
