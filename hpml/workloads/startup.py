"""A worker's start without Python's cyclic garbage collector.

Importing torch (and torch._dynamo, which DDP's constructor and the optimizer's first param group import) makes
hundreds of thousands of long-lived objects; each time the collector's thresholds trip during those imports it
walks them all, looking for cycles that a module import does not make. A worker therefore starts with the
collector paused and turns it back on, after freezing what it has by then (`gc.freeze`: the imported modules,
the config and the process group leave the collector's generations, so a later collection in the measured loop
does not walk them either), when its measured work begins (`Worker.reporting`). A workload whose setup inside that block
imports more (train, synthetic, quantize: the DDP wrapper and the optimizer) pauses it again around that setup
(`contract.collector.cycle_collection_paused`, the analysis' pause too), without freezing: a setup may run more than once (synthetic builds a model a method and a
round), and a frozen model that later becomes cyclic garbage would never be freed. What it costs and saves:
docs/decisions.md ("a worker starts without the cyclic GC").

Only a worker pauses at its start: one that torchrun forked (fork_entry.py, hpml's launch) or one started as
`python -m hpml.workloads.<name>` (by hand, or by torchrun without hpml). Any other program that imports
hpml.workloads keeps its collector as it was.
"""

from __future__ import annotations

import gc
import sys
from typing import Sequence

WORKER_MODULES = "hpml.workloads."
_paused_at_start = False


def started_as_worker(orig_argv: Sequence[str], argv0: str) -> bool:
    """True while the interpreter is locating the module of `python [...] -m hpml.workloads.<name>`: Python sets
    sys.argv[0] to "-m" until it runs that module, and sys.orig_argv keeps the command line it was given."""
    if argv0 != "-m" or "-m" not in orig_argv[:-1]:
        return False
    return orig_argv[orig_argv.index("-m") + 1].startswith(WORKER_MODULES)


def pause_at_start() -> None:
    """The collector off until `resume`, unless it is off already (then it stays as its owner left it)."""
    global _paused_at_start
    if not _paused_at_start and gc.isenabled():
        gc.disable()
        _paused_at_start = True


def pause_if_worker_start() -> None:
    """Called by hpml/workloads/__init__.py, before a worker's __main__ imports torch."""
    if started_as_worker(sys.orig_argv, sys.argv[0]):
        pause_at_start()


def resume() -> None:
    """The collector back on where pause_if_worker_start paused it; everything alive now is frozen first."""
    global _paused_at_start
    if _paused_at_start:
        _paused_at_start = False
        gc.freeze()
        gc.enable()

