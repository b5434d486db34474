"""Python's cyclic garbage collector paused around work that makes many objects and no reference cycles.

Shared by the analysis (decoding thousands of result.json files) and the workers (importing torch and building a
model, the DDP wrapper and the optimizer): each time the collector's thresholds trip it walks every container
made so far, looking for cycles such work does not make. Reference counting still frees everything as usual.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def long_lived_imports() -> Iterator[None]:
    """The block (a process's start: importing torch) runs without the cyclic collector; on its way out what is alive
    is frozen (`gc.freeze`: out of the collector's generations, so no later collection walks it) and the collector is
    back on, where it was on before. For what lives as long as the process: modules, not a model that may be dropped."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


@contextlib.contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """The block runs without the cyclic collector; on its way out the collector is as it was before. Nothing is
    frozen: what the block built may become garbage later and is then collected as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
