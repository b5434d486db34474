"""Schema of the `dataloader` workload (conf/workload/dataloader.yaml; the worker: workloads/dataloader/).

The data-loader study (docs/studies/dataloader-workers.md): the training set iterated as training would iterate it,
with no model, one sweep point per loader setting. Its keys are torch.utils.data.DataLoader's (num_workers as
`loader_workers`, as train names it, pin_memory, persistent_workers, prefetch_factor) with PyTorch's defaults in the
YAML, and the device data path (workload.data_placement=device, workloads/train/device_data.py) as one more setting.

Rules PyTorch enforces only when the loader is built (prefetch_factor and persistent_workers need worker processes)
are refused here, before anything runs; so are settings that would change nothing (the loader's options on the
device path, which has no loader; pin_memory with no device to copy to).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import List, Optional

from hpml.conf.data_on_disk import CIFAR10_SIDE, missing_cifar10_files, unreadable_cifar10, unreadable_image_folder
from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import MISSING, require, require_input_batch, require_repeats
from hpml.conf.workload.train_choices import DataPlacement
from hpml.conf.workload_contract import WorkloadConfig, check_loader_workers_fit
from hpml.contract.idx_data import IDX_DATASETS, IDX_SIDE, idx_problem


class LoaderDataset(str, Enum):
    cifar10 = "cifar10"  # CIFAR-10's python batches under data_root/cifar-10-batches-py (torchvision's reader)
    image_folder = "image_folder"  # data_root/train/<class>/<image> (torchvision ImageFolder: decoded per sample)
    # torchvision's FashionMNIST / MNIST under data_root (`hpml data fashion-mnist|mnist`): 1 x 28 x 28
    fashion_mnist = "fashion_mnist"
    mnist = "mnist"


@dataclass
class DataloaderConfig(WorkloadConfig):
    dataset: LoaderDataset = MISSING
    data_root: Optional[str] = None  # required (null refused): the data set is read from disk, never downloaded
    image_size: int = MISSING  # image_folder: RandomResizedCrop's output side; cifar10: 32
    batch_size: int = MISSING  # per worker process, as train's weak scaling
    epochs: int = MISSING  # epoch 1 is warm-up (not reported): at least 2
    augment: bool = MISSING  # random crop + horizontal flip, as train's (false: ToTensor + Normalize only)
    crop_padding: int = MISSING  # cifar10 with augment: zero padding before the 32x32 random crop
    # --- the DataLoader's options (PyTorch's defaults: 0, false, false, null) ---
    loader_workers: int = MISSING  # num_workers: 0 loads in the main process
    pin_memory: bool = MISSING  # page-locked batches, copied to the GPU asynchronously (GPU points only)
    persistent_workers: bool = MISSING  # keep the worker processes between epochs (needs loader_workers >= 1)
    prefetch_factor: Optional[int] = MISSING  # batches loaded ahead per worker; null: PyTorch's (2 with workers)
    # --- the device path (workloads/train/device_data.py): no loader, the split decoded once onto the device ---
    data_placement: DataPlacement = MISSING
    device_data_share: float = MISSING  # data_placement=device: the largest share of the device's free memory

    def __post_init__(self) -> None:
        require(bool(self.data_root), "workload.data_root",
                "a directory holding the data set (e.g. `hpml data digits --root R --train-size 50000 "
                "--jpeg-folder J`: cifar10 at R, image_folder at J)", self.data_root)
        require(self.batch_size >= 1, "workload.batch_size", "an integer >= 1", self.batch_size)
        require(self.epochs >= 2, "workload.epochs", "an integer >= 2 (epoch 1 is warm-up and is not reported)",
                self.epochs)
        require_repeats(self, epochs=("epochs",))
        require(self.dataset.value not in IDX_DATASETS or self.image_size == IDX_SIDE, "workload.image_size",
                f"{IDX_SIDE} when workload.dataset={self.dataset.value} (its images are {IDX_SIDE}x{IDX_SIDE})",
                self.image_size)
        require(self.dataset != LoaderDataset.cifar10 or self.image_size == CIFAR10_SIDE, "workload.image_size",
                f"{CIFAR10_SIDE} when workload.dataset=cifar10 (its images are {CIFAR10_SIDE}x{CIFAR10_SIDE}; the "
                "size applies to image_folder)", self.image_size)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        require_input_batch(self.batch_size, self.image_size)
        require(0 <= self.crop_padding <= self.image_size, "workload.crop_padding",
                f"an integer in [0, workload.image_size={self.image_size}] (0: no padding before the random crop)",
                self.crop_padding)
        require(self.loader_workers >= 0, "workload.loader_workers", "an integer >= 0 (0: the main process loads)",
                self.loader_workers)
        # PyTorch raises these two when the DataLoader is built; here they stop the sweep before any point runs
        require(self.prefetch_factor is None or self.loader_workers >= 1, "workload.prefetch_factor",
                "null when workload.loader_workers=0 (prefetching is done by worker processes; PyTorch refuses it "
                "without)", self.prefetch_factor)
        require(self.prefetch_factor is None or self.prefetch_factor >= 1, "workload.prefetch_factor",
                "null (PyTorch's default: 2 per worker) or an integer >= 1", self.prefetch_factor)
        require(not self.persistent_workers or self.loader_workers >= 1, "workload.persistent_workers",
                "false when workload.loader_workers=0 (there are no worker processes to keep; PyTorch refuses it)",
                self.persistent_workers)
        require(0 < self.device_data_share <= 1, "workload.device_data_share",
                "a fraction in (0, 1] of the device's free memory", self.device_data_share)
        if self.data_placement == DataPlacement.device:
            self.check_no_loader_options()

    def check_no_loader_options(self) -> None:
        """The device path has no DataLoader: a loader option there would be a point identical to another."""
        why = "when workload.data_placement=device (no DataLoader: the split is decoded once onto the device)"
        require(self.loader_workers == 0, "workload.loader_workers", f"0 {why}", self.loader_workers)
        require(not self.pin_memory, "workload.pin_memory", f"false {why}", self.pin_memory)
        require(not self.persistent_workers, "workload.persistent_workers", f"false {why}", self.persistent_workers)

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        require(not (self.pin_memory and self.runs_on_cpu(resources)), "workload.pin_memory",
                "false when the workers run on the CPU (resources.gpus_per_node=0 or workload.device=cpu): there is "
                "no copy to a device for pinned memory to speed up", self.pin_memory)
        check_loader_workers_fit(self.loader_workers, resources)

    def preflight_problems(self) -> List[str]:
        problem = data_problem(self)
        return [problem] if problem else []


def data_problem(cfg: DataloaderConfig) -> Optional[str]:
    """Why the configured data set is not on disk in torchvision's layout, in one line; None when it is."""
    hint = "write one with `hpml data digits --root R --train-size 50000 --jpeg-folder J`"
    idx = IDX_DATASETS.get(cfg.dataset.value)
    if idx:
        problem = idx_problem(cfg.data_root, idx)
        return f"workload.data_root={cfg.data_root}: {problem}" if problem else None
    if cfg.dataset == LoaderDataset.cifar10:
        absent = missing_cifar10_files(cfg.data_root)
        if absent:
            return (f"workload.data_root={cfg.data_root}: no CIFAR-10 python batches there "
                    f"({Path(cfg.data_root) / 'cifar-10-batches-py'} lacks {', '.join(absent[:3])}"
                    f"{'...' if len(absent) > 3 else ''}); {hint}")
        return unreadable_cifar10("workload.data_root", cfg.data_root)
    elif not (Path(cfg.data_root) / "train").is_dir():
        return f"workload.data_root={cfg.data_root}: no train/ folder of class sub-folders (ImageFolder); {hint}"
    return unreadable_image_folder("workload.data_root", cfg.data_root)  # train/ only: the study reads no val/
