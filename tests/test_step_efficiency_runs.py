"""Issue 44 for real on the CPU: the compile path runs (torch.compile's default mode builds C++ kernels with the
host compiler), the CUDA-graph path and the combinations it cannot hold are refused in one line before anything
is written, and the verdict is proved on runs built to be each case: a slow loader is data-bound, DDP over gloo
with a big model and a tiny batch is communication-bound, a plain CPU run is CPU-bound."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import hpml_here

C_COMPILER = shutil.which("g++") or shutil.which("c++")


def results(root: Path):
    return [json.loads(p.read_text()) for p in sorted(root.glob("sweeps/*/points/*/result.json"))
            if p.parents[2].name != "latest"]


def one_line_refusal(process, *phrases: str) -> str:
    assert process.returncode != 0
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in process.stderr, process.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


@pytest.mark.skipif(C_COMPILER is None, reason="torch.compile on a CPU needs a host C++ compiler")
def test_compile_default_runs_on_a_cpu_and_its_cost_shows_apart_from_the_steady_step(tmp_path, hpml):
    launched = hpml("launch", "experiment=step_efficiency_cpu", timeout=900)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    by_mode = {r["config"]["workload"]["compile"]: r for r in results(tmp_path)}
    assert set(by_mode) == {"none", "default"} and all(r["status"] == "ok" for r in by_mode.values())
    for result in by_mode.values():
        d = result["derived"]
        assert d["mfu"] is None and d["mfu_na"].startswith("CPU:") and d["achieved_tflops"] > 0
        assert d["bound"] == "CPU-bound"
        assert result["measurements"]["efficiency"]["flops"]["flops_per_sample"] > 0
    eager, compiled = by_mode["none"]["derived"]["setup"], by_mode["default"]["derived"]["setup"]
    # compiling falls in the first step: it costs more over the steady step than eager's first step does
    assert compiled["first_step_extra_s"] > 10 * max(eager["first_step_extra_s"], 1e-3)
    assert by_mode["default"]["measurements"]["compile"] == "default"


def test_cuda_graphs_on_a_cpu_is_one_line_and_nothing_is_written(tmp_path, hpml):
    """The real command once (its process's exit status and whole stderr); the other refusals and dry runs of
    these two tests through cli.main in this process (conftest's hpml_here: a Python start less each, issue 41)."""
    refused = hpml("launch", "experiment=step_efficiency_cpu", "workload.cuda_graphs=true")
    one_line_refusal(refused, "workload.cuda_graphs=True is not allowed", "without GPUs")
    assert not (tmp_path / "sweeps").exists()
    refused = hpml_here(["launch", "experiment=step_efficiency_cpu", "workload.compile=reduce_overhead"], tmp_path)
    one_line_refusal(refused, "workload.compile='reduce_overhead' is not allowed", "CUDA graphs")
    assert not (tmp_path / "sweeps").exists()


def test_cuda_graphs_with_what_it_cannot_hold_names_the_combination(tmp_path):
    refused = hpml_here(["launch", "--dry-run", "experiment=step_efficiency_graphs", "cluster.assume_gpus=2",
                         "resources.gpus_per_node=2", "workload.parallel=dp", "workload.dp_devices=2",
                         "workload.precision=fp16"], tmp_path)
    line = one_line_refusal(refused, "workload.cuda_graphs=True is not allowed")
    assert "parallel=dp (DataParallel" in line and "precision=fp16" in line
    ddp_graphs = hpml_here(["launch", "--dry-run", "experiment=step_efficiency_graphs", "cluster.assume_gpus=2",
                            "resources.gpus_per_node=2", "resources.workers_per_node=2", "workload.parallel=ddp"],
                           tmp_path)
    assert ddp_graphs.returncode == 0, ddp_graphs.stderr  # DDP's all-reduces are captured with the step
    refused = hpml_here(["launch", "--dry-run", "experiment=step_efficiency_graphs", "cluster.assume_gpus=1",
                         "workload.compile=reduce_overhead"], tmp_path)
    one_line_refusal(refused, "compile=reduce_overhead (one capture at a time")
    fused = hpml_here(["launch", "--dry-run", "experiment=step_efficiency_graphs", "cluster.assume_gpus=1",
                       "workload.compile=default"], tmp_path)
    assert fused.returncode == 0, fused.stderr  # inductor's kernels captured in the whole step
    allowed = hpml_here(["launch", "--dry-run", "experiment=step_efficiency", "cluster.assume_gpus=2",
                         "resources.gpus_per_node=2", "resources.workers_per_node=2", "workload.parallel=ddp",
                         "workload.compile=reduce_overhead", "workload.precision=bf16", "workload.channels_last=true"],
                        tmp_path)
    assert allowed.returncode == 0, allowed.stderr  # DDP with torch's own graphs (compile) is torch's to support


def slow_image_folder(root: Path, per_class: int = 6, side: int = 1024) -> Path:
    """Large noisy JPEGs that a model of 8x8 inputs trains on: decoding and resizing each one costs far more than
    the step (a slow loader, built on purpose)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        folder = root / "train" / name
        folder.mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{i}.jpg", quality=95)
    return root


def test_a_slow_loader_is_data_bound(tmp_path, hpml):
    data = slow_image_folder(tmp_path / "images")
    launched = hpml("launch", "workload.model=hpml_cnn", "workload.num_classes=2", "workload.image_size=8",
                    "workload.dataset=image_folder", f"workload.data_root={data}", "workload.batch_size=4",
                    "workload.epochs=2", "workload.parallel=none", "workload.checkpoint=false")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    [result] = results(tmp_path)
    bound = result["measurements"]["efficiency"]["bound"]
    assert bound["verdict"] == "data-bound", bound
    assert "loader_workers" in bound["knob"] and result["derived"]["bound"] == "data-bound"
    report = hpml_here(["report", "sweeps/latest", "--out", "report"], tmp_path)  # in this process: its text is the claim
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    section = text[text.index("### How far from the GPU's limit"):]
    row = next(line for line in section.splitlines() if line.startswith("| "))  # the header
    assert "MFU" in row and "| n/a | data-bound |" in section  # a CPU has no peak: n/a, with the reason below
    assert "MFU n/a: CPU: no dense peak is published for this host" in section


# serial (alone, after the other parts): the share compares the training's median step with the comm probe's blocks
# run after it, so a neighbour's load that changes between the two skews it; beside part 1's other worker it read
# 0.235 (under the 0.25 threshold) where alone it reads about 0.34 (issue 41, stop 51)
@pytest.mark.serial
def test_ddp_over_gloo_with_a_big_model_and_a_tiny_batch_is_communication_bound(tmp_path, hpml):
    # ResNet-50 (25.6 M parameters: 102 MB of gradients all-reduced each step) on 2 images of 8x8 per worker; plain
    # SGD (no momentum, no weight decay): the optimizer's passes over the weights are part of the step that the
    # all-reduce is a share of, and on a busy 2-core machine momentum's made the share 0.24 where a quiet one gives 0.34
    launched = hpml("launch", "workload.model=resnet50", "workload.image_size=8", "workload.batch_size=2",
                    "workload.synthetic_samples=8", "workload.epochs=2", "workload.comm_probe_steps=4",
                    "workload.momentum=0", "workload.weight_decay=0", "resources.workers_per_node=2",
                    "workload.checkpoint=false", timeout=900)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    [result] = results(tmp_path)
    efficiency = result["measurements"]["efficiency"]
    assert efficiency["bound_inputs"]["comm_s"] == result["measurements"]["comm_probe"]["exposed_comm_s"]
    assert efficiency["bound"]["verdict"] == "communication-bound", efficiency["bound"]
    assert efficiency["bound"]["knob"].startswith("per-GPU batch 2 leaves the all-reduce exposed")
