"""The train workload's evaluation, stop at target and saved model, run for real: experiment=tta_digits on the
digits written as CIFAR-10 files (`hpml data digits`), one seed, gloo on the CPU, then `hpml evaluate` of the
model it kept."""

from __future__ import annotations

import json

import pytest
import torch

from contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from tests.conftest import run_hpml


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    done = run_hpml(["data", "digits", "--root", str(root / "data"), "--ood", str(root / "ood")], cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def tta_point(digits, tmp_path, *overrides):
    """One tta_digits point (seed 0) in tmp_path; returns (its folder, its result)."""
    done = run_hpml(["launch", "experiment=tta_digits", f"workload.data_root={digits / 'data'}",
                     "hydra.sweeper.params={sweep.seed: '0'}", *overrides], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (sweep,) = [d for d in (tmp_path / "sweeps").iterdir() if d.name != "latest"]
    assert [p.name for p in (sweep / "points").iterdir()] == ["0"]  # the preset's 5 seeds replaced by one
    folder = sweep / "points" / "0"
    return folder, json.loads((folder / "result.json").read_text())


def test_a_run_stops_at_its_target_and_keeps_its_model(digits, tmp_path):
    folder, result = tta_point(digits, tmp_path, "workload.target_accuracy=0.3", "workload.epochs=6")
    evaluation, tta = result["measurements"]["evaluation"], result["derived"]["tta"]
    first = next(i for i, top1 in enumerate(evaluation["top1"]) if top1 >= 0.3)
    assert tta["converged"] and tta["target"] == 0.3
    assert tta["epochs_to_target"] == evaluation["epoch"][first] == first + 1
    assert tta["tta_s"] == evaluation["elapsed_s"][first]
    # the clock without evaluation leaves out every evaluation up to and including that one
    assert tta["tta_train_s"] == pytest.approx(evaluation["elapsed_s"][first] - sum(evaluation["eval_s"][:first + 1]))
    assert tta["steps_to_target"] == evaluation["step"][first] == (first + 1) * result["measurements"]["steps_per_epoch"]
    # stopped at the first epoch at or past the target, but never before epoch 2 (epoch 1 is warm-up)
    assert len(result["measurements"]["epoch_time_s"]) == max(2, first + 1) == len(evaluation["top1"])
    assert all(0 <= top1 <= 1 for top1 in evaluation["top1"])
    saved = torch.load(folder / MODEL_FILE, weights_only=True)
    assert saved["format"] == SAVED_MODEL_FORMAT and saved["hardware"] == "cpu"
    assert saved["model"] == {"name": "hpml_cnn", "num_classes": 10, "image_size": 32, "cifar_stem": False}
    assert saved["classes"] == [str(i) for i in range(10)]

    scored = run_hpml(["evaluate", str(folder.parent.parent), "--images", str(digits / "ood")], cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert "| points/0 | cpu | hpml_cnn | 50 |" in scored.stdout


def test_a_run_that_never_reaches_its_target_is_not_converged(digits, tmp_path):
    _, result = tta_point(digits, tmp_path, "workload.target_accuracy=1.0", "workload.epochs=2",
                          "workload.save_model=false")
    assert result["status"] == "ok"
    assert result["derived"]["tta"] == {"target": 1.0, "converged": False, "tta_s": None, "tta_train_s": None,
                                        "epochs_to_target": None, "steps_to_target": None}
    assert len(result["measurements"]["evaluation"]["top1"]) == 2  # every epoch evaluated, up to the cap


@pytest.mark.parametrize("override, expected", [
    ("workload.target_accuracy=1.5", "workload.target_accuracy=1.5 is not allowed: null or a top-1 fraction in (0, 1]"),
    ("workload.eval_every=0", "workload.eval_every=0 is not allowed: an integer >= 1 when workload.target_accuracy"),
    ("workload.dataset=synthetic", "workload.eval_every=1 is not allowed: 0 unless workload.dataset is cifar10"),
])
def test_evaluation_settings_are_checked_before_anything_runs(digits, tmp_path, override, expected):
    done = run_hpml(["launch", "experiment=tta_digits", f"workload.data_root={digits / 'data'}", override,
                     "--dry-run"], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"hpml: error: {expected}"), done.stderr
    assert not (tmp_path / "sweeps").exists()
