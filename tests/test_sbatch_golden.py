"""The sbatch script hpml submits for a fixed resource shape, compared with a golden file under tests/golden/.

The text is rendered the way submitit's SlurmExecutor renders it (`_make_submission_file_text` calls
`_make_sbatch_string(command, folder, **executor.parameters)`, with `map_count` set for an array), from
launcher.backends.slurm.submit's executor_parameters and jobs_folder; submitit's own tests render it the same way, which
needs no SLURM (where srun is installed, a real SlurmExecutor is checked to render the same text). Paths
are fixed (/sweeps/golden, `python`), so the text does not depend on the machine.

A deliberate change (new sbatch options, another submitit version) is reviewed by regenerating the files:
    HPML_UPDATE_GOLDEN=1 python -m pytest tests/test_sbatch_golden.py   (then read `git diff tests/golden`)
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest
import submitit
from submitit.slurm.slurm import _make_sbatch_string

from hpml.conf.schema import ClusterKind
from hpml.launcher.backends.slurm.submit import SIGNAL_DELAY_S, executor_parameters, jobs_folder
from hpml.launcher.child_python import python_shell
from hpml.launcher.jobspec import ResourceShape

GOLDEN = Path(__file__).parent / "golden"
SWEEP = Path("/sweeps/golden")

MINIMAL = ResourceShape(cluster=ClusterKind.slurm, nodes=1, workers_per_node=1, gpus_per_node=0,
                        cpus_per_worker=1, mem_gb=0, time_min=10)
FULL = ResourceShape(cluster=ClusterKind.slurm, nodes=2, workers_per_node=4, gpus_per_node=4, cpus_per_worker=8,
                     mem_gb=200, time_min=90, partition="gpu", account="proj", qos="normal", constraint="h100",
                     exclusive=True, sbatch_extra=(("mail-type", "END"),), setup=("module load cuda",),
                     srun_args=("--cpu-bind=none",))


def sbatch_text(shape: ResourceShape, max_parallel: int, array_size: int | None) -> str:
    folder = jobs_folder(SWEEP)
    command = " ".join([python_shell("python"), "-u -m submitit.core._submit", shlex.quote(str(folder))])  # as submitit's
    return _make_sbatch_string(command=command, folder=folder, map_count=array_size,
                               **executor_parameters(shape, max_parallel))


@pytest.mark.parametrize("name, shape, max_parallel, array_size", [
    ("sbatch_one_point.sh", MINIMAL, 0, None),
    ("sbatch_two_node_array.sh", FULL, 2, 3),
])
def test_sbatch_script_matches_the_golden_file(name, shape, max_parallel, array_size):
    text = sbatch_text(shape, max_parallel, array_size)
    golden = GOLDEN / name
    if os.environ.get("HPML_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
        pytest.skip(f"rewrote {golden}; review it with `git diff`")
    assert text == golden.read_text(), f"sbatch text changed; if on purpose: HPML_UPDATE_GOLDEN=1 ({golden})"


def test_the_array_script_asks_for_what_the_shape_needs():
    """The lines that matter, checked on their own (hand-computed), so a regenerated golden file cannot
    silently lose them."""
    lines = set(sbatch_text(FULL, 2, 3).splitlines())
    assert {
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",  # one torchrun per node
        "#SBATCH --cpus-per-task=32",  # 4 workers x 8 CPUs
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --mem=200G",
        "#SBATCH --time=90",
        "#SBATCH --array=0-2%2",  # 3 points, at most 2 at a time (cluster.max_parallel)
        f"#SBATCH --signal=USR2@{SIGNAL_DELAY_S}",
        "#SBATCH --exclusive",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        "#SBATCH --qos=normal",
        "#SBATCH --constraint=h100",
        "#SBATCH --mail-type=END",
        "#SBATCH --job-name=hpml",
        "#SBATCH --output=/sweeps/golden/jobs/%A_%a/%A_%a_0_log.out",
        "module load cuda",
    } <= lines
    (srun,) = [line for line in lines if line.startswith("srun ")]
    assert srun.endswith("--cpu-bind=none python -P -u -m submitit.core._submit /sweeps/golden/jobs/%j")  # -P: no cwd
    single = sbatch_text(MINIMAL, 0, None)
    assert "--array" not in single and "--gpus-per-node" not in single and "--mem" not in single


@pytest.mark.skipif(shutil.which("srun") is None, reason="submitit's SlurmExecutor refuses to exist without srun")
def test_submitits_executor_renders_the_same_text():
    """What the rendering above stands for: the text of a real SlurmExecutor set up as launcher.backends.slurm.submit does
    (an array: the copy submitit makes with map_count set)."""
    executor = submitit.SlurmExecutor(folder=str(jobs_folder(SWEEP)), python=python_shell("python"))
    executor.update_parameters(**executor_parameters(FULL, 2))
    array = submitit.SlurmExecutor(executor.folder, python=python_shell("python"))
    array.update_parameters(**executor.parameters)
    array.parameters["map_count"] = 3
    assert array._make_submission_file_text(array._submitit_command_str, "uid") == sbatch_text(FULL, 2, 3)
