"""workloads/startup.py: a worker imports torch with the cyclic garbage collector paused and measures with it on;
no other program that imports hpml.workloads has its collector touched."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from hpml.contract.collector import cycle_collection_paused
from hpml.workloads import startup
from hpml.workloads.common.worker import start_worker
from tests.test_worker import argv, point  # noqa: F401  (the one-process gloo point fixture)

ASK = 'import gc, sys; print("collector", gc.isenabled(), "torch", "torch" in sys.modules)\n'


@pytest.mark.parametrize("orig_argv, argv0, expected", [
    (["python", "-u", "-m", "hpml.workloads.train", "--config", "c.yaml"], "-m", True),  # a plain torchrun's
    (["python", "-m", "hpml.workloads.allreduce"], "-m", True),
    (["python", "-m", "hpml.workloads.train"], "/x/hpml/workloads/train/__main__.py", False),  # module already running
    (["python", "-m", "hpml.launcher.cli", "launch"], "-m", False),  # another module run as -m
    (["python", "-m", "hpml.workloads"], "-m", False),  # the package itself is no worker
    (["python", "-c", "import hpml.workloads"], "-c", False),
    (["python", "-m"], "-m", False),
])
def test_only_the_start_of_a_worker_module_counts_as_a_worker_start(orig_argv, argv0, expected):
    assert startup.started_as_worker(orig_argv, argv0) is expected


def interpreter_after(args, tmp_path) -> str:
    """What `python -i <args>` says about its collector and torch once <args> has run (or failed)."""
    done = subprocess.run([sys.executable, "-i", *args], input=ASK, capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    return next(line for line in (done.stdout + done.stderr).splitlines() if "collector" in line)


def test_a_worker_imports_torch_with_the_collector_paused_and_other_programs_keep_theirs(tmp_path):
    # the probe worker with a config that does not exist: its imports ran, start_worker failed before the measured
    # work, so the collector is still paused, as it was while torch was imported
    assert interpreter_after(["-m", "hpml.workloads.probe", "--config", str(tmp_path / "none.yaml")],
                             tmp_path).endswith("collector False torch True")
    # importing a worker's module from any other program leaves the collector on
    assert interpreter_after(["-c", "import hpml.workloads.train.__main__"], tmp_path).endswith(
        "collector True torch True")


@pytest.fixture
def collector_restored():
    was = gc.isenabled()
    yield
    startup._paused_at_start = False
    gc.unfreeze()  # the frozen objects of this pytest process back into the collector's generations
    (gc.enable if was else gc.disable)()


def test_the_measured_work_runs_with_the_collector_on_and_the_start_frozen(point, collector_restored):  # noqa: F811
    directory, _ = point
    gc.disable()
    startup._paused_at_start = True  # as pause_if_worker_start leaves a worker started by torchrun
    worker = start_worker(argv(directory))
    assert not gc.isenabled()  # still paused while the process group forms
    frozen_before = gc.get_freeze_count()
    with worker.reporting({}):
        assert gc.isenabled() and gc.get_freeze_count() > frozen_before
    startup.resume()  # a second resume changes nothing
    assert gc.isenabled()


@pytest.mark.parametrize("enabled_before", [True, False])
def test_a_paused_setup_restores_the_collector_as_it_was(enabled_before, collector_restored):
    (gc.enable if enabled_before else gc.disable)()
    frozen_before = gc.get_freeze_count()
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled_before
    assert gc.get_freeze_count() == frozen_before  # what a setup built stays collectable
    with pytest.raises(ValueError), cycle_collection_paused():
        raise ValueError("a setup that fails")
    assert gc.isenabled() is enabled_before
