"""hpml's torchrun forks its workers from the agent (launcher/torchrun.py, workloads/fork_entry.py): a worker starts
with torch already imported, and otherwise as a fresh `python -u -m <module>` would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from hpml.launcher.torchrun import FORK_ENTRY
from tests.conftest import REPO


def test_a_forked_worker_has_torch_already_and_a_fresh_interpreters_signals_and_output():
    # the tail of hpml's torchrun command (torchrun_command), on a module of the tests; SIGUSR2 ignored as the point
    # job leaves it for torchrun and its workers (die_with_parent)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
               "--start-method", "fork", "--run-path", str(FORK_ENTRY), "tests.forked_worker_report", "--config", "c"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          preexec_fn=lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert report["torch_imported_before_the_module"] and report["parent_is_torchrun"]
    assert report["main"] == "tests.forked_worker_report" and report["argv"] == ["--config", "c"]
    assert report["rank"] == "0"
    # torchrun's handlers (its SignalException) are the agent's, not the worker's: a fresh interpreter's instead
    default, ignored = str(signal.SIG_DFL), str(signal.SIG_IGN)  # printed by the same interpreter
    assert report["signals"] == {"SIGTERM": default, "SIGHUP": default, "SIGQUIT": default,
                                 "SIGINT": str(signal.default_int_handler), "SIGUSR2": ignored}
    assert report["stdout_line_buffered"]  # as `python -u`: a line reaches the log when it is printed
    assert not report["collector_enabled"]  # paused at the start, as a `-m` worker's (workloads/startup.py)

