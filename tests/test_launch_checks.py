"""Issue 11, classes 3 and 4 (and two parts of 8): every bad value is refused by `hpml launch` and by its
--dry-run alike, with exit status 2 and exactly one `hpml: error:` line naming the key, before anything is written
(no sweeps/ folder, nothing outside the working folder either). Each value is checked through cli.main in this
process; one value of each class through the real command as well (issue 41: 80 Python starts were 90 s of CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpml.launcher.backends.local.preflight import PER_CORE, machine_cores, visible_gpus
from tests.conftest import hpml_here, run_hpml

CORES = machine_cores()
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # a real mask: the machine shows no GPU, whatever it has

# Each class of bad input: [(arguments, the key the error line must name, environment)]. Every case is refused by
# `hpml launch` and its --dry-run alike. The dry run goes through cli.main in this process (conftest's hpml_here: a
# Python start less, about half the CPU, issue 41), and so does the launch, but for the first case of each class:
# that one is the command as users run it (run_hpml), a process whose exit status and whole stderr are checked.
REFUSED_BY_CLASS = {
    "class 3: numbers that must be finite, whichever float field holds them": [
        (["workload.lr=inf"], "workload.lr", None),
        (["workload.momentum=nan"], "workload.momentum", None),
        (["workload=synthetic", "workload.fusion_threshold_mb=-inf"], "workload.fusion_threshold_mb", None),
    ],
    "class 3: integers past 64 bits (torch and C++ take int64), in any field, inside lists too": [
        (["workload.batch_size=99999999999999999999"], "workload.batch_size", None),
        (["experiment=tiny/probe", "workload.matmul_n=99999999999999999999999"], "workload.matmul_n", None),
        (["experiment=tiny/cuda_vecadd", "workload.sizes_m=[1,99999999999999999999]"], "workload.sizes_m", None),
    ],
    "class 3: a probe whose minimum windows cannot fit in the job's time": [
        (["experiment=tiny/probe", "workload.warmup_s=1e300"], "workload.warmup_s + workload.measure_s", None),
    ],
    "class 3: a batch larger than the data set": [
        (["workload.batch_size=4096"], "workload.batch_size", None),
        (["resources.workers_per_node=2", "workload.batch_size=1025"], "workload.batch_size", None),
        (["workload.dataset=cifar10", "workload.data_root=/nowhere", "workload.batch_size=50001"],
         "workload.batch_size", None),
    ],
    "class 3: what the local cluster (this machine) cannot run": [
        (["resources.nodes=2"], "resources.nodes", None),
        (["resources.gpus_per_node=1000000"], "resources.gpus_per_node", None),
        (["resources.workers_per_node=1000000"], "resources.workers_per_node", None),
        # enough samples for every worker's batch, so that on a many-core host the worker count is the only problem
        ([f"resources.workers_per_node={PER_CORE * CORES + 1}",
          f"workload.synthetic_samples={64 * (PER_CORE * CORES + 1)}"], "resources.workers_per_node", None),
        (["resources.cpus_per_worker=100000"], "resources.cpus_per_worker", None),
        ([f"resources.cpus_per_worker={PER_CORE * CORES + 1}"], "resources.cpus_per_worker", None),
    ],
    "class 3: a GPU asked of a machine that shows none": [
        (["resources.gpus_per_node=1"], "resources.gpus_per_node", NO_GPU),
        (["experiment=hw5_resnet50_bar"], "resources.gpus_per_node", NO_GPU),  # a GPU preset
        (["workload.device=cuda"], "workload.device", NO_GPU),
    ],
    "class 3: an empty sweep, one over the cap of points (counted, not listed), a repeated value": [
        (["-m", "workload.lr=range(0)"], "workload.lr", None),
        (["workload.epochs=range(0)"], "workload.epochs", None),
        (["sweep.seed=range(0,1000000000)"], "sweep.seed", None),
        (["sweep.seed=range(2,100000)"], "sweep.seed", None),
        (["sweep.seed=0,0"], "sweep.seed", None),
        (["experiment=batch_augmentation_digits_tiny", "workload.batch_augmentation=1,1"],
         "workload.batch_augmentation", None),
    ],
    "class 3: a line break in a text": [
        (["sweep.name=a\nb"], "sweep.name", None),
        (["workload.model=resnet\n18"], "workload.model", None),
    ],
    "class 3: intervals and time limits past any use (1e12 s overflowed time_t while the point ran)": [
        (["cluster.poll_s=1e12"], "cluster.poll_s", None),
        (["cluster.poll_s=100000"], "cluster.poll_s", None),
        (["cluster.poll_s=0.001"], "cluster.poll_s", None),
        (["resources.time_min=1000000000000"], "resources.time_min", None),
    ],
    "class 4: names and paths": [
        (["sweep.name=../../x"], "sweep.name", None),
        (["sweep.name=" + "a" * 5000], "sweep.name", None),
        (["sweep.dir=../outside"], "sweep.dir", None),
        (["sweep.root=r", "sweep.dir=r/../../outside"], "sweep.dir", None),
        (["sweep.root=" + "b" * 300], "sweep.dir", None),
    ],
    "class 8: local runs always wait; internal schema names are not choices": [
        (["sweep.wait=false"], "sweep.wait", None),
        (["workload=train_schema"], "workload", None),
        (["cluster=cluster_schema"], "cluster", None),
    ],
}


def the_command(args, cwd: Path, env=None):
    return run_hpml(args, cwd=cwd, timeout=120, env=env)


# (arguments, key, environment, how the launch is run)
REFUSED = [(*case, the_command if i == 0 else hpml_here) for cases in REFUSED_BY_CLASS.values()
           for i, case in enumerate(cases)]


def refused_in_one_line(tmp_path: Path, args, key: str, env, run=hpml_here) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    done = run(["launch", *args], cwd=work, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("hpml: error: "), done.stderr
    assert f"{key}=" in lines[0] or f"{key}:" in lines[0], lines[0]
    assert len(lines[0]) < 400, lines[0]
    assert list(work.iterdir()) == [] and list(tmp_path.iterdir()) == [work]  # nothing written anywhere
    return lines[0]


@pytest.mark.parametrize("args, key, env, run", REFUSED,
                         ids=[" ".join(a)[:40] + ("-command" if run is the_command else "") for a, _, _, run in REFUSED])
def test_launch_and_dry_run_refuse_alike_before_writing(tmp_path, args, key, env, run):
    launched = refused_in_one_line(tmp_path, args, key, env, run)
    dry = refused_in_one_line(tmp_path, [*args, "--dry-run"], key, env)
    assert launched == dry


def test_a_gpu_preset_without_a_gpu_names_the_override_that_allows_it(tmp_path):
    line = refused_in_one_line(tmp_path, ["experiment=hw5_resnet50_bar"], "resources.gpus_per_node", NO_GPU)
    assert "resources.gpus_per_node=0" in line.split("not allowed")[1]


def test_multirun_flag_is_accepted_anywhere(tmp_path):
    done = hpml_here(["launch", "workload.lr=0.1", "-m", "workload.batch_size=8,16", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 point(s)" in done.stdout
    assert not (tmp_path / "sweeps").exists()


def test_help_lists_no_internal_schema(tmp_path):
    done = run_hpml(["launch", "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from hpml.conf.workload import WORKLOAD_SCHEMAS

    assert f"workload: {', '.join(sorted(WORKLOAD_SCHEMAS))}" in done.stdout  # every registered one, no schema
    assert "cluster: local, slurm" in done.stdout
    assert "_schema" not in done.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not visible_gpus(), reason="needs a GPU")
def test_visible_gpus_agree_with_torch():
    import torch

    assert visible_gpus() == torch.cuda.device_count()


def test_a_gpu_sweep_can_be_planned_for_another_machine_but_not_run_here(tmp_path):
    """cluster.assume_gpus lets a laptop check a GPU host's sweep (the H200 scripts' DRY_RUN), dry run only."""
    planned = hpml_here(["launch", "--dry-run", "resources.gpus_per_node=4", "cluster.assume_gpus=4"], cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "dry run: nothing written" in planned.stdout
    refused = run_hpml(["launch", "resources.gpus_per_node=0", "cluster.assume_gpus=4"], cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("hpml: error: cluster.assume_gpus is for --dry-run only (planning a sweep for "
                                      "another machine); drop it to run here")
    assert not (tmp_path / "sweeps").exists()
