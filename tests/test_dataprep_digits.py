"""`hpml data digits` (dataprep/): scikit-learn's digits written as CIFAR-10 files are read by the same reader
as real CIFAR-10 (workloads.train.data.local_cifar10: torchvision's CIFAR10 with only its MD5 checks replaced),
with the counts, labels, pixel range and split the docstring of dataprep.digits_cifar promises; the
out-of-distribution folder's layout; a target that holds files is refused."""

import pickle
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sklearn.datasets import load_digits

from hpml.conf.data_on_disk import cifar10_on_disk
from hpml.dataprep.digits_cifar import draw_differently, stratified_split, upscale
from hpml.launcher.cli import main as hpml
from hpml.workloads.common.cifar10 import local_cifar10

CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]  # load_digits' classes 0..9
TEST_COUNTS = [36, 36, 35, 37, 36, 36, 36, 36, 35, 36]  # round(0.2 x count): 35.6, 36.4, 35.4, 36.6, ...


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    assert hpml(["data", "digits", "--root", str(root / "data"), "--ood", str(root / "ood"), "--seed", "0"]) == 0
    return root / "data", root / "ood"


def _index(filename):
    return int(filename.removeprefix("digit_").removesuffix(".png"))


def test_the_cifar_reader_reads_the_digits(written):
    root, _ = written
    assert cifar10_on_disk(str(root))  # the preflight's check: every file of torchvision's layout is there
    train = local_cifar10(str(root), transform=None)
    test = type(train)(str(root), train=False, download=False)  # the same reader class, the test batch
    assert train.classes == [str(d) for d in range(10)] and train.class_to_idx["7"] == 7
    assert (len(train), len(test)) == (1797 - sum(TEST_COUNTS), sum(TEST_COUNTS)) == (1438, 359)
    assert np.bincount(test.targets).tolist() == TEST_COUNTS
    assert np.bincount(train.targets).tolist() == [c - t for c, t in zip(CLASS_COUNTS, TEST_COUNTS)]
    assert train.data.shape == (1438, 32, 32, 3) and train.data.dtype == np.uint8
    assert (train.data.min(), train.data.max()) == (0, 255)
    assert (train.data[..., 0] == train.data[..., 1]).all() and (train.data[..., 1] == train.data[..., 2]).all()
    image, label = train[0]
    assert image.size == (32, 32) and image.mode == "RGB" and 0 <= label < 10


def _batch(root, name):
    with open(root / "cifar-10-batches-py" / name, "rb") as f:
        return pickle.load(f, encoding="latin1")  # as torchvision reads it


def test_each_image_is_its_digit_upscaled_and_the_split_is_disjoint(written):
    root, _ = written
    digits = load_digits()
    seen = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = _batch(root, name)
        for label, filename in zip(batch["labels"], batch["filenames"]):
            index = _index(filename)
            assert label == digits.target[index]
            seen.append(index)
        index = _index(batch["filenames"][0])  # R, G and B planes: the digit upscaled
        plane = upscale(digits.images[index]).reshape(-1)
        assert batch["data"][0].tolist() == np.concatenate([plane, plane, plane]).tolist()
    assert sorted(seen) == list(range(1797))  # every digit once: train and test disjoint
    assert [len(_batch(root, f"data_batch_{i}")["labels"]) for i in range(1, 6)] == [288, 288, 288, 287, 287]


def test_upscaling_by_hand():
    step = np.zeros((8, 8))
    step[:, 4:] = 16  # left half 0, right half 16 (-> 255)
    # bilinear, output pixel j samples input x = (j + 0.5) / 4 - 0.5: 3.125 -> 0.125 x 255 = 31.9 -> 32, ...
    assert upscale(step)[5].tolist() == [0] * 14 + [32, 96, 159, 223] + [255] * 14
    assert (upscale(np.full((8, 8), 8.0)) == 128).all()  # 8 x 255 / 16 = 127.5 -> 128


def test_the_split_is_fixed_by_the_seed(written):
    root, _ = written
    labels = load_digits().target
    first, again, other = stratified_split(labels, 0), stratified_split(labels, 0), stratified_split(labels, 1)
    assert first.test.tolist() == again.test.tolist() and first.train.tolist() == again.train.tolist()
    assert sorted(first.test.tolist()) != sorted(other.test.tolist())
    test = type(local_cifar10(str(root), transform=None))(str(root), train=False)
    assert test.targets == labels[first.test].tolist()  # the written test batch is seed 0's, in its order


def test_the_out_of_distribution_folder(written):
    root, ood = written
    digits = load_digits()
    test_indices = [_index(name) for name in _batch(root, "test_batch")["filenames"]]
    assert sorted(p.name for p in ood.iterdir()) == [str(d) for d in range(10)]
    for digit in range(10):
        files = sorted((ood / str(digit)).iterdir())
        assert len(files) == 5 and all(f.suffix == ".png" for f in files)
        for f in files:
            index = _index(f.name)
            assert index in test_indices and digits.target[index] == digit  # held-out test digits, by class
            image = Image.open(f)
            assert image.mode == "L" and image.size == (32, 32)
            assert np.asarray(image).tolist() == draw_differently(upscale(digits.images[index])).tolist()


def test_drawn_differently_by_hand():
    white = np.full((32, 32), 255, dtype=np.uint8)
    out = draw_differently(white)
    # rotated 25 degrees, the square's corners fall outside it (black fill) and stay black after the 3x3
    # maximum filter; the centre stays white; the filter grows the white area
    assert out[0, 0] == 0 and out[31, 31] == 0 and out[16, 16] == 255
    rotated = np.asarray(Image.fromarray(white).rotate(25, resample=Image.Resampling.BILINEAR, fillcolor=0))
    assert (out == 255).sum() > (rotated == 255).sum()


def test_a_target_with_files_is_refused_unless_forced(tmp_path, capsys):
    (tmp_path / "data" / "cifar-10-batches-py").mkdir(parents=True)
    (tmp_path / "data" / "cifar-10-batches-py" / "mine.txt").write_text("keep")
    assert hpml(["data", "digits", "--root", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cifar-10-batches-py is not empty" in err[0] and "--force" in err[0]
    (tmp_path / "ood" / "3").mkdir(parents=True)
    (tmp_path / "ood" / "3" / "digit_9999.png").write_bytes(b"stale")
    assert hpml(["data", "digits", "--root", str(tmp_path / "fresh"), "--ood", str(tmp_path / "ood")]) == 2
    assert "ood is not empty" in capsys.readouterr().err
    assert not (tmp_path / "fresh" / "cifar-10-batches-py").exists()  # refused before writing anything
    (tmp_path / "a_file").write_text("")
    assert hpml(["data", "digits", "--root", str(tmp_path / "a_file")]) == 2
    assert "a_file exists and is not a folder" in capsys.readouterr().err

    assert hpml(["data", "digits", "--root", str(tmp_path / "data"), "--ood", str(tmp_path / "ood"), "--force"]) == 0
    out = capsys.readouterr().out
    assert "1438 training images: 288, 288, 288, 287, 287" in out and "test_batch (359 images)" in out
    assert "50 PNG images" in out
    assert (tmp_path / "data" / "cifar-10-batches-py" / "mine.txt").exists()  # only its own files overwritten
    assert not (tmp_path / "ood" / "3" / "digit_9999.png").exists()  # the OOD folder is exactly this set
    assert sum(1 for _ in (tmp_path / "ood").rglob("*.png")) == 50


@pytest.mark.parametrize("option", ["--root", "--ood", "--jpeg-folder"])
def test_an_empty_folder_option_is_refused_not_read_as_the_current_directory(tmp_path, capsys, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    given = {"--root": "data", option: ""}
    argv = ["data", "digits"] + [arg for pair in given.items() for arg in pair]
    assert hpml(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"hpml: error: {option}='' is not allowed: a folder path (give . for the current directory)"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("first, second, relation", [
    (("--root", "d"), ("--ood", "d"), "same"),
    (("--root", "d"), ("--ood", "d/ood"), "inside"),
    (("--root", "d/cifar"), ("--ood", "d"), "holding"),
    (("--root", "d"), ("--jpeg-folder", "d/./jpeg"), "inside"),
    (("--ood", "o"), ("--jpeg-folder", "o/../o"), "same"),
    (("--ood", "x/o"), ("--jpeg-folder", "x"), "holding"),
])
def test_output_folders_that_overlap_are_refused_before_anything_is_written(tmp_path, capsys, monkeypatch, first,
                                                                             second, relation):
    """The data set, the OOD images and the JPEGs each get a folder of their own: the same one, or one inside the
    other, would mix their files (the OOD folder's <digit>/ folders beside cifar-10-batches-py, ...)."""
    monkeypatch.chdir(tmp_path)
    given = dict([("--root", "r"), first, second])
    argv = ["data", "digits"] + [arg for pair in given.items() for arg in pair]
    assert hpml(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    shown = str(Path(second[1]))
    assert err == [f"hpml: error: {second[0]}={shown} is not allowed: a folder apart from {first[0]}={Path(first[1])} "
                   "(the same folder, or one inside the other, would mix their files); give each its own folder"]
    assert list(tmp_path.iterdir()) == []


def test_sibling_folders_whose_names_share_a_prefix_do_not_overlap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hpml(["data", "digits", "--root", "digits", "--ood", "digits_ood", "--jpeg-folder", "digits_jpeg"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits", "digits_jpeg", "digits_ood"]
