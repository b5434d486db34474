"""The train workload's augmentation settings and their rules: random crop, Cutout, batch augmentation's M copies
and the accumulation chunks that split the step they make.

Checked where TrainConfig checks itself (__post_init__: the settings on their own; check_resources: the chunks
against the per-worker batch, which needs the point's resources). The worker side is workloads/train/augment.py
(crop, flip, Cutout), copies.py (the host path's M copies) and accumulation.py (the chunks).

The checks read TrainConfig through AugmentationFields, not by importing it: conf/workload/train.py imports this
module, and conf has no import cycles (tests/test_workload_contract.py).
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from hpml.conf.validation import require

# Cutout's holes per image: DeVries & Taylor use one; past 64 the holes cover a 32x32 image many times over, and the
# batched mask (samples x holes x H x W) grows with them (a million holes asked for 65 GB)
MAX_CUTOUT_HOLES = 64
# M copies of each sample per step: Hoffer et al. go to 32 (and 64 in one ablation); 1024 is far above any study
MAX_BATCH_AUGMENTATION = 1024


class AugmentationFields(Protocol):
    """What the checks read of TrainConfig."""

    dataset: Enum
    image_size: int
    augment: bool
    crop_padding: int
    cutout_holes: int
    cutout_size: int
    batch_augmentation: int
    accumulation_chunks: int

    @property
    def may_read_real_data(self) -> bool: ...


def check_crop_and_cutout(cfg: AugmentationFields) -> None:
    """Padding and holes that fit the image, and Cutout only on a data set with images to cut (a real one)."""
    require(0 <= cfg.crop_padding <= cfg.image_size, "workload.crop_padding",
            f"an integer in [0, workload.image_size={cfg.image_size}] (0: no padding before the random crop)",
            cfg.crop_padding)
    require(0 <= cfg.cutout_holes <= MAX_CUTOUT_HOLES, "workload.cutout_holes",
            f"an integer in [0, {MAX_CUTOUT_HOLES}] (0: no Cutout; DeVries & Taylor use 1)", cfg.cutout_holes)
    require(cfg.cutout_holes == 0 or 1 <= cfg.cutout_size <= cfg.image_size, "workload.cutout_size",
            f"an integer in [1, workload.image_size={cfg.image_size}] when workload.cutout_holes > 0",
            cfg.cutout_size)
    require(cfg.cutout_holes == 0 or cfg.may_read_real_data, "workload.cutout_holes",
            f"0 unless workload.dataset is cifar10, image_folder, fashion_mnist or mnist (dataset={cfg.dataset.value})",
            cfg.cutout_holes)


def check_batch_augmentation(cfg: AugmentationFields) -> None:
    """M >= 1 copies, only where there is an augmentation to draw (a real data set); chunks >= 1 (their division
    of the step is checked in check_resources, where the per-worker batch is known)."""
    require(type(cfg.batch_augmentation) is int and 1 <= cfg.batch_augmentation <= MAX_BATCH_AUGMENTATION,
            "workload.batch_augmentation", f"an integer in [1, {MAX_BATCH_AUGMENTATION}] (copies of each sample per "
            "step; 1: off)", cfg.batch_augmentation)
    require(cfg.batch_augmentation == 1 or cfg.augment or cfg.cutout_holes > 0, "workload.batch_augmentation",
            "1 when there is no augmentation to draw per copy (workload.augment=false and workload.cutout_holes=0: "
            "the M copies would be identical)", cfg.batch_augmentation)
    require(cfg.batch_augmentation == 1 or cfg.may_read_real_data,
            "workload.batch_augmentation", f"1 unless workload.dataset is cifar10, image_folder or auto "
            f"(dataset={cfg.dataset.value} has no augmentation to draw per copy)", cfg.batch_augmentation)
    require(type(cfg.accumulation_chunks) is int and cfg.accumulation_chunks >= 1, "workload.accumulation_chunks",
            "an integer >= 1 (1: the whole step at once)", cfg.accumulation_chunks)


def check_accumulation_chunks(cfg: AugmentationFields, per_worker_batch: int) -> None:
    """Equal chunks: every chunk's loss weighs 1 / chunks of the step's mean, and BatchNorm sees equal batches."""
    samples = per_worker_batch * cfg.batch_augmentation
    require(samples % cfg.accumulation_chunks == 0, "workload.accumulation_chunks",
            f"a divisor of the {cfg.batch_augmentation} x {per_worker_batch} = {samples} samples of a worker's step "
            "(workload.batch_augmentation x its batch), so that the chunks are equal", cfg.accumulation_chunks)
