"""Run by tests/test_fork_entry.py as a worker torchrun forked through hpml/workloads/fork_entry.py: prints, as one
JSON line, what the worker found when its module began to run."""

import gc
import json
import os
import signal
import sys
from pathlib import Path

torch_before = "torch" in sys.modules  # read before this module imports anything that could import torch
parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")
print(json.dumps({
    "torch_imported_before_the_module": torch_before,
    "parent_runs": parent[parent.index(b"-m") + 1].decode() if b"-m" in parent else None,  # the agent's module
    "collector_enabled": gc.isenabled(),
    "collections_before_the_fork": sum(generation["collections"] for generation in gc.get_stats()),  # the agent's
    "frozen_before_the_fork": gc.get_freeze_count(),
    "signals": {name: str(signal.getsignal(getattr(signal, name))) for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGINT",
                                                                                "SIGUSR2")},
    "stdout_line_buffered": sys.stdout.line_buffering,
    "main": sys.modules["__main__"].__spec__.name,
    "argv": sys.argv[1:],
    "rank": os.environ.get("RANK"),
}))
if os.environ.get("FORKED_WORKER_USES_CUDA"):  # the GPU test: a CUDA tensor in the forked worker
    import torch

    print(json.dumps({"cuda_tensor_on": str(torch.ones(1, device="cuda").add(1).device)}))
