"""An image folder (DATA_ROOT/train/<class>/<image>, val/) whose files cannot be read as images: refused in one line
before anything is written, for train (host and device paths) and the dataloader workload (conf/data_on_disk.py
reads every image file's header, a seeded sample above HEADER_CHECK_LIMIT a split); a file that still fails to
decode in the worker (changed after the launch, or cut after an intact header) ends the point with one line naming
the file (workloads/train/image_files.py), recorded as the point's failure reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from hpml.conf import data_on_disk
from hpml.conf.schema import config_from_dict
from hpml.launcher.preflight import config_problems
from hpml.workloads.common.worker import one_line_reason
from hpml.workloads.train.image_files import UnreadableImage

CLASSES, PER_CLASS = ("a", "b"), 6


def write_folder(root: Path) -> Path:
    """train/ and val/ with PER_CLASS 32x32 JPEGs in each of CLASSES (what `hpml data digits --jpeg-folder` writes)."""
    for split in ("train", "val"):
        for cls in CLASSES:
            (root / split / cls).mkdir(parents=True)
            for i in range(PER_CLASS):
                pixels = np.random.default_rng(i).integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / cls / f"{i}.jpg", quality=90)
    return root


def cut(path: Path, keep: int) -> Path:
    path.write_bytes(path.read_bytes()[:keep])
    return path


def cut_in_its_pixels(path: Path) -> Path:
    """A JPEG whose header is whole (Image.open succeeds) and whose pixel data ends early (decoding fails)."""
    return cut(path, len(path.read_bytes()) // 2)


# each damage: (what it does to train/, returning the damaged path; the reason the preflight gives; image files
# train/ then holds: a new file is one more)
DAMAGES = {
    "header cut short": (lambda train: cut(train / "a" / "2.jpg", 20), "not an image PIL can identify", 12),
    "header cut in its tables": (lambda train: cut(train / "a" / "2.jpg", 300),
                                 "a damaged or cut header (OSError: Truncated File Read)", 12),
    "text named .jpg": (lambda train: _written(train / "b" / "notes.jpg", b"not an image\n"),
                        "not an image PIL can identify", 13),
    "zero-byte .png": (lambda train: _written(train / "b" / "empty.png", b""), "zero bytes", 13),
    "broken link": (lambda train: _linked(train / "a" / "gone.jpg", train / "nowhere.jpg"), "a broken link", 13),
    "FIFO named .jpg": (lambda train: _fifo(train / "b" / "pipe.jpg"), "not a regular file", 13),
    "no read permission": (lambda train: _unreadable(train / "a" / "1.jpg"), "cannot be read (Permission denied)",
                           12),
}


def _written(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def _linked(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _unreadable(path: Path) -> Path:
    if os.geteuid() == 0:
        pytest.skip("root reads a file without read permission")
    path.chmod(0)
    return path


def train_overrides(root: Path, *more: str):
    return ["experiment=tiny/train", "workload.dataset=image_folder", f"workload.data_root={root}",
            "workload.num_classes=2", "workload.batch_size=4", *more]


def dataloader_overrides(root: Path, *more: str):
    return ["experiment=tiny/dataloader", "workload.dataset=image_folder", f"workload.data_root={root}",
            "workload.image_size=32", "workload.batch_size=4", *more]


WORKLOADS = {
    "train host": pytest.param(lambda root: train_overrides(root), id="train-host"),
    "train device": pytest.param(lambda root: train_overrides(root, "workload.data_placement=device"),
                                 id="train-device"),
    "dataloader": pytest.param(lambda root: dataloader_overrides(root), id="dataloader"),
    "dataloader device": pytest.param(
        lambda root: dataloader_overrides(root, "workload.data_placement=device", "workload.loader_workers=0"),
        id="dataloader-device"),
}


def problems(compose_values, overrides):
    return config_problems([config_from_dict(compose_values(overrides))])


def refusal(root: Path, path: Path, reason: str, files: int = 2 * PER_CLASS) -> str:
    return (f"workload.data_root={root}: 1 of the {files} image files under train/ cannot be read as images "
            f"({path}: {reason}); replace or remove them")


@pytest.mark.parametrize("overrides", [pytest.param(param.values[0], id=param.id) for param in WORKLOADS.values()])
def test_a_healthy_folder_passes(compose_values, tmp_path, overrides):
    assert problems(compose_values, overrides(write_folder(tmp_path / "data"))) == []


@pytest.mark.parametrize("overrides", WORKLOADS.values())
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_file_that_is_no_image_is_one_line_before_launch(compose_values, tmp_path, overrides, damage):
    root = write_folder(tmp_path / "data")
    make, reason, files = DAMAGES[damage]
    path = make(root / "train")
    assert problems(compose_values, overrides(root)) == [refusal(root, path, reason, files)]


@pytest.mark.parametrize("overrides", [
    pytest.param(lambda root: train_overrides(root, "workload.num_classes=3"), id="train"),
    pytest.param(dataloader_overrides, id="dataloader")])
def test_a_class_folder_without_images_is_one_line_before_launch(compose_values, tmp_path, overrides):
    root = write_folder(tmp_path / "data")
    (root / "train" / "c").mkdir()
    (root / "train" / "c" / "readme.txt").write_text("no images here")
    assert problems(compose_values, overrides(root)) == [
        f"workload.data_root={root}: {root}/train/c holds no image file (ImageFolder takes .jpg .jpeg .png .ppm .bmp "
        ".pgm .tif .tiff .webp and refuses an empty class); add images or remove the folder"]


def test_train_checks_val_only_when_it_evaluates(compose_values, tmp_path):
    root = write_folder(tmp_path / "data")
    path = _written(root / "val" / "a" / "notes.jpg", b"text")
    assert problems(compose_values, train_overrides(root)) == []
    assert problems(compose_values, train_overrides(root, "workload.eval_every=1")) == [
        f"workload.data_root={root}: 1 of the {2 * PER_CLASS + 1} image files under val/ cannot be read as images "
        f"({path}: not an image PIL can identify); replace or remove them"]


def test_several_bad_files_name_the_first_two_and_count_the_rest(tmp_path):
    root = write_folder(tmp_path / "data")
    bad = [_written(root / "train" / "a" / f"x{i}.png", b"") for i in range(4)]
    assert data_on_disk.unreadable_image_folder("workload.data_root", str(root)) == (
        f"workload.data_root={root}: 4 of the {2 * PER_CLASS + 4} image files under train/ cannot be read as images "
        f"({bad[0]}: zero bytes; {bad[1]}: zero bytes; 2 more); replace or remove them")


def test_a_split_without_class_folders_is_one_line(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "0.jpg").write_bytes(b"")
    assert data_on_disk.unreadable_image_folder("workload.data_root", str(tmp_path)) == (
        f"workload.data_root={tmp_path}: train/ holds no class folders (ImageFolder reads train/<class>/<image>)")


def test_a_large_folder_is_checked_on_a_seeded_sample_and_read_once_per_listing(tmp_path, monkeypatch):
    root = write_folder(tmp_path / "data")
    opened = []

    def counted(path):
        opened.append(path)
        return None

    monkeypatch.setattr(data_on_disk, "HEADER_CHECK_LIMIT", 5)
    monkeypatch.setattr(data_on_disk, "image_header_problem", counted)
    assert data_on_disk.unreadable_image_folder("k", str(root)) is None
    assert len(opened) == 5 and opened == sorted(opened)  # a sample of 5 of the 12, in listing order
    first = list(opened)
    assert data_on_disk.unreadable_image_folder("k", str(root)) is None and len(opened) == 5  # cached
    data_on_disk._split_problem.cache_clear()
    data_on_disk.unreadable_image_folder("k", str(root))
    assert opened[5:] == first  # the same sample at the next launch
    _written(root / "train" / "b" / "new.jpg", b"")  # a file added: its class folder's time changed
    data_on_disk.unreadable_image_folder("k", str(root))
    assert len(opened) == 15


def test_the_launch_writes_no_sweep_folder(hpml, tmp_path):
    root = write_folder(tmp_path / "data")
    path = _written(root / "train" / "b" / "notes.jpg", b"text")
    done = hpml("launch", *dataloader_overrides(root))
    assert done.returncode == 2 and not (tmp_path / "sweeps").exists()
    assert done.stderr.strip() == "hpml: error: " + refusal(root, path, "not an image PIL can identify", 13)


@pytest.mark.parametrize("placement", ["host", "device"])
def test_the_train_launch_writes_no_sweep_folder(hpml, tmp_path, placement):
    root = write_folder(tmp_path / "data")
    path = cut(root / "train" / "a" / "0.jpg", 20)
    done = hpml("launch", *train_overrides(root, f"workload.data_placement={placement}"))
    assert done.returncode == 2 and not (tmp_path / "sweeps").exists()
    assert done.stderr.strip() == "hpml: error: " + refusal(root, path, "not an image PIL can identify")


# --- in the worker: a file the preflight passed (or did not see) that fails to decode ---------------------------

def worker_failure(path: Path) -> str:
    return (f"UnreadableImage: {path}: cannot be decoded as an image (OSError: image file is truncated (")


@pytest.fixture
def damaged_after_launch(compose_values, tmp_path):
    """(config of `overrides`, the damaged file): the preflight passed a healthy folder, then one JPEG's pixel data
    was cut (a header cut as well would not be seen: the launch's answer is cached for the folder's listing)."""
    def _damaged(overrides, split: str = "train"):
        root = write_folder(tmp_path / "data")
        cfg = config_from_dict(compose_values(overrides(root)))
        assert config_problems([cfg]) == []
        return cfg.workload, cut_in_its_pixels(root / split / "b" / "4.jpg")
    return _damaged


def assert_one_line_naming(error: BaseException, path: Path) -> None:
    assert isinstance(error, UnreadableImage) and "\n" not in str(error)
    assert one_line_reason(error).startswith(worker_failure(path))  # result.json's reason


@pytest.mark.parametrize("loader_workers", [0, 1])
def test_the_train_host_path_names_the_file(damaged_after_launch, loader_workers):
    from hpml.workloads.train.data import build_dataset

    cfg, path = damaged_after_launch(train_overrides)
    loader = DataLoader(build_dataset(cfg, seed=0), batch_size=4, num_workers=loader_workers)
    with pytest.raises(UnreadableImage) as failed:
        list(loader)
    assert_one_line_naming(failed.value, path)


def test_the_train_held_out_split_names_the_file(damaged_after_launch):
    from hpml.workloads.train.evaluation import held_out_dataset

    cfg, path = damaged_after_launch(lambda root: train_overrides(root, "workload.eval_every=1"), split="val")
    with pytest.raises(UnreadableImage) as failed:
        list(DataLoader(held_out_dataset(cfg), batch_size=4, num_workers=1))
    assert_one_line_naming(failed.value, path)


def test_the_train_device_path_names_the_file(damaged_after_launch):
    from hpml.workloads.train.device_data import decode_split

    cfg, path = damaged_after_launch(lambda root: train_overrides(root, "workload.data_placement=device"))
    with pytest.raises(UnreadableImage) as failed:
        decode_split(cfg, cfg.dataset, train=True)
    assert_one_line_naming(failed.value, path)


def test_the_dataloader_host_path_names_the_file(damaged_after_launch):
    from hpml.workloads.common.distributed import DistContext
    from hpml.workloads.dataloader.sources import host_loader

    cfg, path = damaged_after_launch(lambda root: dataloader_overrides(root, "workload.loader_workers=1"))
    ctx = DistContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"), backend="gloo")
    loader, _ = host_loader(cfg, ctx, seed=0)
    with pytest.raises(UnreadableImage) as failed:
        list(loader)
    assert_one_line_naming(failed.value, path)


def test_a_point_whose_file_fails_in_a_loader_worker_records_one_line(hpml, tmp_path):
    """End to end: the header is whole, so the launch goes ahead; a DataLoader worker process fails on the pixels,
    and the point's failure (result.json, state.json, the launcher's line) is the one line naming the file."""
    root = write_folder(tmp_path / "data")
    path = cut_in_its_pixels(root / "train" / "b" / "4.jpg")
    done = hpml("launch", *dataloader_overrides(root, "workload.loader_workers=1"))
    assert done.returncode != 0
    point = tmp_path / "sweeps" / "latest" / "points" / "0"
    result, state = (json.loads((point / name).read_text()) for name in ("result.json", "state.json"))
    assert result["status"] == state["state"] == "failed"
    assert result["reason"].startswith(worker_failure(path)) and state["reason"] == result["reason"]
    assert f"reason: {result['reason']}" in done.stdout + done.stderr


class _Broken(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int):
        raise KeyError(f"sample {index} has no label")


def test_any_error_out_of_a_dataloader_worker_process_is_reported_by_its_original_message():
    # torch re-raises it as "Caught KeyError in DataLoader worker process 0." + a traceback: no cause on line one
    with pytest.raises(KeyError) as failed:
        next(iter(DataLoader(_Broken(), num_workers=1)))
    assert str(failed.value).startswith("Caught KeyError in DataLoader worker process 0")
    assert one_line_reason(failed.value) == "KeyError: 'sample 0 has no label'"
