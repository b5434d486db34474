"""The real loading code (torchvision's CIFAR-10 and ImageFolder readers) on small data that the tests
write in the real on-disk formats; nothing is downloaded."""

from __future__ import annotations

import pickle

import numpy as np
import torch
from PIL import Image

from hpml.conf.schema import config_from_dict
from hpml.conf.workload.train_data import Dataset, data_problem
from hpml.workloads.train.data import build_dataset


def write_cifar10(root, per_batch: int = 20):
    """torchvision's cifar-10-python layout: pickled dicts of uint8 rows (3072 = 3x32x32) and labels
    (the original files were pickled by Python 2; read with latin1 their keys are str, as here)."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        batch = {"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                 "labels": rng.integers(0, 10, per_batch).tolist()}
        (folder / name).write_bytes(pickle.dumps(batch))
    meta = {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                            "truck"]}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta))
    return folder


def train_config(compose_values, *overrides):
    return config_from_dict(compose_values(list(overrides))).workload


def test_cifar10_is_read_from_a_local_root_in_torchvisions_format(tmp_path, compose_values):
    write_cifar10(tmp_path)
    cfg = train_config(compose_values, "workload.dataset=cifar10", f"workload.data_root={tmp_path}")
    assert cfg.dataset == Dataset.cifar10 and data_problem(cfg) is None
    dataset = build_dataset(cfg, seed=0)
    assert len(dataset) == 5 * 20  # the five training batches
    image, label = dataset[3]
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32
    assert 0 <= label < 10


def test_a_missing_cifar10_is_found_before_submission(tmp_path, compose_values):
    folder = write_cifar10(tmp_path)
    (folder / "data_batch_3").unlink()
    cfg = train_config(compose_values, "workload.dataset=cifar10", f"workload.data_root={tmp_path}")
    assert "lacks data_batch_3" in data_problem(cfg)


def test_image_folder_reads_class_subfolders(tmp_path, compose_values):
    for cls in ("cats", "dogs"):
        (tmp_path / "train" / cls).mkdir(parents=True)
        for i in range(3):
            pixels = np.random.default_rng(i).integers(0, 256, (40, 48, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "train" / cls / f"{i}.png")
    cfg = train_config(compose_values, "workload.dataset=image_folder", f"workload.data_root={tmp_path}",
                       "workload.image_size=32", "workload.num_classes=2", "workload.batch_size=4")
    dataset = build_dataset(cfg, seed=0)
    assert len(dataset) == 6 and dataset.classes == ["cats", "dogs"]
    image, label = dataset[5]
    assert image.shape == (3, 32, 32) and label == 1


def test_synthetic_data_is_deterministic_per_seed(compose_values):
    cfg = train_config(compose_values, "workload.synthetic_samples=300")
    a, b = build_dataset(cfg, seed=1), build_dataset(cfg, seed=1)
    assert len(a) == 300
    assert torch.equal(a[299][0], b[299][0]) and a[299][1] == b[299][1]
    assert not torch.equal(build_dataset(cfg, seed=2)[0][0], a[0][0])
