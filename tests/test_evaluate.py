"""`hpml evaluate SWEEP_DIR --images DIR` (evaluation/): saved models scored on generated image folders.

The study (tests/evaluate_study.py): ResNet-18s whose prediction is known by hand, on an image folder of PNG and JPEG
images of several sizes and modes. Here the scores per model and per hardware, and the models evaluate leaves out
with their reason (a model.pt that is unreadable, no regular file, or records an impossible image_size); the image
folder's bad input is in tests/test_evaluate_images.py.
"""

import csv
import math
import os
import shutil
from pathlib import Path

import pytest
import torch

from hpml.contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from hpml.evaluation.accuracy import batch_size
from hpml.launcher.cli import main as hpml
from hpml.models.build import build_classifier
from hpml.models.saved import check_saved, load_saved
from tests.evaluate_study import H100, H200, evaluate_error, left_out, no_hang, save_model


def test_accuracy_per_model_and_per_hardware_against_a_hand_count(evaluate_study, capsys):
    sweep, images = evaluate_study
    assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    report = sweep / "report"
    assert out == (report / "evaluate.md").read_text()
    with open(report / "evaluate.csv") as f:
        models = list(csv.DictReader(f))
    # threshold 0.1: b1 b2 b3 b4 right, b5 wrong; d1 d2 d4 right, d3 wrong -> 7 / 9
    # threshold 1.0: b3 turns dark (wrong) -> 6 / 9
    assert [(m["point"], m["hardware"], int(m["correct"]), int(m["images"])) for m in models] == [
        ("points/0", H100, 7, 9), ("points/1", H100, 7, 9), ("points/2", H200, 6, 9), ("points/3", H200, 7, 9)]
    assert [float(m["top1"]) for m in models] == pytest.approx([7 / 9, 7 / 9, 6 / 9, 7 / 9])
    with open(report / "evaluate_hardware.csv") as f:
        hardware = {row["hardware"]: row for row in csv.DictReader(f)}
    assert float(hardware[H100]["top1_mean"]) == pytest.approx(7 / 9) and float(hardware[H100]["top1_std"]) == 0.0
    assert float(hardware[H200]["top1_mean"]) == pytest.approx(13 / 18)
    assert float(hardware[H200]["top1_std"]) == pytest.approx(math.sqrt(2 * (1 / 18) ** 2))  # ddof=1, n=2
    assert "| points/2 | NVIDIA H200 | resnet18 (CIFAR stem) | 9 | 6 | 66.67 |" in out
    assert "| NVIDIA H200 | 2 | 72.22 ± 7.86 | 66.67 | 77.78 |" in out
    assert "9 in 2 class folders (bright: 5, dark: 4)" in out


def test_out_option_and_a_single_model_has_no_spread(evaluate_study, tmp_path, capsys):
    sweep, images = evaluate_study
    for point in (1, 2, 3):
        (sweep / "points" / str(point) / MODEL_FILE).unlink()
    assert hpml(["evaluate", str(sweep), "--images", str(images), "--out", str(tmp_path / "o")]) == 0
    assert f"| {H100} | 1 | 77.78 ± — | 77.78 | 77.78 |" in capsys.readouterr().out
    assert (tmp_path / "o" / "evaluate.csv").exists() and not (sweep / "report").exists()


def test_unusable_models_are_listed_and_the_others_scored(evaluate_study, capsys):
    sweep, images = evaluate_study
    (sweep / "points" / "1" / MODEL_FILE).write_text("not a torch file")
    save_model(sweep, 2, 0.1, H200, classes=["dark", "bright", "grey"])
    three = build_classifier("resnet18", 3, cifar_stem=True).state_dict()
    save_model(sweep, 3, 0.1, H200, state_dict=three)
    save_model(sweep, 4, 0.1, H200, format=99)
    assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert "## Models not evaluated (4)" in out
    assert "points/1/model.pt`: unreadable (" in out
    assert "points/2/model.pt`: classes: 3 names for num_classes=2" in out
    assert "points/3/model.pt`: cannot rebuild resnet18 (CIFAR stem): size mismatch for fc.weight" in out
    assert "points/4/model.pt`: format 99; this hpml reads format 1" in out
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out


def test_only_regular_model_files_are_read(evaluate_study, capsys):
    """A FIFO model.pt would block torch.load forever, /dev/zero would never end; a folder named model.pt is
    listed too."""
    sweep, images = evaluate_study
    for point, make in ((1, os.mkfifo), (2, lambda path: os.symlink("/dev/zero", path)), (3, os.mkdir)):
        (sweep / "points" / str(point) / MODEL_FILE).unlink()
        make(sweep / "points" / str(point) / MODEL_FILE)
    with no_hang():
        assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert {Path(p).parent.name: why for p, why in left_out(out, "Models not evaluated").items()} == {
        "1": "not a regular file (a FIFO (named pipe))", "2": "not a regular file (a character device)",
        "3": "not a regular file (a directory)"}
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out


GOOD = {"format": SAVED_MODEL_FORMAT, "state_dict": {"w": torch.zeros(2)}, "classes": ["dark", "bright"],
        "model": {"name": "resnet18", "num_classes": 2, "image_size": 32, "cifar_stem": True, "in_channels": 3,
                  "padding": 0},
        "normalize": {"mean": [0.5] * 3, "std": [0.2] * 3}, "hardware": "cpu"}


def test_a_model_saved_before_channels_and_padding_were_recorded_is_rgb_unpadded(tmp_path):
    old = {**GOOD, "model": {k: v for k, v in GOOD["model"].items() if k not in ("in_channels", "padding")}}
    assert check_saved(old) == []
    torch.save(old, tmp_path / "model.pt")
    saved = load_saved(tmp_path / "model.pt", tmp_path)
    assert (saved.spec.in_channels, saved.padding) == (3, 0)


@pytest.mark.parametrize("change, error", [
    ({"image_size": 1}, "model: image_size=1; expected an integer in [8, 1024]"),
    ({"image_size": 7}, "model: image_size=7; expected an integer in [8, 1024]"),
    ({"image_size": 1025}, "model: image_size=1025; expected an integer in [8, 1024]"),
    ({"image_size": 200000}, "model: image_size=200000; expected an integer in [8, 1024]"),
    ({"image_size": True}, "model: image_size=True; expected an integer in [8, 1024]"),
    ({"num_classes": 1, "classes": ["dark"]}, "model: num_classes=1; expected an integer in [2, 100000]"),
    ({"name": ""}, "model: expected {name, num_classes, image_size, cifar_stem}"),
    ({"classes": ["dark", "dark"]}, "classes: 'dark' named more than once (folders are matched to classes by "
                                    "name)"),
    ({"classes": ["dark", ""]}, "classes: expected a list of class names"),
    ({"normalize": {"mean": [float("nan")] * 3, "std": [0.2] * 3}}, "normalize: expected {mean: [...], std: [...] > "
                                                                    "0}, 3 finite number(s) each (one per input "
                                                                    "channel)"),
    ({"normalize": {"mean": [0.5] * 3, "std": [float("inf")] * 3}}, "normalize: expected {mean: [...], std: [...] > "
                                                                    "0}, 3 finite number(s) each (one per input "
                                                                    "channel)"),
    ({"in_channels": 2}, "model: in_channels=2; expected 1 (grayscale) or 3 (RGB)"),
    ({"in_channels": 1}, "normalize: expected {mean: [...], std: [...] > 0}, 1 finite number(s) each (one per input "
                         "channel)"),  # a 1-channel model with RGB statistics
    ({"padding": -1}, "model: padding=-1; expected an integer in [0, 1024]"),
    ({"state_dict": {"w": torch.zeros(2), "b": [1, 2]}}, "state_dict: 'b' is a list, not a tensor"),
])
def test_what_a_model_records_is_checked_before_anything_is_built(change, error):
    saved = {**GOOD, "model": dict(GOOD["model"])}
    for key, value in change.items():
        (saved["model"] if key in saved["model"] else saved)[key] = value
    assert check_saved(GOOD) == [] and check_saved(saved) == [error]


def test_a_model_recording_an_impossible_image_size_or_failing_its_forward_pass_is_listed(evaluate_study, capsys):
    """image_size 1 (no network takes it) and 200000 (its batch would fill the memory) are refused before the
    model is built; a model whose forward pass fails (SqueezeNet pools an 8 x 8 input to nothing) is listed,
    and the other models are scored."""
    sweep, images = evaluate_study
    save_model(sweep, 1, 0.1, H100, model={"name": "resnet18", "num_classes": 2, "image_size": 1, "cifar_stem": True})
    save_model(sweep, 2, 0.1, H100, model={"name": "resnet18", "num_classes": 2, "image_size": 200000,
                                           "cifar_stem": True})
    squeeze = build_classifier("squeezenet1_1", 2).state_dict()
    save_model(sweep, 3, 0.1, H100, state_dict=squeeze,
               model={"name": "squeezenet1_1", "num_classes": 2, "image_size": 8, "cifar_stem": False})
    assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert {Path(p).parent.name: why for p, why in left_out(out, "Models not evaluated").items()} == {
        "1": "model: image_size=1; expected an integer in [8, 1024]",
        "2": "model: image_size=200000; expected an integer in [8, 1024]",
        "3": "its forward pass failed on 8 x 8 inputs (RuntimeError: Given input size: (128x1x1). Calculated output "
             "size: (128x0x0). Output size is too small)"}
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out


def test_fewer_images_per_forward_pass_for_larger_inputs():
    assert [batch_size(size) for size in (8, 32, 128, 224, 512, 1024)] == [256, 256, 256, 83, 16, 4]


def test_a_sweep_without_models_is_one_line(tmp_path, capsys):
    earlier = tmp_path / "sweep" / "points" / "0" / "attempts" / "1"  # an earlier attempt's model: not the point's
    earlier.mkdir(parents=True)
    shutil.move(save_model(tmp_path, 0, 0.1, H100), earlier / MODEL_FILE)
    shutil.rmtree(tmp_path / "points")
    assert "no points/<n>/model.pt under" in evaluate_error(capsys, tmp_path / "sweep", "--images", tmp_path)


def test_the_rebuild_is_the_train_workloads_model():
    """One builder for training and evaluation; without the stem it is torchvision's ImageNet ResNet."""
    plain = build_classifier("resnet18", 10, cifar_stem=False)
    stem = build_classifier("resnet18", 10, cifar_stem=True)
    assert plain.conv1.kernel_size == (7, 7) and isinstance(plain.maxpool, torch.nn.MaxPool2d)
    assert stem.conv1.kernel_size == (3, 3) and isinstance(stem.maxpool, torch.nn.Identity)


@pytest.mark.gpu
def test_cuda_scores_what_the_cpu_scores(evaluate_study):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from hpml.evaluation.accuracy import score
    from hpml.evaluation.images import class_folders, dataset
    from hpml.models.saved import load_saved, rebuild

    sweep, images = evaluate_study
    saved = load_saved(sweep / "points" / "2" / MODEL_FILE, sweep)
    data = dataset(class_folders(images), saved.classes, saved.image_size, saved.mean, saved.std)
    on = {kind: score(rebuild(saved, torch.device(kind)), data, torch.device(kind)) for kind in ("cpu", "cuda")}
    assert on["cuda"] == on["cpu"] and on["cpu"].correct == 6
