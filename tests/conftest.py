"""Shared fixtures: composing configs the way `hpml launch` does, running the real `hpml` command, and the study
that the `hpml evaluate` tests score (tests/evaluate_study.py)."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import gc
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from hpml.launcher.config_store import register_schemas
from hpml.launcher.torchrun import AGENT, forked
from tests.part_markers import pytest_collection_modifyitems  # noqa: F401 (a hook: every collection checks the part markers)

REPO = Path(__file__).resolve().parent.parent
HPML = [sys.executable, "-m", "hpml.launcher.cli"]


def torchrun_as_a_job_runs_it(workers: int, module: str, *args: str, agent: str = AGENT) -> List[str]:
    """One node's torchrun command as hpml's point job runs it: the workers forked from the agent
    (launcher/torchrun.py's `forked`), torchrun started as hpml's AGENT (or as `agent`, e.g. torch's own
    torch.distributed.run). Run it with FORK_ENV in the environment."""
    return [sys.executable, "-m", agent, "--standalone", "--nproc_per_node", str(workers),
            "--max_restarts", "0", *forked(module, *args)]
T = TypeVar("T")


# Collection imports every test module, and through them torch, pandas and Hydra: hundreds of thousands of
# long-lived objects, which Python's cyclic collector walked again and again while they were made. Each pytest
# process that collects (tests/run.sh's two xdist workers, its SLURM part's and its serial part's) collects with the
# collector paused, then freezes what it holds (`gc.freeze`: a later collection during the tests walks only what the
# tests make) and turns it back on, as hpml's workers and torchrun's agent do (docs/decisions.md, "stop 56").
def pytest_sessionstart(session: pytest.Session) -> None:
    gc.disable()


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()
    gc.enable()


# the environment variables hpml's configs read (`${oc.env:NAME,...}`): a composed config depends on them
CONF_ENV = sorted(set(re.findall(r"\$\{oc\.env:(\w+)", "".join(
    path.read_text() for path in (REPO / "hpml" / "conf").rglob("*.yaml")))))


@pytest.fixture(scope="session")
def compose_values():
    """compose_values(overrides) -> the resolved config as plain values (what a point's config.yaml holds).
    Composed once per overrides and CONF_ENV's values in this process, a fresh copy each call: a Hydra composition is
    about 0.2 CPU-s, and tests compose the same preset hundreds of times (issue 41). The conf files do not change
    during a run; the one value that moves, `${now:...}` in sweep.dir, is the time of the first composition."""
    register_schemas()
    composed: Dict[Tuple[Tuple[str, ...], Tuple[Optional[str], ...]], dict] = {}

    def _compose(overrides: Sequence[str] = ()) -> dict:
        key = (tuple(overrides), tuple(os.environ.get(name) for name in CONF_ENV))
        if key not in composed:
            with initialize_config_module("hpml.conf", version_base="1.3"):
                cfg = compose("config", overrides=list(overrides))
                composed[key] = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        return copy.deepcopy(composed[key])

    return _compose


def run_hpml(args: List[str], cwd: Path, timeout: float = 600, env: dict | None = None):
    """Runs the real CLI in a subprocess (as a user would); returns the CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(HPML + args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)


def hpml_here(args: List[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs the same verb as run_hpml in this process (hpml.launcher.cli.main, in cwd, with env set), without a
    Python start and the verb's imports: about 1 s of CPU a call saved (issue 41). For the tests that check, case
    by case, what a verb computes or says; the command as users run it (its process's exit status, its whole
    stderr: a warning or a traceback an import prints) stays covered by run_hpml, once for each class of input."""
    from hpml.launcher.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {key: os.environ.get(key) for key in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as done:  # argparse's errors and --help exit
                code = done.code if isinstance(done.code, int) else int(done.code is not None)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess(["hpml", *args], code, out.getvalue(), err.getvalue())


# No test bounds a duration in seconds: a bound in seconds is the machine's, not the code's (issue 41). A test that
# checks speed times two things in the same test, one after the other on the same machine, and bounds their ratio;
# GROSS is the ratio that only a real regression passes (docs/results/test-suite-speed.md says test by test what
# each ratio compares and what it catches).
GROSS = 5


def seconds_of(run: Callable[[], T]) -> Tuple[T, float]:
    """(what run() returned, the wall-clock seconds it took)."""
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def timed_against(run: Callable[[], T], reference: Callable[[], Any], tries: int = 3) -> Tuple[T, Any, List[float]]:
    """Times reference(), then run(), one after the other, and again while run took GROSS times its reference or
    more, up to `tries` pairs: (run's last result, reference's last result, each pair's ratio run / reference).
    A test asserts min(ratios) < GROSS. One pair on a 2-core machine can catch a load spike on one side (a refusal of
    0.9 s took 4.5 s beside the SLURM part once, against a 0.75 s reference); a real regression is slow in every
    pair, so it still fails, and a pair that passes costs what one measurement did."""
    ratios: List[float] = []
    for _ in range(tries):
        ref, ref_s = seconds_of(reference)
        out, out_s = seconds_of(run)
        ratios.append(out_s / ref_s)
        if ratios[-1] < GROSS:
            break
    return out, ref, ratios


@pytest.fixture
def hpml(tmp_path):
    """hpml(*args) runs `hpml` in a fresh directory; sweeps land under tmp_path/sweeps."""

    def _run(*args: str, timeout: float = 600, env: dict | None = None):
        return run_hpml(list(args), cwd=tmp_path, timeout=timeout, env=env)

    return _run


@pytest.fixture(scope="session")
def hpml_in():
    """hpml_in(cwd, *args): like `hpml`, for module- or session-scoped fixtures with their own folder."""

    def _run(cwd: Path, *args: str, timeout: float = 600, env: dict | None = None):
        return run_hpml(list(args), cwd=cwd, timeout=timeout, env=env)

    return _run


def session_folder(tmp_path_factory) -> Path:
    """A folder every test of this pytest run sees and no other run does: under pytest-xdist, the controller's
    basetemp, the folder above each worker's own (xdist makes a worker's basetemp <controller's>/popen-gwN); in one
    process, the session's basetemp (its parent is shared by every run of this user)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_sweep(tmp_path_factory):
    """shared_sweep(*overrides, env=None) -> the finished sweep of `hpml launch *overrides`, launched once per test
    run however many test files and xdist workers ask for it: a launch is seconds of process starts (CLI, torchrun,
    workers), so files that launch the same sweep and only read it share one (issue 41). The first caller launches
    under a file lock; the others wait on the lock, then read the same folder. Readers must not write into it (a
    test that resumes, damages or deletes works on shutil.copytree(sweep, ..., symlinks=True): `hpml resume` runs on
    such a copy). `env` says where a preset finds its files (tiny_data_env), not what it runs: it is not part of the
    key. A launch that failed leaves no mark, so the next caller launches again and fails with its own output."""
    folder = session_folder(tmp_path_factory) / "shared_sweeps"
    folder.mkdir(exist_ok=True)

    def _sweep(*overrides: str, env: dict | None = None, timeout: float = 600) -> Path:
        key = hashlib.sha256("\0".join(overrides).encode()).hexdigest()[:16]
        root, launched = folder / key, folder / key / "launched"
        with open(folder / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the launch below fails
            if not launched.is_file():
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir()
                done = run_hpml(["launch", *overrides], cwd=root, timeout=timeout, env=env)
                assert done.returncode == 0, done.stdout + done.stderr
                (root / LAUNCH_STDOUT).write_text(done.stdout)
                launched.write_text(" ".join(overrides) + "\n")
        return (root / "sweeps" / "latest").resolve()

    return _sweep


LAUNCH_STDOUT = "launch.stdout"


def launch_stdout(sweep: Path) -> str:
    """What `hpml launch` printed when shared_sweep made this sweep (its progress lines)."""
    return (sweep.parent.parent / LAUNCH_STDOUT).read_text()


def own_copy(sweep: Path, target: Path) -> Path:
    """A copy of a (shared) sweep for a test that changes it; `hpml resume` of the copy runs in the copy."""
    shutil.copytree(sweep, target, symlinks=True)
    return target


# Sweeps that several test files launch alike, named once so that shared_sweep launches them once
# a finished point and its checkpoint.pt; hpml's small CNN: the tests are of the checkpoint's handling, which any
# model shows, and each of the five runs of it (a launch, four resumes) costs about 3.7 CPU-s less than ResNet-18's
KEPT_CHECKPOINT = ("experiment=tiny/train", "workload.model=hpml_cnn", "workload.keep_checkpoint=true")
# the allreduce_vs_bare preset cut to 1..64 KiB: impl=hpml and raw on 2 gloo workers (test_allreduce.py,
# test_allreduce_report.py)
ALLREDUCE_VS_BARE = ("experiment=allreduce_vs_bare", "workload.max_bytes=65536")
# a small finished train point that resume tests damage on their own copies (test_damaged_files.py,
# test_config_migrations.py)
SMALL_TRAIN = ("workload.synthetic_samples=8", "workload.batch_size=4", "workload.epochs=2", "workload.model=hpml_cnn",
               "workload.checkpoint=false")

DIGITS_ENV = "HPML_DIGITS_ROOT"  # where tiny presets that read real files (conf/experiment/tiny/*.yaml) find them


@pytest.fixture(scope="session")
def digits_data(tmp_path_factory) -> Path:
    """scikit-learn's digits written once per session by `hpml data digits`: CIFAR-10 python batches under
    <root>/cifar (1,438 training and 359 test images) and the same images as JPEGs under <root>/jpeg/{train,val}/."""
    from hpml.dataprep.cli import main as data_main

    root = tmp_path_factory.mktemp("digits")
    assert data_main(["digits", "--root", str(root / "cifar"), "--jpeg-folder", str(root / "jpeg")]) == 0
    return root


@pytest.fixture(scope="session")
def tiny_data_env(request):
    """The environment a tiny preset runs in: $HPML_DIGITS_ROOT set to the session's digits when the preset reads
    it (written on first use only, so presets that need no files pay nothing)."""

    def _env(preset: Path) -> dict:
        if DIGITS_ENV not in preset.read_text():
            return {}
        return {DIGITS_ENV: str(request.getfixturevalue("digits_data") / "cifar")}

    return _env


@pytest.fixture(scope="module")
def saved_evaluate_study(tmp_path_factory) -> Path:
    """Four models (45 MB each) and an image folder, saved once per test module; each test works on a copy."""
    from tests.evaluate_study import write_study  # imported here: torch loads only for the tests that use it

    root = tmp_path_factory.mktemp("study")
    write_study(root)
    return root


@pytest.fixture
def evaluate_study(saved_evaluate_study, tmp_path):
    """(sweep folder, image folder) of a copy of the saved study in the test's own folder."""
    shutil.copytree(saved_evaluate_study, tmp_path, dirs_exist_ok=True)
    return tmp_path / "sweep", tmp_path / "images"


@pytest.fixture(scope="session")
def committed_sweeps(tmp_path_factory):
    """committed_sweeps("training_techniques") -> a folder holding docs/results/<that>/sweeps.tgz unpacked, once a
    session (the raw sweeps of committed measurements are packed: tools/pack_sweeps.py). Tests copy what they
    change."""
    unpacked = {}

    def _unpack(folder: str) -> Path:
        if folder not in unpacked:
            target = tmp_path_factory.mktemp("committed")
            with tarfile.open(REPO / "docs" / "results" / folder / "sweeps.tgz") as archive:
                archive.extractall(target, filter="data")
            unpacked[folder] = target
        return unpacked[folder]

    return _unpack


def launch_then_damage(root: Path, args: Sequence[str], damage, timeout: float = 600, env: dict | None = None):
    """`hpml launch` as a user runs it, and `damage()` called as soon as the sweep's manifest exists: after the
    preflight passed, before a worker reads its data. The way to make a point fail in its worker now that the
    preflight reads every file a run will read (issue 33): the files change after the launch."""
    import time

    before = set((root / "sweeps").glob("*/manifest.json")) if (root / "sweeps").is_dir() else set()
    launch = subprocess.Popen(HPML + ["launch", *args], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 120
    while launch.poll() is None and time.monotonic() < deadline:
        if set((root / "sweeps").glob("*/manifest.json")) - before:
            damage()
            break
        time.sleep(0.05)
    out, err = launch.communicate(timeout=timeout)
    return subprocess.CompletedProcess(launch.args, launch.returncode, out, err)
