"""hpml's torchrun forks its workers from the agent (launcher/torchrun.py, workloads/fork_entry.py): a worker starts
with torch already imported, and otherwise as a fresh `python -u -m <module>` would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from hpml.launcher.torchrun import AGENT, FORK_ENV
from tests.conftest import REPO, torchrun_as_a_job_runs_it


def forked_report(agent: str = AGENT, **env: str) -> subprocess.CompletedProcess:
    """tests/forked_worker_report.py as hpml's point job runs a worker (conftest's torchrun_as_a_job_runs_it), with
    `env` added and FORK_ENV only where the test passes it; SIGUSR2 ignored as the point job leaves it for torchrun
    and its workers (die_with_parent)."""
    base = {k: v for k, v in os.environ.items() if k not in FORK_ENV}
    command = torchrun_as_a_job_runs_it(1, "tests.forked_worker_report", "--config", "c", agent=agent)
    return subprocess.run(command, cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**base, "PYTHONPATH": str(REPO), **env},
                          preexec_fn=lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN))


def reports(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_a_forked_worker_has_torch_already_and_a_fresh_interpreters_signals_and_output():
    report = reports(forked_report())[0]
    assert report["torch_imported_before_the_module"] and report["parent_runs"] == AGENT
    assert report["main"] == "tests.forked_worker_report" and report["argv"] == ["--config", "c"]
    assert report["rank"] == "0"
    # torchrun's handlers (its SignalException) are the agent's, not the worker's: a fresh interpreter's instead
    default, ignored = str(signal.SIG_DFL), str(signal.SIG_IGN)  # printed by the same interpreter
    assert report["signals"] == {"SIGTERM": default, "SIGHUP": default, "SIGQUIT": default,
                                 "SIGINT": str(signal.default_int_handler), "SIGUSR2": ignored}
    assert report["stdout_line_buffered"]  # as `python -u`: a line reaches the log when it is printed
    assert not report["collector_enabled"]  # paused at the start, as a `-m` worker's (workloads/startup.py)


def test_the_agent_imports_torch_without_the_cyclic_collector_and_runs_torchrun_as_torchrun_does():
    # hpml's agent (launcher/torchrun_agent.py) against torch's own `python -m torch.distributed.run`, the same
    # arguments: a forked worker inherits its agent's collector counts and frozen objects, so it can tell them apart
    ours, torchs = reports(forked_report())[0], reports(forked_report(agent="torch.distributed.run"))[0]
    # torch's import collected hundreds of times in torch's agent (433 here, 311 on the H200's image), a few dozen
    # times in ours (18 here, 25 there: what runs after the collector is back on, torchrun's own start)
    assert ours["collections_before_the_fork"] * 4 < torchs["collections_before_the_fork"]
    # what the import made was frozen before torchrun ran, so the worker's collections never walk it: 282,554
    # objects here against none; 247,327 against 375 on the GPU image's Python 3.12, whose start freezes a few
    assert ours["frozen_before_the_fork"] > 100 * max(torchs["frozen_before_the_fork"], 1)
    # torchrun otherwise: its arguments, its rank, the same worker
    assert (ours["parent_runs"], torchs["parent_runs"]) == (AGENT, "torch.distributed.run")
    same = [key for key in ours if "fork" not in key and key != "parent_runs"]
    assert {key: ours[key] for key in same} == {key: torchs[key] for key in same}
    usage = subprocess.run([sys.executable, "-m", AGENT, "--help"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: torchrun ")



@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_forked_worker_uses_cuda_because_the_agent_checked_through_nvml():
    # what the point job sets with the fork: torch's device check in the agent goes through NVML
    uses = reports(forked_report(FORKED_WORKER_USES_CUDA="1", **FORK_ENV))
    assert uses[1] == {"cuda_tensor_on": "cuda:0"}
    # without it the agent initializes CUDA before the fork, and the worker's first CUDA call fails
    poisoned = forked_report(FORKED_WORKER_USES_CUDA="1")
    assert poisoned.returncode != 0
    assert "Cannot re-initialize CUDA in forked subprocess" in poisoned.stderr
