"""The plain PyTorch loops that the committed GPU studies are measured beside (tools/plain_ddp_tta.py,
tools/plain_batch_aug.py): they run on a CPU (gloo, no energy), report what the READMEs quote, and the batch
augmentation loop trains the same network and the same Cutout as hpml's worker, so a number held against it compares
like with like. Needs Debian's dataset-fashion-mnist, as tests/test_fashion_mnist.py does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hpml.contract.idx_data import FASHION_MNIST, IDX_FILES
from hpml.dataprep.cli import main as data_main
from hpml.models.cifar_resnet import CifarResNet

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))
import plain_batch_aug  # noqa: E402  (a script of tools/, imported for its parts)

SOURCE = Path(FASHION_MNIST.default_from)
needs_files = pytest.mark.skipif(
    not all((SOURCE / f"{name}.gz").is_file() for name in IDX_FILES),
    reason=f"Fashion-MNIST's files are not in {SOURCE}: apt-get install dataset-fashion-mnist, as .ci/run does")


def parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_plain_resnet20_is_he_et_al_s_network_as_hpml_builds_it():
    # He et al. 2016, Table 6: ResNet-20 on CIFAR-10 has 0.27M parameters (269,722 counted: option A adds none)
    assert parameters(plain_batch_aug.resnet20(3)) == parameters(CifarResNet(20, in_channels=3)) == 269_722
    assert parameters(plain_batch_aug.resnet20(1)) == parameters(CifarResNet(20, in_channels=1))
    shapes = [tuple(p.shape) for p in plain_batch_aug.resnet20(1).parameters()]
    assert sorted(shapes) == sorted(tuple(p.shape) for p in CifarResNet(20, in_channels=1).parameters())


def test_the_plain_cutout_is_one_clipped_square_of_zeros_per_image():
    images = torch.ones(200, 1, 32, 32)
    holed = plain_batch_aug.cutout(images, 12, torch.Generator().manual_seed(0))
    zeros = (holed == 0).flatten(1).sum(1)
    # a centre in the middle covers 12 x 12; one in a corner, clipped at the border, 6 x 6
    assert zeros.max() == 144 and zeros.min() >= 36 and (zeros < 144).any()
    assert ((holed == 0) | (holed == 1)).all()  # nothing else touched


@pytest.fixture(scope="module")
def fashion_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain") / "fm"
    assert data_main(["fashion-mnist", "--root", str(root)]) == 0
    return root


@needs_files
def test_the_plain_batch_augmentation_loop_runs_each_m_and_reports_its_runs(fashion_root, tmp_path):
    out = tmp_path / "plain.json"
    done = subprocess.run([sys.executable, str(TOOLS / "plain_batch_aug.py"), "--data-root", str(fashion_root),
                           "--copies", "2", "3", "--max-samples", "32", "--batch", "8", "--epochs", "1",
                           "--target", "0", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [(r["copies"], r["samples_per_step"]) for r in runs] == [(2, 16), (3, 24)]
    for run in runs:  # a target any model meets, but never before epoch 2: the one epoch runs, not converged
        assert run["converged"] is False and run["epochs"] == 1 and len(run["epoch_s"]) == 1
        assert run["energy_j"] is None  # no GPU, no energy counter
        assert 0 <= run["top1"] <= 1 and run["seconds"] >= sum(run["epoch_s"])
    assert [json.loads(line) for line in done.stdout.splitlines()] == runs


@needs_files
def test_the_plain_ddp_loop_runs_under_torchrun_on_gloo(fashion_root, tmp_path):
    out = tmp_path / "plain.json"
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(TOOLS / "plain_ddp_tta.py"), "--dataset", "fashion_mnist", "--data-root",
                           str(fashion_root), "--max-samples", "32", "--batch", "16", "--epochs", "1",
                           "--target", "0", "--repeats", "1", "--crop-padding", "2", "--flip", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["gpu"] == "cpu" and report["gpus"] == 2 and report["compile"] == "none"
    assert report["cuda_graphs"] is False and report["precision"] == "float32"  # bf16 autocast on a GPU only
    (run,) = report["runs"]
    assert run["converged"] is False and run["epochs"] == 1 and run["energy_j"] is None and run["gpus"] == 2


def test_the_plain_ddp_loop_refuses_cuda_graphs_without_a_gpu_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(TOOLS / "plain_ddp_tta.py"), "--data-root", str(tmp_path),
                           "--cuda-graphs"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "--cuda-graphs needs a GPU and --compile none or default" in done.stderr.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
