"""`hpml data digits --train-size N --jpeg-folder DIR` (dataprep/digits_loader_data.py): the training split repeated
to N images in real CIFAR-10 batches, and both splits as an ImageFolder of JPEGs, each read back through the reader
the data-loader study uses (torchvision's CIFAR10 via local_cifar10, torchvision's ImageFolder); refusals."""

from __future__ import annotations

import numpy as np
import pytest
from torchvision.datasets import ImageFolder

from hpml.dataprep.digits_cifar import DataError
from hpml.dataprep.digits_loader_data import repeated
from hpml.launcher.cli import main as hpml
from hpml.workloads.common.cifar10 import local_cifar10

TRAIN, TEST = 1438, 359


@pytest.fixture(scope="module")
def enlarged(tmp_path_factory):
    root = tmp_path_factory.mktemp("enlarged")
    assert hpml(["data", "digits", "--root", str(root / "cifar"), "--train-size", "3000",
                 "--jpeg-folder", str(root / "jpeg")]) == 0
    return root


def test_repetition_by_hand():
    positions, copies = repeated(np.array([7, 3, 5]), 8)  # position j is train[j mod 3], copy j // 3
    assert positions.tolist() == [7, 3, 5, 7, 3, 5, 7, 3]
    assert copies.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    with pytest.raises(DataError, match="--train-size must be at least 3"):
        repeated(np.array([7, 3, 5]), 2)


def test_the_enlarged_split_reads_back_as_cifar10(enlarged, digits_data):
    big = local_cifar10(str(enlarged / "cifar"), transform=None)
    once = local_cifar10(str(digits_data / "cifar"), transform=None)  # the default split, written once
    assert len(big) == 3000 and big.data.shape == (3000, 32, 32, 3)
    # the first 1438 are the default split in its order, then it starts again: image j is image j mod 1438
    assert np.array_equal(big.data[:TRAIN], once.data) and np.array_equal(big.data[TRAIN:2 * TRAIN], once.data)
    assert np.array_equal(big.data[2 * TRAIN:], once.data[:3000 - 2 * TRAIN])
    assert big.targets == (once.targets * 3)[:3000]
    test = type(big)(str(enlarged / "cifar"), train=False)
    assert len(test) == TEST  # the test split is never enlarged


def test_the_jpeg_folder_reads_back_through_imagefolder(enlarged, digits_data):
    train, val = ImageFolder(str(enlarged / "jpeg" / "train")), ImageFolder(str(enlarged / "jpeg" / "val"))
    assert train.classes == val.classes == [str(d) for d in range(10)]
    assert (len(train), len(val)) == (3000, TEST)
    big = local_cifar10(str(enlarged / "cifar"), transform=None)
    assert sorted(train.targets) == sorted(big.targets)  # the same images, per class, as the CIFAR batches
    names = sorted(path.rsplit("/", 1)[-1] for path, _ in train.samples)
    # copy 0 keeps the default name; 1,438 second copies; 3000 - 2 x 1438 = 124 third copies
    assert [sum(f"_copy{k}." in n for n in names) for k in (1, 2, 3)] == [TRAIN, 124, 0]
    image, label = train[0]
    assert image.mode == "RGB" and image.size == (32, 32)
    # JPEG is lossy: the same digit read back from its JPEG and from its batch differs by a few levels at most
    path = train.samples[0][0]
    index = int(path.rsplit("digit_", 1)[1][:4])
    batch_row = [i for i, name in enumerate(_filenames(enlarged)) if name == f"digit_{index:04d}.png"][0]
    difference = np.abs(np.asarray(image, dtype=np.int16) - big.data[batch_row].astype(np.int16))
    assert difference.mean() < 3 and np.percentile(difference, 99) < 40


def _filenames(root):
    import pickle

    names = []
    for i in range(1, 6):
        with open(root / "cifar" / "cifar-10-batches-py" / f"data_batch_{i}", "rb") as f:
            names += pickle.load(f, encoding="latin1")["filenames"]
    return names


def test_the_command_says_it_is_repetition_and_refuses_bad_targets(tmp_path, capsys):
    assert hpml(["data", "digits", "--root", str(tmp_path / "a"), "--train-size", "100"]) == 2
    assert "--train-size must be at least 1438 (" in capsys.readouterr().err
    (tmp_path / "jpeg").mkdir()
    (tmp_path / "jpeg" / "mine.txt").write_text("keep")
    assert hpml(["data", "digits", "--root", str(tmp_path / "b"), "--jpeg-folder", str(tmp_path / "jpeg")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "jpeg is not empty" in err[0] and "--force" in err[0]
    assert not (tmp_path / "b" / "cifar-10-batches-py").exists()  # refused before anything was written
    assert hpml(["data", "digits", "--root", str(tmp_path / "c"), "--train-size", "2000"]) == 0
    out = capsys.readouterr().out
    assert "2000 training images: 400, 400, 400, 400, 400" in out
    assert "repeated to 2000 (1.4 copies each): it measures a data loader, not learning" in out


@pytest.mark.parametrize("size", ["1000001", "1000000000000"])
def test_a_training_split_past_a_million_images_is_one_line_before_anything_is_written(tmp_path, capsys, size):
    """--train-size 10**12 was a numpy ArrayMemoryError traceback; the bound (MAX_TRAIN_SIZE) is said with the
    lower one."""
    assert hpml(["data", "digits", "--root", str(tmp_path / "big"), "--train-size", size]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hpml: error: --train-size must be at least 1438 (the training split's size: it grows by "
                   f"repeating the images, never by dropping some) and at most 1000000 (20 times CIFAR-10's 50,000 "
                   f"images; 3 GB of batches), got {size}"]
    assert not (tmp_path / "big").exists()
