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
def cycle_collection_paused(frozen_after: bool = False) -> Iterator[None]:
    """The block runs without the cyclic collector; on its way out the collector is as it was before. By default
    nothing is frozen: what the block built may become garbage later and is then collected as usual. frozen_after,
    for what lives as long as the process (a process's imports, torchrun_agent.py): what is alive is frozen
    (`gc.freeze`) before the collector is back on, so no later collection walks it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if frozen_after:
                gc.freeze()
            gc.enable()
