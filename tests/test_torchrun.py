"""The torchrun command each job runs: one per node, standalone on one node, c10d across nodes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hpml.conf.schema import config_from_dict
from hpml.launcher.jobspec import jobspec_of
from hpml.launcher.torchrun import (
    Rendezvous,
    die_with_parent,
    node_addr_of,
    nvml_answers,
    rendezvous_port,
    torchrun_command,
    workers_forkable,
)
from tests.conftest import REPO


def test_single_node_uses_a_standalone_rendezvous(compose_values):
    config = config_from_dict(compose_values(["resources.workers_per_node=2"]))
    cmd = torchrun_command(jobspec_of(config, 3, "/s/points/3", []), None, python="python")
    assert cmd == ["python", "-P", "-m", "hpml.launcher.torchrun_agent", "--nnodes", "1", "--nproc_per_node", "2",
                   "--max_restarts", "0", "--standalone", "--start-method", "fork", "--run-path",
                   str(REPO / "hpml" / "workloads" / "fork_entry.py"), "hpml.workloads.train",
                   "--config", "/s/points/3/config.yaml"]


def test_without_the_fork_the_workers_start_as_torchrun_starts_them_by_default(compose_values):
    config = config_from_dict(compose_values(["resources.workers_per_node=2"]))
    cmd = torchrun_command(jobspec_of(config, 3, "/s/points/3", []), None, python="python", fork=False)
    assert cmd[-5:] == ["--standalone", "-m", "hpml.workloads.train", "--config", "/s/points/3/config.yaml"]


def test_workers_are_forked_without_gpus_and_with_gpus_only_where_nvml_answers():
    assert workers_forkable(0, nvml_works=lambda: False) and workers_forkable(0, nvml_works=lambda: True)
    assert workers_forkable(4, nvml_works=lambda: True) and not workers_forkable(4, nvml_works=lambda: False)
    # the real question, here: NVML answers exactly where torch sees a CUDA device
    import torch

    assert nvml_answers() is torch.cuda.is_available()


def test_multi_node_meets_at_the_first_node_with_the_job_id(compose_values):
    config = config_from_dict(compose_values(["resources.nodes=2", "resources.workers_per_node=2"]))
    rdzv = Rendezvous(host="10.0.0.1", port=rendezvous_port("77_3"), run_id="77_3")
    cmd = torchrun_command(jobspec_of(config, 0, "/s/points/0", []), rdzv, python="python")
    assert cmd[cmd.index("--nnodes") + 1] == "2"
    assert cmd[cmd.index("--rdzv_endpoint") + 1] == f"10.0.0.1:{rdzv.port}"
    assert cmd[cmd.index("--rdzv_id") + 1] == "77_3"
    assert "--standalone" not in cmd


def test_rendezvous_port_is_derived_from_the_job_id():
    assert rendezvous_port("123") == rendezvous_port("123")
    assert 20000 <= rendezvous_port("123") <= 60000
    assert len({rendezvous_port(str(j)) for j in range(50)}) > 40  # jobs sharing a node rarely collide


def test_multi_node_without_rendezvous_is_refused(compose_values):
    config = config_from_dict(compose_values(["resources.nodes=2"]))
    with pytest.raises(ValueError, match="need a rendezvous"):
        torchrun_command(jobspec_of(config, 0, "/s/points/0", []), None)


@pytest.mark.parametrize("record, address", [
    ("NodeName=n1 Arch=x86_64 CPUTot=4 NodeAddr=10.1.2.3 NodeHostName=box Port=17001 State=IDLE", "10.1.2.3"),
    ("NodeName=n1 NodeAddr=gpu-node-01.cluster NodeHostName=gpu-node-01", "gpu-node-01.cluster"),
    ("NodeName=n1 NodeHostName=box State=IDLE", "n1"),  # no NodeAddr: the name itself
    ("", "n1"),
])
def test_the_rendezvous_host_is_the_first_nodes_address(record, address):
    assert node_addr_of(record, "n1") == address


def test_torchrun_and_its_workers_ignore_slurms_time_limit_warning(tmp_path):
    # SLURM's --signal=USR2@N reaches every process of the step; the point job's handler answers it, and
    # torchrun (whose default action on SIGUSR2 is to die) and the workers it starts must outlive it
    ready = tmp_path / "grandchild.pid"
    script = ("import subprocess, sys, time; "
              "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(ready)!r}, 'w').write(str(g.pid)); g.wait()")
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                             preexec_fn=die_with_parent(signal.SIGTERM, ignored=(signal.SIGUSR2,)))
    try:
        for _ in range(600):  # the grandchild's pid file, written once it was started
            if ready.exists() and ready.read_text():
                break
            time.sleep(0.05)
        grandchild = int(ready.read_text())
        os.killpg(child.pid, signal.SIGUSR2)  # the whole session, as SLURM signals the whole step
        time.sleep(0.5)
        assert child.poll() is None, "torchrun's stand-in died of SIGUSR2"
        os.kill(grandchild, 0)  # raises ProcessLookupError if the worker's stand-in died
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
