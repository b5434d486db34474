"""`hpml evaluate SWEEP_DIR --images DIR` (evaluation/): saved models scored on generated image folders.

The models are real torchvision ResNet-18s (CIFAR stem) rebuilt by models.build.build_classifier (what the train workload trains), with
weights fixed by the test so that the prediction is known by hand: the network passes the pixels' mean over
R, G, B (after the saved normalization) through its shortcuts, and the "bright" logit wins when that value
exceeds the "dark" logit's bias. The folder holds PNG and JPEG images of several sizes and modes.
Bad input (an image or a model.pt that is a FIFO, a bomb, a model recording an impossible image_size) is left
out with its reason, or one line; a read that would block is bounded by no_hang.
"""

import contextlib
import csv
import functools
import math
import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path

import pytest
import torch
from PIL import Image

from contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from evaluation.accuracy import batch_size
from evaluation.images import ImageFolderError, class_folders
from evaluation.models import check_saved
from launcher.cli import main as hpml
from models.build import build_classifier
from tests.test_output_folders import as_an_unprivileged_user

CLASSES = ["dark", "bright"]  # label order of the model; ImageFolder's sorted order is the reverse
MEAN, STD = 0.6, 0.2  # the saved normalization: bright iff (v - 0.6) / 0.2 > threshold, v the gray level 0-1
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


@functools.lru_cache(maxsize=None)
def brightness_resnet(threshold: float) -> torch.nn.Module:
    model = build_classifier("resnet18", 2, cifar_stem=True)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                module.weight.zero_()
            elif isinstance(module, torch.nn.BatchNorm2d):  # identity in eval mode (up to eps = 1e-5)
                module.weight.fill_(1.0)
                module.bias.zero_()
                module.running_mean.zero_()
                module.running_var.fill_(1.0)
        model.conv1.weight[0, :, 1, 1] = 1.0 / 3  # channel 0 = the pixel's mean over R, G, B; relu keeps > 0
        for layer in (model.layer2, model.layer3, model.layer4):
            layer[0].downsample[0].weight[0, 0, 0, 0] = 1.0  # residual branches are 0: the shortcut carries it
        model.fc.weight.zero_()
        model.fc.bias.zero_()
        model.fc.weight[CLASSES.index("bright"), 0] = 1.0
        model.fc.bias[CLASSES.index("dark")] = threshold
    return model


def save_model(sweep, point, threshold, hardware, **changes):
    path = sweep / "points" / str(point) / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = {"format": SAVED_MODEL_FORMAT, "state_dict": brightness_resnet(threshold).state_dict(),
             "model": {"name": "resnet18", "num_classes": 2, "image_size": 32, "cifar_stem": True},
             "classes": list(CLASSES), "normalize": {"mean": [MEAN] * 3, "std": [STD] * 3}, "hardware": hardware}
    saved.update(changes)
    torch.save(saved, path)
    return path


def gray(mode, size, level):
    return Image.new("RGB", size, (level,) * 3).convert(mode)


def write_images(root):
    """9 images; the predictions with threshold 0.1 (bright iff v > 0.62) and 1.0 (v > 0.8) in the comments."""
    (root / "bright").mkdir(parents=True)
    (root / "dark").mkdir()
    gray("RGB", (32, 32), 255).save(root / "bright" / "b1.png")  # 1.00: bright, bright
    gray("RGB", (50, 70), 220).save(root / "bright" / "b2.jpg", quality=95)  # 0.86: bright, bright
    gray("L", (7, 9), 200).save(root / "bright" / "b3.png")  # 0.78: bright, dark
    Image.new("RGBA", (40, 40), (255, 255, 255, 0)).save(root / "bright" / "b4.PNG")  # alpha dropped: white
    gray("RGB", (32, 32), 20).save(root / "bright" / "b5.png")  # 0.08: dark, dark (a dark image misfiled)
    gray("L", (100, 30), 0).save(root / "dark" / "d1.jpeg")  # 0: dark, dark
    # 0.55: dark under the saved normalization (0.55 < 0.62); raw, or with CIFAR's or ImageNet's, it would be bright
    gray("RGB", (32, 32), 140).save(root / "dark" / "d2.png")
    gray("P", (16, 16), 255).save(root / "dark" / "d3.png")  # palette, white: bright, bright (misfiled)
    # 96x32, black centre, white sides: the evaluation transform's centre crop sees black (dark, dark);
    # stretched whole to 32x32 instead, the white sides would make it bright
    wide = Image.new("RGB", (96, 32), (255, 255, 255))
    wide.paste((0, 0, 0), (32, 0, 64, 32))
    wide.save(root / "dark" / "d4.png")
    (root / "dark" / "notes.txt").write_text("not an image: ignored")


@pytest.fixture(scope="module")
def saved_study(tmp_path_factory):
    """Four models (45 MB each) saved once per module; each test works on a copy."""
    root = tmp_path_factory.mktemp("study")
    save_model(root / "sweep", 0, 0.1, H100)
    save_model(root / "sweep", 1, 0.1, H100)
    save_model(root / "sweep", 2, 1.0, H200)
    save_model(root / "sweep", 3, 0.1, H200)
    write_images(root / "images")
    return root


@pytest.fixture
def study(saved_study, tmp_path):
    shutil.copytree(saved_study, tmp_path, dirs_exist_ok=True)
    return tmp_path / "sweep", tmp_path / "images"


def test_accuracy_per_model_and_per_hardware_against_a_hand_count(study, capsys):
    sweep, images = study
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


def test_out_option_and_a_single_model_has_no_spread(study, tmp_path, capsys):
    sweep, images = study
    for point in (1, 2, 3):
        (sweep / "points" / str(point) / MODEL_FILE).unlink()
    assert hpml(["evaluate", str(sweep), "--images", str(images), "--out", str(tmp_path / "o")]) == 0
    assert f"| {H100} | 1 | 77.78 ± — | 77.78 | 77.78 |" in capsys.readouterr().out
    assert (tmp_path / "o" / "evaluate.csv").exists() and not (sweep / "report").exists()


def test_unusable_models_are_listed_and_the_others_scored(study, capsys):
    sweep, images = study
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


def _error(capsys, *args):
    assert hpml(["evaluate", *map(str, args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hpml: error: ")
    return err[0]


def test_a_folder_named_like_no_class_is_one_line(study, capsys):
    sweep, images = study
    gray("RGB", (32, 32), 128).save(images / "cat.png")  # a loose file is not a class folder: ignored
    (images / "cat").mkdir()
    gray("RGB", (32, 32), 128).save(images / "cat" / "c.png")
    assert "folder 'cat' is not a class of the model of points/0 (its classes: dark, bright)" in \
        _error(capsys, sweep, "--images", images)


def test_an_empty_class_folder_or_no_class_folder_is_one_line(study, tmp_path, capsys):
    sweep, images = study
    empty = tmp_path / "empty"
    empty.mkdir()
    gray("RGB", (8, 8), 0).save(empty / "loose.png")
    assert "no class folders" in _error(capsys, sweep, "--images", empty)
    (empty / "dark").mkdir()
    (empty / "dark" / "readme.txt").write_text("no image here")
    assert f"--images {empty / 'dark'}: no images in this class folder" in _error(capsys, sweep, "--images", empty)
    assert "not a directory" in _error(capsys, sweep, "--images", tmp_path / "nowhere")


@contextlib.contextmanager
def no_hang(seconds=60):
    """Fails the test instead of waiting forever (an open() of a FIFO blocks until a writer comes)."""
    def fail(*_):
        raise TimeoutError(f"still running after {seconds} s: a read blocked")
    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _left_out(out, title):
    """{path relative to the study's folder: reason} of one "<title> (n)" list of the report."""
    listed = out.split(f"## {title} (", 1)[1].split("\n\n## ", 1)[0]
    lines = [line for line in listed.splitlines() if line.startswith("- `")]
    assert listed.startswith(f"{len(lines)})")
    return {line[3:].split("`: ", 1)[0]: line.split("`: ", 1)[1] for line in lines}


def test_images_that_cannot_be_used_safely_are_skipped_with_their_reason(study, capsys):
    """By class: anything named like an image that is no regular file, cannot be read or decoded, or is far
    larger than an input; the 9 good images are still scored, and every model on the same ones."""
    sweep, images = study
    dark = images / "dark"
    (dark / "broken.png").write_bytes(b"\x89PNG but not really")
    (dark / "empty.jpg").write_bytes(b"")
    gray("RGB", (64, 64), 0).save(dark / "cut.png")
    (dark / "cut.png").write_bytes((dark / "cut.png").read_bytes()[:60])
    os.mkfifo(dark / "fifo.png")  # opened, it would wait for a writer forever
    os.mknod(dark / "socket.png", stat.S_IFSOCK | 0o600)
    os.symlink("/dev/zero", dark / "zero.png")  # a device: read, it never ends
    os.symlink("loop.png", dark / "loop.png")
    Image.new("1", (14000, 14000)).save(dark / "bomb.png")  # over twice PIL's MAX_IMAGE_PIXELS: its error
    Image.new("1", (10000, 10000)).save(dark / "warned.png")  # over PIL's MAX_IMAGE_PIXELS: its warning
    Image.new("1", (8200, 8200)).save(dark / "huge.png")  # under PIL's limits, over evaluate's 8192 x 8192
    gray("L", (650, 10), 0).save(dark / "thin.png")  # 65:1: resized to 1024 high, 66560 x 1024
    (dark / "nested.png").mkdir()  # a folder named like an image is a folder: its images are scored
    shutil.move(dark / "d1.jpeg", dark / "nested.png" / "d1.jpeg")
    os.symlink("..", dark / "up")  # the image folder again: not walked (every class would be counted twice)
    with no_hang():
        assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    skipped = {Path(path).name: why for path, why in _left_out(out, "Images skipped").items()}
    assert skipped == {
        "broken.png": "not a readable image (no format PIL reads)",
        "empty.jpg": "not a readable image (no format PIL reads)",
        "cut.png": "not a readable image (OSError: image file is truncated)",
        "fifo.png": "not a regular file (a FIFO (named pipe))",
        "socket.png": "not a regular file (a socket)",
        "zero.png": "not a regular file (a character device)",
        "loop.png": "cannot be read (OSError: Too many levels of symbolic links)",
        "bomb.png": "refused as a possible decompression bomb (DecompressionBombError: Image size (196000000 "
                    "pixels) exceeds limit of 178956970 pixels, could be decompression bomb DOS attack.)",
        "warned.png": "refused as a possible decompression bomb (DecompressionBombWarning: Image size (100000000 "
                      "pixels) exceeds limit of 89478485 pixels, could be decompression bomb DOS attack.)",
        "huge.png": "8200 x 8200 pixels: larger than any sensible input (at most 67108864)",
        "thin.png": "650 x 10 pixels: sides more than 64:1 apart (resized to a model's image_size, it could exceed "
                    "67108864 pixels)",
        "up": "a link to a folder listed already (the image folder, a class folder or one under it)"}
    assert "9 in 2 class folders (bright: 5, dark: 4) (12 left out: Images skipped, below)" in out
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out
    assert "| points/2 | NVIDIA H200 | resnet18 (CIFAR stem) | 9 | 6 | 66.67 |" in out


def test_a_class_folder_with_no_usable_image_is_one_line(study, capsys):
    sweep, images = study
    shutil.rmtree(images / "dark")
    (images / "dark").mkdir()
    os.mkfifo(images / "dark" / "x.png")
    (images / "dark" / "y.png").write_text("not a png")
    with no_hang():
        line = _error(capsys, sweep, "--images", images)
    assert line == (f"hpml: error: --images {images / 'dark'}: no usable image in this class folder (2 left out; "
                    f"first: {images / 'dark' / 'x.png'}: not a regular file (a FIFO (named pipe)))")


def test_folders_and_images_that_cannot_be_read_say_so():
    """Not "no images": a class folder (or the image folder) the user may not list, an image they may not
    read (left out). As nobody when the tests run as root, whom permissions do not stop."""
    base = Path(tempfile.mkdtemp(prefix="hpml-evaluate-"))  # not under pytest's 0700 folder: nobody must reach it
    try:
        base.chmod(0o755)
        for name in ("locked_class", "locked_image", "locked_root"):
            for label in CLASSES:
                (base / name / label).mkdir(parents=True)
                gray("RGB", (8, 8), 0).save(base / name / label / "a.png")
                gray("RGB", (8, 8), 0).save(base / name / label / "b.png")
            (base / name).chmod(0o755)
        (base / "locked_class" / "dark").chmod(0o000)
        (base / "locked_image" / "dark" / "a.png").chmod(0o000)
        (base / "locked_root").chmod(0o311)  # it can be passed through, not listed

        def read():
            found = {}
            for name in ("locked_class", "locked_root"):
                try:
                    class_folders(base / name)
                except ImageFolderError as error:
                    found[name] = str(error)
            folders = class_folders(base / "locked_image")
            found["locked_image"] = [folders.counts, [(str(path), why) for path, why in folders.skipped]]
            return found

        assert as_an_unprivileged_user(read) == {
            "locked_class": f"--images {base / 'locked_class' / 'dark'}: this class folder cannot be read "
                            "(PermissionError: Permission denied)",
            "locked_root": f"--images {base / 'locked_root'}: cannot be read (PermissionError: Permission denied)",
            "locked_image": [{"bright": 2, "dark": 1}, [[str(base / "locked_image" / "dark" / "a.png"),
                                                        "cannot be read (PermissionError: Permission denied)"]]]}
    finally:
        for path in (base / "locked_class" / "dark", base / "locked_image" / "dark" / "a.png", base / "locked_root"):
            path.chmod(0o700)
        shutil.rmtree(base)


def test_only_regular_model_files_are_read(study, capsys):
    """A FIFO model.pt would block torch.load forever, /dev/zero would never end; a folder named model.pt is
    listed too."""
    sweep, images = study
    for point, make in ((1, os.mkfifo), (2, lambda path: os.symlink("/dev/zero", path)), (3, os.mkdir)):
        (sweep / "points" / str(point) / MODEL_FILE).unlink()
        make(sweep / "points" / str(point) / MODEL_FILE)
    with no_hang():
        assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert {Path(p).parent.name: why for p, why in _left_out(out, "Models not evaluated").items()} == {
        "1": "not a regular file (a FIFO (named pipe))", "2": "not a regular file (a character device)",
        "3": "not a regular file (a directory)"}
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out


GOOD = {"format": SAVED_MODEL_FORMAT, "state_dict": {"w": torch.zeros(2)}, "classes": ["dark", "bright"],
        "model": {"name": "resnet18", "num_classes": 2, "image_size": 32, "cifar_stem": True},
        "normalize": {"mean": [0.5] * 3, "std": [0.2] * 3}, "hardware": "cpu"}


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
    ({"normalize": {"mean": [float("nan")] * 3, "std": [0.2] * 3}}, "normalize: expected {mean: [r, g, b], std: "
                                                                    "[r, g, b] > 0}, finite numbers"),
    ({"normalize": {"mean": [0.5] * 3, "std": [float("inf")] * 3}}, "normalize: expected {mean: [r, g, b], std: "
                                                                    "[r, g, b] > 0}, finite numbers"),
    ({"state_dict": {"w": torch.zeros(2), "b": [1, 2]}}, "state_dict: 'b' is a list, not a tensor"),
])
def test_what_a_model_records_is_checked_before_anything_is_built(change, error):
    saved = {**GOOD, "model": dict(GOOD["model"])}
    for key, value in change.items():
        (saved["model"] if key in saved["model"] else saved)[key] = value
    assert check_saved(GOOD) == [] and check_saved(saved) == [error]


def test_a_model_recording_an_impossible_image_size_or_failing_its_forward_pass_is_listed(study, capsys):
    """image_size 1 (no network takes it) and 200000 (its batch would fill the memory) are refused before the
    model is built; a model whose forward pass fails (SqueezeNet pools an 8 x 8 input to nothing) is listed,
    and the other models are scored."""
    sweep, images = study
    save_model(sweep, 1, 0.1, H100, model={"name": "resnet18", "num_classes": 2, "image_size": 1, "cifar_stem": True})
    save_model(sweep, 2, 0.1, H100, model={"name": "resnet18", "num_classes": 2, "image_size": 200000,
                                           "cifar_stem": True})
    squeeze = build_classifier("squeezenet1_1", 2).state_dict()
    save_model(sweep, 3, 0.1, H100, state_dict=squeeze,
               model={"name": "squeezenet1_1", "num_classes": 2, "image_size": 8, "cifar_stem": False})
    assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    assert {Path(p).parent.name: why for p, why in _left_out(out, "Models not evaluated").items()} == {
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
    assert "no points/<n>/model.pt under" in _error(capsys, tmp_path / "sweep", "--images", tmp_path)


def test_the_rebuild_is_the_train_workloads_model():
    """One builder for training and evaluation; without the stem it is torchvision's ImageNet ResNet."""
    plain = build_classifier("resnet18", 10, cifar_stem=False)
    stem = build_classifier("resnet18", 10, cifar_stem=True)
    assert plain.conv1.kernel_size == (7, 7) and isinstance(plain.maxpool, torch.nn.MaxPool2d)
    assert stem.conv1.kernel_size == (3, 3) and isinstance(stem.maxpool, torch.nn.Identity)


@pytest.mark.gpu
def test_cuda_scores_what_the_cpu_scores(study):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from evaluation.accuracy import score
    from evaluation.images import class_folders, dataset
    from evaluation.models import load_saved, rebuild

    sweep, images = study
    saved = load_saved(sweep / "points" / "2" / MODEL_FILE, sweep)
    data = dataset(class_folders(images), saved.classes, saved.image_size, saved.mean, saved.std)
    on = {kind: score(rebuild(saved, torch.device(kind)), data, torch.device(kind)) for kind in ("cpu", "cuda")}
    assert on["cuda"] == on["cpu"] and on["cpu"].correct == 6
