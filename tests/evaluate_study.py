"""The study that the `hpml evaluate` tests score (tests/test_evaluate.py, tests/test_evaluate_images.py; the fixtures
`saved_evaluate_study` and `evaluate_study` in tests/conftest.py write it), and helpers that read what evaluate says.

The models are real torchvision ResNet-18s (CIFAR stem) rebuilt by models.build.build_classifier (what the train
workload trains), with weights fixed so that the prediction is known by hand: the network passes the pixels' mean
over R, G, B (after the saved normalization) through its shortcuts, and the "bright" logit wins when that value
exceeds the "dark" logit's bias. The folder holds PNG and JPEG images of several sizes and modes.
"""

import contextlib
import functools
import signal

import torch
from PIL import Image

from hpml.contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from hpml.launcher.cli import main as hpml
from hpml.models.build import build_classifier

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


def write_study(root):
    """Four models (45 MB each) under root/sweep/points/<n>/ (thresholds 0.1, 0.1, 1.0, 0.1 on H100, H100, H200,
    H200) and the image folder root/images."""
    save_model(root / "sweep", 0, 0.1, H100)
    save_model(root / "sweep", 1, 0.1, H100)
    save_model(root / "sweep", 2, 1.0, H200)
    save_model(root / "sweep", 3, 0.1, H200)
    write_images(root / "images")


def evaluate_error(capsys, *args):
    """Runs `hpml evaluate ARGS`, which must fail with one line; returns that line."""
    assert hpml(["evaluate", *map(str, args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hpml: error: ")
    return err[0]


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


def left_out(out, title):
    """{path relative to the study's folder: reason} of one "<title> (n)" list of the report."""
    listed = out.split(f"## {title} (", 1)[1].split("\n\n## ", 1)[0]
    lines = [line for line in listed.splitlines() if line.startswith("- `")]
    assert listed.startswith(f"{len(lines)})")
    return {line[3:].split("`: ", 1)[0]: line.split("`: ", 1)[1] for line in lines}
