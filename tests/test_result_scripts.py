"""The H200 measurement scripts of docs/results (run_h200.sh) with DRY_RUN=1: every stage's `hpml launch`
is composed and checked (hpml launch --dry-run) on this machine, nothing runs, so a typo in a script's
overrides shows here and not after the GPU time is spent. And each script's bars program (the Python heredoc
that writes bars.txt) on real results committed beside it, with the report redrawn by this tree's
`hpml report`: a table or an import it names that the analysis package no longer has shows here (issue 16's
4-GPU run lost its paired bar to `from analysis.synthetic import synthetic_runs`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def dry_run(script: str, tmp_path: Path, **env: str) -> str:
    out = tmp_path / "out"
    done = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "DRY_RUN": "1", "OUT": str(out), "PATH": f"{Path(sys.executable).parent}:"
                               f"{os.environ['PATH']}", **env})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["run.log"]  # nothing but the log: no results, no report
    return (out / "run.log").read_text()


def planned(log: str) -> list:
    """(stage, points) for every stage the log shows, in order."""
    stages = re.findall(r"^## stage (\S+) \(estimate \d+s\): hpml launch --dry-run", log, re.M)
    points = [int(n) for n in re.findall(r"^hpml: sweep \S+: (\d+) point\(s\)", log, re.M)]
    assert len(stages) == len(points), log
    return list(zip(stages, points))


def test_hw5_script_plans_every_stage_on_four_gpus(tmp_path):
    log = dry_run("docs/results/hw5_scaling/run_h200.sh", tmp_path, GPUS="4")
    assert planned(log) == [("bar", 2), ("ddp", 9), ("dp", 9), ("limit", 2), ("large.none", 1), ("large.linear", 2)]
    assert "resources.workers_per_node=1,2,4 workload.batch_size=32,128,512" in log
    assert "workload.dp_devices=1,2,4 workload.batch_size=32,128,512" in log  # issue 16: DP beside DDP, same batches


def test_hw5_script_on_two_gpus_and_a_stage_selection(tmp_path):
    log = dry_run("docs/results/hw5_scaling/run_h200.sh", tmp_path, GPUS="2", STAGES="large limit")
    assert planned(log) == [("limit", 2), ("large.none", 1), ("large.linear", 2)]  # the script's order
    assert "resources.workers_per_node=2 workload.batch_size=2048" in log


def test_horovod_script_plans_every_stage_on_four_gpus(tmp_path):
    log = dry_run("docs/results/horovod_synthetic/run_h200.sh", tmp_path, GPUS="4")
    assert planned(log) == [("allreduce", 2), ("allreduce_env.default", 2), ("allreduce_env.ring_simple", 2),
                            ("allreduce_env.channels32", 2),
                            ("allreduce_env.channels64", 2), ("paired", 2), ("bar", 2), ("bar", 2), ("bar", 2),
                            ("weak", 2),
                            ("strong", 3), ("methods", 4), ("collectives", 3), ("allreduce_n", 2)]
    assert re.findall(r"^## stage bar .*sweep\.repeat=(\d)", log, re.M) == ["0", "1", "2"]  # DDP/Horovod pairs
    assert re.search(r"^## stage paired .*workers_per_node=4 .*workload\.paired_rounds=60", log, re.M)


@pytest.mark.parametrize("script", ["docs/results/hw5_scaling/run_h200.sh",
                                    "docs/results/horovod_synthetic/run_h200.sh"])
def test_scripts_refuse_to_start_without_a_gpu_or_gpus(tmp_path, script):
    done = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "OUT": str(tmp_path / "out"), "GPUS": "0"})
    assert done.returncode == 1
    assert "no GPU found" in done.stdout


def bars_program(script: str) -> str:
    """The Python heredoc of a run_h200.sh (between <<'EOF' and EOF): what writes its bars.txt."""
    found = re.findall(r"<<'EOF'\n(.*?)\nEOF\n", (REPO / script).read_text(), re.S)
    assert len(found) == 1, script
    return found[0]


def redrawn(results: str, tmp_path: Path) -> Path:
    """A committed results tarball unpacked under tmp_path, its report redrawn by `hpml report` of this tree."""
    with tarfile.open(REPO / results) as archive:
        archive.extractall(tmp_path, filter="data")
    done = subprocess.run([sys.executable, "-m", "hpml.launcher.cli", "report", str(tmp_path / "sweeps"), "--out",
                           str(tmp_path / "redrawn")], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "redrawn"


def bars(script: str, *args: object) -> str:
    """The script's bars program run as the script runs it (python3 - ARGS from the repository root)."""
    done = subprocess.run([sys.executable, "-", *map(str, args)], input=bars_program(script), capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done.stdout


def test_horovod_bars_from_the_four_gpu_results(tmp_path):
    report = redrawn("docs/results/horovod_synthetic/h200_4gpu_env_paired/horovod_synthetic_h200.tar.gz", tmp_path)
    out = bars("docs/results/horovod_synthetic/run_h200.sh", report, tmp_path / "run.log", tmp_path / "sweeps", 4)
    assert ("allreduce_env_channels64 (same launch, N=4): busbw at 1 GiB hpml 360.9, bare 361.2 GB/s, hpml / bare "
            "0.9992 (>= 360: PASS; within 1 %: PASS)") in out
    assert "allreduce_env_default (same launch, N=4): busbw at 1 GiB hpml 354.6, bare 354.6 GB/s" in out
    assert ("ResNet-50 on 4 GPUs (ddp_broadcast_buffers=False), DDP and Horovod-style side by side in one process "
            "(60 rounds of one iteration each, fusion 64 MiB): DDP 6449, Horovod-style 6602 images/s (medians); "
            "Horovod-style / DDP median 1.0090 [0.8102, 1.1730] (within 3 %: PASS)") in out
    assert "Horovod-style / DDP median 1.0902 [0.8330, 1.4649] (within 3 %: FAIL)" in out  # torch's default DDP
    assert "RING proto SIMPLE channel{Lo..Hi}={0..23}" in out  # NCCL's choice, read from the point's log


def test_hw5_bars_from_the_four_gpu_results(tmp_path):
    report = redrawn("docs/results/hw5_scaling/h200_4gpu/hw5_h200_results.tar.gz", tmp_path)
    out = bars("docs/results/hw5_scaling/run_h200.sh", report)
    assert "1 GPU (compiled), instrumented loop: 6186 images/s (>= 4600: PASS)" in out
    assert "DDP weak scaling N=4 (compiled): 25769 images/s over the epoch, step 39.70 ms, speedup 3.916, " \
           "efficiency 97.92 % (>= 97%: PASS)" in out  # as the device's bars.txt beside it says


# --- the set-up every GPU run script shares (docs/results/lib/stages.sh, sourced with STAGES_FUNCTIONS_ONLY=1) -----

# every script that takes the functions alone, found rather than listed: a new run script is held to the rule too
SETUP_SCRIPTS = sorted(str(path.relative_to(REPO)) for path in (REPO / "docs" / "results").rglob("*.sh")
                       if "STAGES_FUNCTIONS_ONLY=1 source " in path.read_text() and path.parent.name != "lib")
assert {"docs/results/tta_fashion_mnist/run_parallel.sh", "docs/results/tta_gpus_fashion_mnist/run.sh",
        "docs/results/batch_augmentation_digits/run.sh", "docs/results/gpu_telemetry/run_h200.sh",
        "docs/results/tta_fashion_mnist/run_1gpu.sh"} <= set(SETUP_SCRIPTS)  # the search finds them
# the lines stages.sh's functions hold, which a script sourcing it no longer repeats
OWN_SETUP = re.compile(r"pip install|NCCL_NVLS_ENABLE|import hydra, omegaconf, submitit|PYTHONPATH=|hpml=\(")

FAKE_PYTHON3 = """#!/usr/bin/env bash
# python3 of a bare GPU machine: no hydra; pip records what it was asked to install
if [ "$1" = -c ]; then exit 1; fi
if [ "$1 $2 $3" = "-m pip install" ]; then echo "$*" >"$PIP_LOG"; exit 0; fi
exit 2
"""


@pytest.mark.parametrize("script", SETUP_SCRIPTS)
def test_run_scripts_take_their_set_up_from_stages_sh(script):
    text = (REPO / script).read_text()
    assert "STAGES_FUNCTIONS_ONLY=1 source " in text and "/lib/stages.sh" in text
    assert all(f in text for f in ("wheels_if_missing", "on_pythonpath", "no_nvlink_multicast")), script
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if OWN_SETUP.search(line)]
    # timeout, xargs, nohup and env run programs, not the shell function hpml
    assert not [line for line in code if re.search(r"\b(timeout|xargs|nohup|env)\b[^|;&#]*\shpml\s", line)]
    done = subprocess.run(["bash", "-n", str(REPO / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_functions_alone_set_up_the_environment_and_touch_nothing(tmp_path):
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON3)
    (bin_dir / "python3").chmod(0o755)
    program = (f'STAGES_FUNCTIONS_ONLY=1 source {REPO}/docs/results/lib/stages.sh; no_nvlink_multicast; '
               'wheels_if_missing; echo "rc=$?"; on_pythonpath "$PWD"; echo "pwd=$PWD"; '
               'echo "PYTHONPATH=$PYTHONPATH"; env | grep -E "^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|'
               'NVSHMEM_DISABLE_NVLS)=" | sort; type -t hpml; type -t stage || echo "no stage"')
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OUT")}
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60, cwd=work,
                          env={**env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PIP_LOG": str(tmp_path / "pip")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "rc=0", f"pwd={work}", f"PYTHONPATH={work}:/tmp/site", "NCCL_NVLS_ENABLE=0", "NVSHMEM_DISABLE_NVLS=1",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "function", "no stage"]
    assert (tmp_path / "pip").read_text().split() == [
        "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade",
        "--target", "/tmp/site", ".whl/*.whl"]  # no .whl/ in this folder: the glob stays as written
    assert list(work.iterdir()) == []  # no run.log, no OUT folder
