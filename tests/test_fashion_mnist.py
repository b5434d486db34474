"""Fashion-MNIST on the real files (issue 43): `hpml data fashion-mnist` checks and lays them out, torchvision reads
them, bad files are one line before anything is written, the train workload runs both data paths on a slice of
them with 1-channel models, and the flip follows the data set.

Needs Debian's dataset-fashion-mnist (the official .gz files under /usr/share/datasets/fashion-mnist/; `.ci/run`
and the README's test command install it): without it these tests are skipped with that reason.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from hpml.conf.schema import config_from_dict
from hpml.contract.idx_data import FASHION_MNIST, IDX_FILES, MNIST, idx_problem
from hpml.dataprep import idx_sets
from hpml.dataprep.cli import main as data_main
from tests.conftest import run_hpml

SOURCE = Path(FASHION_MNIST.default_from)
GZ = [f"{name}.gz" for name in IDX_FILES]
pytestmark = pytest.mark.skipif(
    not all((SOURCE / name).is_file() for name in GZ),
    reason=f"Fashion-MNIST's files are not in {SOURCE}: install Debian's dataset-fashion-mnist "
           "(apt-get install dataset-fashion-mnist), as .ci/run does")


@pytest.fixture(scope="module")
def laid_out(tmp_path_factory) -> Path:
    """`hpml data fashion-mnist --root R --ood O` run once: R/FashionMNIST/raw/ and the rotated copy O."""
    base = tmp_path_factory.mktemp("fashion")
    assert data_main(["fashion-mnist", "--root", str(base / "root"), "--ood", str(base / "ood")]) == 0
    return base


def source_copy(tmp_path: Path) -> Path:
    """A --from folder of links to the real files (a link to a regular file is read as the file)."""
    folder = tmp_path / "from"
    folder.mkdir()
    for name in GZ:
        (folder / name).symlink_to(SOURCE / name)
    return folder


def refused(capsys, argv) -> str:
    try:
        code = data_main(argv)
    except SystemExit as exit_:  # argparse's own refusals (a missing option)
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("hpml: error: ") and err.count("\n") == 1, err  # one line, no traceback
    return err


# --- the files and their checksums ------------------------------------------------------------------------------

def test_the_laid_out_files_are_what_torchvision_reads(laid_out):
    from torchvision.datasets import FashionMNIST

    root = laid_out / "root"
    assert sorted(p.name for p in (root / "FashionMNIST" / "raw").iterdir()) == sorted(IDX_FILES)
    train, test = FashionMNIST(str(root), train=True), FashionMNIST(str(root), train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert tuple(train.data.shape[1:]) == (28, 28) and train.classes[0] == "T-shirt/top"
    assert train.targets.bincount().tolist() == [6000] * 10 and test.targets.bincount().tolist() == [1000] * 10
    assert idx_problem(str(root), FASHION_MNIST) is None


def test_every_file_has_torchvisions_published_md5_once_its_official_gzip_header_is_restored():
    """Debian's .gz files carry the official deflate streams under a rewritten header: their own MD5s differ, and
    the header hpml restores gives exactly the MD5s torchvision publishes (a check that fails for any other byte)."""
    from torchvision.datasets import FashionMNIST

    published = dict(FashionMNIST.resources)
    assert idx_sets.published_md5s(FASHION_MNIST) == published
    for name in GZ:
        path = SOURCE / name
        ok, own = idx_sets.matches_published(path, FASHION_MNIST, published[name])
        assert ok, name
        if own != published[name]:  # the rewritten header: only the restored one matches
            assert idx_sets.md5_of(path, idx_sets.official_header(path, FASHION_MNIST)) == published[name]


def test_the_normalization_constants_are_the_training_images_mean_and_std(laid_out):
    import numpy as np

    raw = laid_out / "root" / "FashionMNIST" / "raw" / "train-images-idx3-ubyte"
    pixels = np.frombuffer(raw.read_bytes()[16:], dtype=np.uint8).astype(np.float64) / 255
    assert pixels.mean() == pytest.approx(FASHION_MNIST.mean, abs=5e-5)  # 0.28604
    assert pixels.std() == pytest.approx(FASHION_MNIST.std, abs=5e-5)  # 0.35302


def test_the_ood_copy_is_the_first_100_test_images_of_each_class_rotated(laid_out):
    from PIL import Image
    from torchvision.datasets import FashionMNIST

    ood = laid_out / "ood"
    assert sorted(p.name for p in ood.iterdir())[-2:] == ["T-shirt-top", "Trouser"]  # "/" is no folder name
    assert all(len(list(folder.iterdir())) == 100 for folder in ood.iterdir())
    test = FashionMNIST(str(laid_out / "root"), train=False)
    first_bag = int((test.targets == 8).nonzero()[0])
    written = Image.open(ood / "Bag" / f"t10k_{first_bag:05d}.png")
    expected = Image.fromarray(test.data[first_bag].numpy(), mode="L").rotate(
        idx_sets.OOD_ROTATION_DEG, resample=Image.Resampling.BILINEAR, fillcolor=0)
    assert written.mode == "L" and written.tobytes() == expected.tobytes()


# --- bad input: one line, nothing written -------------------------------------------------------------------------

def damaged_gz(path: Path, change) -> None:
    """Rewrites the .gz at path with change(bytes) applied to its content (a valid gzip of other content)."""
    content = gzip.decompress(path.read_bytes())
    path.unlink()
    path.write_bytes(gzip.compress(change(content)))


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / GZ[1]).unlink(), "train-labels-idx1-ubyte.gz is missing"),
    (lambda f: (f / GZ[0]).unlink() or (f / GZ[0]).write_bytes((SOURCE / GZ[0]).read_bytes()[:100_000]),
     "train-images-idx3-ubyte.gz: truncated (the gzip stream ends early)"),
    (lambda f: (f / GZ[3]).unlink() or os.mkfifo(f / GZ[3]), "t10k-labels-idx1-ubyte.gz: not a regular file"),
    (lambda f: (f / GZ[1]).unlink() or (f / GZ[1]).symlink_to(f / "nowhere"),
     "train-labels-idx1-ubyte.gz is a broken link"),
    (lambda f: damaged_gz(f / GZ[1], lambda b: b[:8] + bytes([b[8] ^ 1]) + b[9:]),
     "train-labels-idx1-ubyte.gz: MD5 "),  # one label changed: a valid file, not the official one
    (lambda f: damaged_gz(f / GZ[3], lambda b: b[:8] + bytes([10]) + b[9:]),
     "t10k-labels-idx1-ubyte.gz: t10k-labels-idx1-ubyte: label 10 is not one of the 10 classes"),
    (lambda f: damaged_gz(f / GZ[1], lambda b: b[:-1]), "train-labels-idx1-ubyte: truncated (59,999 of its 60,000"),
    (lambda f: damaged_gz(f / GZ[1], lambda b: b[:4] + (7).to_bytes(4, "big") + b[8:]),
     "train-labels-idx1-ubyte: its header says 7, not 60000"),
])
def test_a_bad_source_file_is_one_line_and_nothing_is_written(tmp_path, capsys, damage, message):
    folder = source_copy(tmp_path)
    damage(folder)
    err = refused(capsys, ["fashion-mnist", "--root", str(tmp_path / "root"), "--from", str(folder)])
    assert message in err
    assert not (tmp_path / "root").exists()


def test_a_from_that_is_no_folder_and_a_root_that_is_a_file_are_one_line(tmp_path, capsys):
    assert "--from /nonexistent/x: no such folder" in refused(
        capsys, ["fashion-mnist", "--root", str(tmp_path / "r"), "--from", "/nonexistent/x"])
    (tmp_path / "file").write_text("")
    assert "not a folder" in refused(capsys, ["fashion-mnist", "--root", str(tmp_path / "r"),
                                              "--from", str(tmp_path / "file")])
    assert "exists and is not a folder" in refused(capsys, ["fashion-mnist", "--root", str(tmp_path / "file")])
    assert "--root='' is not allowed" in refused(capsys, ["fashion-mnist", "--root", ""])
    assert "the following arguments are required: --from" in refused(capsys, ["mnist", "--root", str(tmp_path)])


def test_a_root_that_holds_the_files_is_refused_without_force(laid_out, capsys):
    err = refused(capsys, ["fashion-mnist", "--root", str(laid_out / "root")])
    assert "FashionMNIST/raw is not empty" in err and "--force" in err


@pytest.mark.parametrize("name, cut, message", [
    ("train-images-idx3-ubyte", 1, "train-images-idx3-ubyte: truncated (47,039,999 bytes of values, not 47,040,000)"),
    ("t10k-labels-idx1-ubyte", 0, "t10k-labels-idx1-ubyte: label 200 is not one of the 10 classes"),
])
def test_the_preflight_names_a_damaged_laid_out_file(laid_out, tmp_path, name, cut, message):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for other in IDX_FILES:
        (raw / other).symlink_to(laid_out / "root" / "FashionMNIST" / "raw" / other)
    (raw / name).unlink()
    content = (laid_out / "root" / "FashionMNIST" / "raw" / name).read_bytes()
    (raw / name).write_bytes(content[:len(content) - cut] if cut else content[:8] + bytes([200]) + content[9:])
    problem = idx_problem(str(tmp_path), FASHION_MNIST)
    assert problem is not None and message in problem and "\n" not in problem


# --- the train workload: 1 channel, padding, the flip, the preflights ---------------------------------------------

def train_config(compose_values, *overrides):
    return config_from_dict(compose_values(["experiment=tta_fashion_mnist", *overrides])).workload


def test_the_flip_follows_the_data_set(compose_values, laid_out, tmp_path):
    """Fashion-MNIST's clothes are flipped, MNIST's digits never (the same files laid out as MNIST stand in for
    MNIST's: torchvision reads them alike), on both paths."""
    import torchvision.transforms as T

    from hpml.workloads.train.data import build_dataset
    from hpml.workloads.train.device_data import augment_spec

    (tmp_path / "MNIST").symlink_to(laid_out / "root" / "FashionMNIST")
    fashion = train_config(compose_values, f"workload.data_root={laid_out / 'root'}")
    mnist = train_config(compose_values, "workload.dataset=mnist", f"workload.data_root={tmp_path}")
    assert fashion.flip and augment_spec(fashion).flip
    assert not mnist.flip and not augment_spec(mnist).flip
    for cfg, flipped in ((fashion, True), (mnist, False)):
        transforms = build_dataset(cfg, seed=0).transform.transforms
        assert any(isinstance(t, T.RandomHorizontalFlip) for t in transforms) == flipped
        assert any(isinstance(t, T.RandomCrop) for t in transforms)


@pytest.mark.parametrize("model, stem, padding", [("resnet18", True, 0), ("cifar_resnet20", False, 2),
                                                  ("hpml_cnn", False, 0), ("vgg11", False, 0)])
def test_models_take_one_channel_and_a_cifar_resnet_gets_the_images_padded_to_32(compose_values, model, stem,
                                                                                  padding):
    import torch

    from hpml.models.build import build_classifier

    cfg = train_config(compose_values, f"workload.model={model}", f"workload.cifar_stem={stem}")
    assert (cfg.input_channels, cfg.fit_padding, cfg.model_side) == (1, padding, 28 + 2 * padding)
    built = build_classifier(model, 10, cifar_stem=stem, in_channels=1)
    first = next(m for m in built.modules() if isinstance(m, torch.nn.Conv2d))
    assert first.in_channels == 1
    if model != "vgg11":  # VGG's five pools need 32 or more; its meta forward says so at launch
        assert built.eval()(torch.zeros(2, 1, cfg.model_side, cfg.model_side)).shape == (2, 10)


def test_the_preflight_uses_the_data_sets_real_sizes(compose_values, laid_out):
    from hpml.conf.validation import ConfigValueError

    cfg = train_config(compose_values, f"workload.data_root={laid_out / 'root'}")
    assert cfg.preflight_problems() == []
    missing = train_config(compose_values, "workload.data_root=/nonexistent").preflight_problems()
    assert len(missing) == 1 and "hpml data fashion-mnist --root /nonexistent" in missing[0]
    with pytest.raises(ConfigValueError, match="more than the 100 training samples"):
        config_from_dict(compose_values(["experiment=tta_fashion_mnist", f"workload.data_root={laid_out / 'root'}",
                                         "workload.max_samples=100"]))
    with pytest.raises(ConfigValueError, match="workload.image_size=32 is not allowed: 28 when"):
        train_config(compose_values, "workload.image_size=32")


def test_both_data_paths_train_on_the_real_files_and_say_what_the_model_was_fed(laid_out, tmp_path):
    """The preset on a slice (256 samples of each split), CIFAR ResNet-8 (padded to 32) on the device path and
    hpml_cnn (as stored) in the DataLoader's workers; then the kept models scored on the rotated copy, both by one
    `hpml evaluate` of the folder holding the two sweeps (one process start fewer than one evaluate a sweep)."""
    common = ["experiment=tta_fashion_mnist", f"workload.data_root={laid_out / 'root'}", "workload.max_samples=256",
              "workload.batch_size=64", "workload.epochs=2", "workload.lr_decay_epochs=2", "workload.precision=fp32",
              "workload.channels_last=false", "workload.cifar_stem=false", "sweep.seed=0"]
    runs = {"device": ["workload.model=cifar_resnet8", "workload.data_placement=device"],
            "host": ["workload.model=hpml_cnn", "workload.data_placement=host", "workload.loader_workers=1"]}
    inputs = {}
    for name, overrides in runs.items():
        done = run_hpml(["launch", *common, *overrides], cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads((tmp_path / "sweeps" / "latest" / "points" / "0" / "result.json").read_text())
        assert result["status"] == "ok" and result["measurements"]["data_placement"] == name
        inputs[name] = result["measurements"]["input"]
        assert "first 256 samples" in result["measurements"]["dataset_note"]
        assert len(result["measurements"]["evaluation"]["top1"]) == 2
    scored = run_hpml(["evaluate", "sweeps", "--images", str(laid_out / "ood")], cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr[-2000:]
    for model in ("cifar_resnet8", "hpml_cnn"):  # each kept model scored once, on all 1,000 rotated images
        (row,) = [line for line in scored.stdout.splitlines() if f"| {model} (1 channel) |" in line]
        assert "| 1000 |" in row, scored.stdout
    assert inputs["device"] == {"channels": 1, "size": 32, "data_size": 28, "padding": 2, "flip": True,
                                "how": "zero-padded 2 px on each side (28x28 -> 32x32: cifar_resnet8 was designed "
                                       "for 32x32)"}
    assert inputs["host"] == {"channels": 1, "size": 28, "data_size": 28, "padding": 0, "flip": True,
                              "how": "as stored"}


def test_mnist_needs_its_own_files(compose_values):
    problems = train_config(compose_values, "workload.dataset=mnist", "workload.data_root=/nonexistent",
                            ).preflight_problems()
    assert len(problems) == 1 and "MNIST/raw/ lacks" in problems[0] and "hpml data mnist" in problems[0]
    assert MNIST.flip is False and FASHION_MNIST.flip is True


def test_a_copy_left_behind_is_refused_by_the_preflight_not_by_a_worker(laid_out, tmp_path):
    shutil.copytree(laid_out / "root", tmp_path / "root", symlinks=True)
    (tmp_path / "root" / "FashionMNIST" / "raw" / "t10k-images-idx3-ubyte").unlink()
    assert "FashionMNIST/raw/ lacks t10k-images-idx3-ubyte" in idx_problem(str(tmp_path / "root"), FASHION_MNIST)


def test_quantize_reads_one_channel_padded_to_the_cnns_32x32(compose_values, laid_out):
    """The quantize workload's data and float model on Fashion-MNIST: 1 channel, zero-padded by 2 for hw5_cnn (its
    400-input layer), the data set's normalization; hpml_cnn takes 28x28 as it is."""
    import torch

    from hpml.workloads.quantize.data import _idx, idx_padding
    from hpml.workloads.quantize.float_model import untrained

    cfg = config_from_dict(compose_values(["experiment=quantization_fashion_mnist",
                                           f"workload.data_root={laid_out / 'root'}"])).workload
    assert cfg.preflight_problems() == []
    images, labels, classes = _idx(cfg, train=False)
    assert tuple(images.shape) == (10000, 1, 28, 28) and len(classes) == 10 and labels.bincount().tolist() == [1000] * 10
    fm = untrained(cfg, seed=0)
    assert (fm.padding, fm.mean, fm.std) == (2, [FASHION_MNIST.mean], [FASHION_MNIST.std]) == \
        (idx_padding(cfg), [0.2860], [0.3530])
    assert fm.model(torch.zeros(3, 1, 32, 32)).shape == (3, 10)
    small = config_from_dict(compose_values(["experiment=quantization_fashion_mnist", "workload.model=hpml_cnn",
                                             f"workload.data_root={laid_out / 'root'}"])).workload
    assert untrained(small, seed=0).padding == 0


def test_the_dataloader_study_runs_on_the_real_files(laid_out, tmp_path):
    done = run_hpml(["launch", "experiment=tiny/dataloader", "workload.dataset=fashion_mnist",
                     f"workload.data_root={laid_out / 'root'}", "workload.image_size=28",
                     "workload.data_placement=device", "workload.loader_workers=0"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "sweeps" / "latest" / "points" / "0" / "result.json").read_text())
    measured = result["measurements"]
    assert result["status"] == "ok" and measured["dataset"] == "fashion_mnist"
    # the whole training split, in full batches of 256 (the last partial one dropped): 234 x 256 of 60,000
    assert (measured["dataset_samples"], measured["steps_per_epoch"], measured["samples_per_epoch"]) == \
        (60000, 234, 59904)


@pytest.mark.parametrize("model, side", [("resnet18", 28), ("cifar_resnet20", 32)])
def test_the_step_memory_preflight_counts_one_channel_at_the_side_the_model_takes(compose_values, laid_out, model,
                                                                                  side):
    """Inputs: 512 bf16 images of 1 x side x side; the resident training split: 60,000 uint8 images of that side
    (padded once where the model needs 32) and their int64 labels."""
    from hpml.conf.train_memory import step_memory
    from hpml.conf.workload.train_data import on_disk

    cfg = train_config(compose_values, f"workload.data_root={laid_out / 'root'}", f"workload.model={model}")
    counted = step_memory(cfg, 512, on_disk(cfg))
    assert counted.inputs == 512 * 1 * side * side * 2
    assert counted.data == 60000 * (side * side + 8)
