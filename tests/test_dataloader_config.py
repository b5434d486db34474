"""The dataloader workload's config: the presets compose, PyTorch's defaults are the workload's, and a bad value of
every key is refused in one line that names it, before anything runs (PyTorch's own refusals of prefetch_factor and
persistent_workers without workers included)."""

from __future__ import annotations

import pytest

from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.dataloader import DataloaderConfig, LoaderDataset
from hpml.conf.workload.train_choices import DataPlacement

CPU = ["experiment=dataloader_workers_cpu", "workload.data_root=/data/digits"]


def test_the_workload_defaults_are_pytorchs_dataloader_defaults(compose_values):
    import inspect

    from torch.utils.data import DataLoader

    cfg = config_from_dict(compose_values(["workload=dataloader", "workload.data_root=/d"])).workload
    torch_defaults = inspect.signature(DataLoader).parameters
    assert cfg.loader_workers == torch_defaults["num_workers"].default == 0
    assert cfg.pin_memory is torch_defaults["pin_memory"].default is False
    assert cfg.persistent_workers is torch_defaults["persistent_workers"].default is False
    assert cfg.prefetch_factor is torch_defaults["prefetch_factor"].default is None
    assert (cfg.dataset, cfg.data_placement, cfg.epochs) == (LoaderDataset.cifar10, DataPlacement.host, 4)


def test_the_presets_compose(compose_values):
    gpu = config_from_dict(compose_values(["experiment=dataloader_workers"]))
    assert isinstance(gpu.workload, DataloaderConfig) and gpu.resources.gpus_per_node == 1
    assert (gpu.resources.cpus_per_worker, gpu.workload.batch_size, gpu.workload.epochs) == (16, 256, 3)
    cpu = config_from_dict(compose_values(CPU + ["workload.loader_workers=2"]))
    assert (cpu.resources.gpus_per_node, cpu.resources.cpus_per_worker, cpu.workload.loader_workers) == (0, 2, 2)


@pytest.mark.parametrize("override, message", [
    ("workload.data_root=null", "workload.data_root=None is not allowed: a directory holding the data set"),
    ("workload.batch_size=0", "workload.batch_size=0 is not allowed: an integer >= 1"),
    ("workload.epochs=1", "workload.epochs=1 is not allowed: an integer >= 2 (epoch 1 is warm-up"),
    ("workload.image_size=64", "workload.image_size=64 is not allowed: 32 when workload.dataset=cifar10"),
    ("workload.crop_padding=-1", "workload.crop_padding=-1 is not allowed: an integer in [0, workload.image_size=32]"),
    ("workload.loader_workers=-1", "workload.loader_workers=-1 is not allowed: an integer >= 0"),
    ("workload.loader_workers=3", "workload.loader_workers=3 is not allowed: at most resources.cpus_per_worker=2"),
    ("workload.prefetch_factor=2", "workload.prefetch_factor=2 is not allowed: null when workload.loader_workers=0"),
    ("workload.persistent_workers=true",
     "workload.persistent_workers=True is not allowed: false when workload.loader_workers=0"),
    ("workload.pin_memory=true", "workload.pin_memory=True is not allowed: false when the workers run on the CPU"),
    ("workload.device_data_share=0", "workload.device_data_share=0.0 is not allowed: a fraction in (0, 1]"),
    ("workload.device_data_share=1.5", "workload.device_data_share=1.5 is not allowed: a fraction in (0, 1]"),
])
def test_bad_values_are_refused_naming_the_field(compose_values, override, message):
    with pytest.raises(ConfigValueError) as refused:
        config_from_dict(compose_values(CPU + ["workload.loader_workers=0", override]))
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("overrides, message", [
    (["workload.dataset=image_folder", "workload.image_size=4"], "workload.image_size=4 is not allowed: an integer >= 8"),
    (["workload.loader_workers=1", "workload.prefetch_factor=0"],
     "workload.prefetch_factor=0 is not allowed: null (PyTorch's default: 2 per worker) or an integer >= 1"),
    (["workload.data_placement=device", "workload.loader_workers=2"],
     "workload.loader_workers=2 is not allowed: 0 when workload.data_placement=device"),
    (["workload.data_placement=device", "workload.loader_workers=0", "workload.pin_memory=true"],
     "workload.pin_memory=True is not allowed: false when workload.data_placement=device"),
])
def test_combinations_are_refused_naming_the_field(compose_values, overrides, message):
    with pytest.raises(ConfigValueError) as refused:
        config_from_dict(compose_values(CPU + overrides))
    assert str(refused.value).startswith(message)


def test_the_gpu_preset_allows_pinned_memory_and_persistent_workers_with_workers(compose_values):
    cfg = config_from_dict(compose_values(["experiment=dataloader_workers", "workload.loader_workers=8",
                                           "workload.pin_memory=true", "workload.persistent_workers=true",
                                           "workload.prefetch_factor=4"])).workload
    assert (cfg.loader_workers, cfg.pin_memory, cfg.persistent_workers, cfg.prefetch_factor) == (8, True, True, 4)


def test_a_sweep_with_an_invalid_point_is_refused_before_anything_is_written(hpml, tmp_path):
    """The whole launch stops on the 0-worker point of a persistent_workers sweep: one line, no sweep folder."""
    done = hpml("launch", "experiment=dataloader_workers_cpu", f"workload.data_root={tmp_path}",
                "workload.persistent_workers=true")
    assert done.returncode == 2
    assert done.stderr.strip() == ("hpml: error: workload.persistent_workers=True is not allowed: false when "
                                   "workload.loader_workers=0 (there are no worker processes to keep; PyTorch "
                                   "refuses it)")
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize("overrides, message", [
    (["workload.dataset=png"], "hpml: error: workload.dataset: Invalid value 'png', expected one of "
                               "[cifar10, image_folder, fashion_mnist, mnist]"),
    (["workload.data_placement=gpu"], "hpml: error: workload.data_placement: Invalid value 'gpu', expected one of "
                                      "[host, device]"),
    (["workload.augment=maybe"], "hpml: error: workload.augment: Value 'maybe' is not a valid bool (type str)"),
    ([], "hpml: error: workload.data_root={root}: no CIFAR-10 python batches there"),
    (["workload.dataset=image_folder"], "hpml: error: workload.data_root={root}: no train/ folder of class "
                                        "sub-folders (ImageFolder)"),
])
def test_the_command_line_refuses_in_one_line(hpml, tmp_path, overrides, message):
    done = hpml("launch", "--dry-run", "experiment=dataloader_workers_cpu", f"workload.data_root={tmp_path}",
                "workload.loader_workers=0", *overrides)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(message.format(root=tmp_path))
