"""Helpers every config schema uses: the MISSING marker, ConfigValueError and `require`, and the checks of the
bounds in contract/limits.py (require_classes, require_repeats, require_buffer, ...).

A module of their own, at the bottom of conf/'s imports: conf/schema.py (the base tree), conf/resources.py,
conf/workload_contract.py and each workload's schema (conf/workload/<name>.py) all use them, and conf/schema.py
imports the workload schemas; kept in any of those, they would make an import cycle.

Imports neither Hydra nor OmegaConf, like the schemas, so that workers can read their config without them.
"""

from __future__ import annotations

from typing import Any, Sequence

from hpml.contract.limits import (
    FLOAT32_BYTES,
    IMAGE_CHANNELS,
    MAX_BUFFER_BYTES,
    MAX_CLASSES,
    MAX_EPOCHS,
    MAX_REPEATS,
)
from hpml.contract.units import GIB

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


def require_classes(num_classes: int) -> None:
    require(2 <= num_classes <= MAX_CLASSES, "workload.num_classes",
            f"an integer from 2 to {MAX_CLASSES:,} (ImageNet-21k has 21,841)", num_classes)


def require_repeats(cfg: object, counts: Sequence[str] = (), epochs: Sequence[str] = ()) -> None:
    """Each of cfg's repeat counts (attribute names) at most MAX_REPEATS, each epoch count at most MAX_EPOCHS."""
    for keys, cap, what in ((counts, MAX_REPEATS, "a repeat count"), (epochs, MAX_EPOCHS, "epochs")):
        for key in keys:
            value = getattr(cfg, key)
            require(value <= cap, f"workload.{key}", f"at most {cap:,} ({what}: more only runs until the job's time "
                    "limit ends it)", value)


def require_buffer(key: str, value: int, nbytes: int, what: str) -> None:
    """`value` of `key` makes a buffer of `nbytes` bytes (`what` says which): at most MAX_BUFFER_BYTES."""
    require(nbytes <= MAX_BUFFER_BYTES, key, f"small enough that {what} stays within {MAX_BUFFER_BYTES // GIB} GiB "
            f"(now {nbytes / GIB:.3g} GiB)", value)


def require_input_batch(batch_size: int, image_size: int) -> None:
    """One input batch, batch_size x 3 x image_size x image_size in float32, within MAX_BUFFER_BYTES."""
    nbytes = batch_size * IMAGE_CHANNELS * image_size ** 2 * FLOAT32_BYTES
    require(nbytes <= MAX_BUFFER_BYTES, f"workload.batch_size x {IMAGE_CHANNELS} x workload.image_size^2 x "
            f"{FLOAT32_BYTES} bytes", f"at most {MAX_BUFFER_BYTES // GIB} GiB, one float32 input batch (batch_size="
            f"{batch_size}, image_size={image_size}: {nbytes / GIB:.3g} GiB)", nbytes)


def require_square_matrix(key: str, n: int) -> None:
    """An n x n float32 matmul operand within MAX_BUFFER_BYTES."""
    require_buffer(key, n, n * n * FLOAT32_BYTES, f"one {n} x {n} float32 matrix")
