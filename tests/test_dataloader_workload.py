"""The dataloader workload on real files, on the CPU: train's reader and transforms over the digits as CIFAR-10
batches and as JPEGs, the DataLoader built with the point's options (PyTorch's prefetch default resolved), the
device path, the epoch clock; then the CPU preset end to end through `hpml launch` and its report."""

from __future__ import annotations

import json
import time

import pytest
import torch
import torchvision.transforms as T

from hpml.analysis.report import build_report
from hpml.conf.schema import config_from_dict
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.dataloader.__main__ import measure
from hpml.workloads.dataloader.epochs import EpochLog, run_epoch
from hpml.workloads.dataloader.sources import device_epochs, host_loader
from tests.test_train_workload_parts import gloo_world_of_one  # noqa: F401 (a fixture)

CPU = torch.device("cpu")
CTX = DistContext(rank=0, local_rank=0, world_size=1, device=CPU, backend="gloo")
TRAIN = 1438  # the digits' training images; batches of 256 -> 5 full batches, 1280 samples per epoch


@pytest.fixture
def config(compose_values, digits_data):
    def _config(*overrides: str, data: str = "cifar"):
        return config_from_dict(compose_values(["experiment=dataloader_workers_cpu", "workload.loader_workers=0",
                                                f"workload.data_root={digits_data / data}", "workload.epochs=2",
                                                "workload.batch_size=256", *overrides])).workload
    return _config


def test_the_host_path_iterates_every_full_batch_of_real_cifar_files(config, gloo_world_of_one):  # noqa: F811
    result = measure(config(), CTX, seed=0)
    m = result["measurements"]
    assert (m["dataset_samples"], m["steps_per_epoch"], m["samples_per_epoch"]) == (TRAIN, 5, 1280)
    assert m["loader"] == {"num_workers": 0, "pin_memory": False, "persistent_workers": False, "prefetch_factor": None}
    assert len(m["epoch_time_s"]) == 2 and m["epoch_time_s_per_rank"] == [[t] for t in m["epoch_time_s"]]
    assert [len(steps) for steps in m["wait_s"]] == [5, 5] and m["cold_epochs"] == [0]
    assert all(0 < first <= t for [first], t in zip(m["first_batch_s_per_rank"], m["epoch_time_s"]))
    assert result["derived"]["epoch_time_mean_s"] == m["epoch_time_s"][1]  # one timed epoch: epoch 2
    assert result["derived"]["samples_per_s"] == pytest.approx(1280 / m["epoch_time_s"][1])


def test_the_loader_has_the_points_options_and_trains_transforms(config):
    loader, size = host_loader(config("workload.loader_workers=2", "workload.persistent_workers=true",
                                      "workload.prefetch_factor=4"), CTX, seed=0)
    assert (loader.num_workers, loader.persistent_workers, loader.prefetch_factor, size) == (2, True, 4, TRAIN)
    assert [type(t) for t in loader.dataset.transform.transforms] == [T.RandomCrop, T.RandomHorizontalFlip,
                                                                      T.ToTensor, T.Normalize]
    pytorchs, _ = host_loader(config("workload.loader_workers=1"), CTX, seed=0)
    assert pytorchs.prefetch_factor == 2  # null: PyTorch's own default with workers
    images, labels = next(iter(pytorchs))
    assert images.shape == (256, 3, 32, 32) and images.dtype == torch.float32
    assert labels.min() >= 0 and labels.max() <= 9 and -3 < images.min() < 0 < images.max() < 3  # normalized


def test_the_jpeg_folder_goes_through_imagefolder(config, gloo_world_of_one):  # noqa: F811
    cfg = config("workload.dataset=image_folder", "workload.loader_workers=1", data="jpeg")
    loader, size = host_loader(cfg, CTX, seed=0)
    assert size == TRAIN and loader.dataset.classes == [str(d) for d in range(10)]
    assert [type(t) for t in loader.dataset.transform.transforms][0] == T.RandomResizedCrop
    m = measure(cfg, CTX, seed=0)["measurements"]
    assert (m["dataset"], m["samples_per_epoch"], m["loader"]["prefetch_factor"]) == ("image_folder", 1280, 2)


def test_the_device_path_decodes_once_and_slices(config, gloo_world_of_one):  # noqa: F811
    cfg = config("workload.data_placement=device")
    batches, size = device_epochs(cfg, CTX, seed=0)
    images, labels = next(iter(batches))
    assert (size, len(batches)) == (TRAIN, 5) and images.shape == (256, 3, 32, 32) and images.dtype == torch.float32
    m = measure(cfg, CTX, seed=0)["measurements"]
    assert (m["loader"], m["data_placement"], m["samples_per_epoch"]) == (None, "device", 1280)


def test_an_epoch_is_timed_from_its_start_through_every_batch():
    def slow_batches():
        for _ in range(3):
            time.sleep(0.05)
            yield torch.zeros(2, 3), torch.zeros(2)

    log = EpochLog()
    assert run_epoch(slow_batches(), CPU, log) == 3
    assert log.epoch_s[0] >= 0.15 and 0.05 <= log.first_batch_s[0] < log.epoch_s[0]
    assert len(log.wait_s[0]) == 3 and all(w >= 0.05 for w in log.wait_s[0])
    assert sum(log.wait_s[0]) <= log.epoch_s[0]


def test_the_cpu_preset_end_to_end_through_hpml_launch(hpml, tmp_path, digits_data):
    done = hpml("launch", "experiment=dataloader_workers_cpu", f"workload.data_root={digits_data / 'cifar'}",
                "workload.loader_workers=0,1", "workload.epochs=2", "workload.batch_size=256", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = (tmp_path / "sweeps" / "latest").resolve()
    docs = [json.loads((point_dir(sweep, p) / RESULT_FILE).read_text()) for p in (0, 1)]
    assert [d["measurements"]["loader"]["num_workers"] for d in docs] == [0, 1]
    assert all(d["status"] == "ok" and d["measurements"]["samples_per_epoch"] == 1280 for d in docs)
    report = build_report(sweep)
    [section] = [s for s in report.sections if "data loader" in s.title]
    frame = section.tables[0].frame
    assert list(frame["workers"]) == [0, 1] and list(frame["default"]) == [True, False]
    timed = [d["measurements"]["epoch_time_s"][1] for d in docs]
    assert list(frame["speedup_vs_default"]) == pytest.approx([1.0, timed[0] / timed[1]])
    assert "Is the default optimal?" in section.after
