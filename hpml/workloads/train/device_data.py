"""The device data path (workload.data_placement=device): a real data set resident on the training device.

Why: a small model on a fast GPU waits on a per-sample host pipeline (PIL transforms per image, a copy per
batch), so a time-to-accuracy study would compare the hosts' CPUs instead of the GPUs. Here each split is decoded
once, kept as uint8 N x C x H x W on each worker's device (CIFAR-10's training split: 153.6 MB), and a batch is
an index slice of the epoch's permutation, augmented there as batched tensor operations (augment.py).

- Which samples: the epoch's order is DistributedSampler's own (torch.utils.data.DistributedSampler over the
  split's indices, shuffle=True, the run's seed, set_epoch per epoch, drop_last=True as on the host path): every
  rank takes perm[rank::world] of the same permutation, the tail that does not divide evenly is cut, and the last
  partial batch is dropped. So for a given seed both paths visit the samples in the same order.
- Augmentation draws come from a generator on the device seeded from (seed, rank): a rerun repeats them.
- The held-out split is evaluated on the device too: rank r takes samples r, r + W, ... (no padding), as the host
  path's evaluation does (evaluation.py).
- What is decoded: CIFAR-10's python batches as they are (32 x 32); Fashion-MNIST's and MNIST's 1 x 28 x 28 images
  as torchvision reads them; an image folder's images resized and centre cropped to image_size once (the host
  path's evaluation transform). Images smaller than the side the model was designed for (28 for a CIFAR ResNet's
  32) are zero-padded to it once, here, as the host path's Pad transform does per image. Augmenting such a folder on the device is
  a padded crop and a flip of that decoded image (not RandomResizedCrop, which needs the original image).
- When a batch is made (workload.batch_prep): `step` slices and augments each step's batch when the step asks for
  it (about 20 small kernels, each a launch on the host); `epoch` makes the whole epoch's batches at its start, in
  chunks of whole batches (EPOCH_CHUNK samples), into one buffer kept from epoch to epoch, and each step is a slice
  of it: no launch at all. The samples and their order are the same; the draws are the same kinds from the same
  generator, taken in another order, so a run's augmentations differ between the two. Why: a step captured in a
  CUDA graph costs one launch, and at a small per-GPU batch the ~20 launches that make its batch are what the GPU
  waits on (docs/results/tta_gpus_fashion_mnist/). The buffer (this rank's samples x copies, in the model's input
  dtype) counts in the memory check below.
- The splits must fit workload.device_data_share of the device's free memory (CUDA: cudaMemGetInfo; CPU:
  the host's MemAvailable), else the point fails at start, before any step, with one line naming the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Tuple

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from hpml.conf.train_memory import epoch_batches_bytes, samples_per_rank
from hpml.conf.workload.train import Dataset as DatasetKind
from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_choices import BatchPrep
from hpml.conf.workload.train_data import idx_dataset
from hpml.workloads.common.cifar10 import local_cifar10
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.idx_images import local_idx, normalization
from hpml.workloads.train.augment import AugmentSpec, Normalization, augment_batch, normalize
from hpml.workloads.train.image_files import load_image
from hpml.workloads.train.model import input_dtype, memory_format


@dataclass
class HostSplit:
    """A decoded split on the host, before it moves to the device."""

    images: torch.Tensor  # N x C x H x W uint8
    labels: torch.Tensor  # N int64
    classes: List[str]

    @property
    def nbytes(self) -> int:
        return self.images.numel() * self.images.element_size() + self.labels.numel() * self.labels.element_size()


def decode_split(cfg: TrainConfig, kind: DatasetKind, train: bool) -> HostSplit:
    """The whole split as uint8 tensors, padded to the model's side: CIFAR-10's arrays as stored, Fashion-MNIST's
    or MNIST's as torchvision reads them, or an image folder decoded once."""
    split = _decode(cfg, kind, train)
    if cfg.max_samples:  # a slice: the first N samples, as the host path's FirstSamples
        split = HostSplit(split.images[:cfg.max_samples].clone(), split.labels[:cfg.max_samples].clone(), split.classes)
    if cfg.fit_padding:
        split.images = F.pad(split.images, (cfg.fit_padding,) * 4)  # zeros, as torchvision's Pad(fill=0)
    return split


def _decode(cfg: TrainConfig, kind: DatasetKind, train: bool) -> HostSplit:
    if kind == DatasetKind.cifar10:
        data = local_cifar10(cfg.data_root, transform=None, train=train)
        images = torch.from_numpy(data.data).permute(0, 3, 1, 2).contiguous()  # N x H x W x C -> N x C x H x W
        return HostSplit(images, torch.tensor(data.targets, dtype=torch.int64), list(data.classes))
    idx = idx_dataset(kind)
    if idx:
        data = local_idx(cfg.data_root, idx, transform=None, train=train)
        return HostSplit(data.data.unsqueeze(1).contiguous(), data.targets.to(torch.int64), list(data.classes))
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder

    folder = Path(cfg.data_root) / ("train" if train else "val")
    transform = T.Compose([T.Resize(cfg.image_size), T.CenterCrop(cfg.image_size), T.PILToTensor()])
    # load_image: a file that fails to decode ends the point with one line naming it
    data = ImageFolder(str(folder), transform=transform, loader=load_image)
    if len(data) == 0:
        raise ValueError(f"workload.data_root={cfg.data_root!r}: {folder} holds no images")
    # One N x 3 x S x S tensor allocated up front, each decoded image copied into its row and dropped: stacking a
    # list of the decoded images held the whole split twice at the peak (the list and the stack).
    images = torch.empty((len(data), 3, cfg.image_size, cfg.image_size), dtype=torch.uint8)
    for index, (image, _) in enumerate(data):
        images[index] = image.expand(3, -1, -1) if image.shape[0] == 1 else image[:3]  # grey to RGB; RGBA's alpha cut
    return HostSplit(images, torch.tensor(data.targets, dtype=torch.int64), list(data.classes))


def free_memory_bytes(device: torch.device) -> int:
    """Free memory of the device the splits go to: cudaMemGetInfo, or the host's MemAvailable for the CPU."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def fit_problem(needed: int, free: int, share: float, device: torch.device, what: str = "the splits") -> str | None:
    """One line when the splits need more than `share` of the device's free memory, else None."""
    allowed = share * free
    if needed <= allowed:
        return None
    return (f"workload.data_placement=device: {what} take {needed / 1e6:.1f} MB on {device}, more than "
            f"workload.device_data_share={share:g} of its {free / 1e6:.1f} MB free ({allowed / 1e6:.1f} MB); raise "
            "workload.device_data_share or use workload.data_placement=host")


def augment_spec(cfg: TrainConfig) -> AugmentSpec:
    return AugmentSpec(crop_padding=cfg.crop_padding if cfg.augment else 0, flip=cfg.flip,
                       cutout_holes=cfg.cutout_holes, cutout_size=cfg.cutout_size)


EPOCH_CHUNK = 8192  # batch_prep=epoch: samples augmented at once (bounds the crop's index tensors, 32 B a value)


def epoch_buffer_nbytes(split: HostSplit, batch: int, world: int, copies: int, dtype: torch.dtype) -> int:
    """batch_prep=epoch: the bytes of one epoch's made batches on a rank (the launch's preflight counts the same)."""
    return epoch_batches_bytes(len(split.labels), world, batch, copies, split.images[0].numel(), dtype.itemsize)


class DeviceEpochs:
    """This rank's training batches of one epoch, sliced and augmented on the device.

    `sampler` is a real DistributedSampler over the split's indices, so workloads.train.data.set_epoch reshuffles
    it as it does the host loader's. Iterating yields (images, labels) ready for the model; with `ahead` (batch_prep=
    epoch) they are slices of the epoch's batches, all made when the iteration starts."""

    def __init__(self, split: HostSplit, batch: int, cfg: TrainConfig, ctx: DistContext, seed: int, copies: int = 1,
                 ahead: bool = False):
        self.images, self.labels = split.images.to(ctx.device), split.labels.to(ctx.device)
        self.classes = split.classes
        self.batch, self.copies, self.ahead = batch, copies, ahead
        self.made_images = self.made_labels = None  # ahead: the epoch's batches, the buffer reused every epoch
        self.sampler = DistributedSampler(range(len(split.labels)), num_replicas=ctx.world_size, rank=ctx.rank,
                                          shuffle=True, seed=seed, drop_last=True)
        self.spec, self.dtype, self.memory_format = augment_spec(cfg), input_dtype(cfg), memory_format(cfg)
        self.norm = Normalization.of(*normalization(idx_dataset(cfg.dataset)), ctx.device)
        self.generator = torch.Generator(device=ctx.device)
        self.generator.manual_seed(hash((seed, ctx.rank)) & 0xFFFF_FFFF_FFFF)  # ints hash the same in every process

    def __len__(self) -> int:
        # the last partial batch is dropped, as on the host path
        return samples_per_rank(len(self.labels), self.sampler.num_replicas, self.batch) // self.batch

    def epoch_order(self) -> torch.Tensor:
        """This rank's sample indices for the current epoch (DistributedSampler's), on the device."""
        return torch.as_tensor(list(self.sampler), dtype=torch.int64).to(self.images.device, non_blocking=True)

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        order = self.epoch_order()
        if self.ahead:
            yield from self.slices_of_epoch(order)
            return
        for step in range(len(self)):
            index = order[step * self.batch:(step + 1) * self.batch]
            yield self.made(index)

    def made(self, index: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The samples at `index`, copied `copies` times, augmented and normalized: the model's input."""
        return augment_batch(self.images[index], self.labels[index], self.spec, self.norm, self.dtype,
                             self.memory_format, self.generator, copies=self.copies)

    def slices_of_epoch(self, order: torch.Tensor) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        """batch_prep=epoch: every batch of the epoch made now, chunk by chunk of whole batches; then one slice (a
        view, no kernel) per step. The samples, their order and each batch's rows are the step path's."""
        used = order[:len(self) * self.batch]
        rows = self.batch * self.copies
        if self.made_images is None:
            shape = (len(used) * self.copies, *self.images.shape[1:])
            self.made_images = torch.empty(shape, dtype=self.dtype, device=self.images.device,
                                           memory_format=self.memory_format)
            self.made_labels = torch.empty(shape[0], dtype=self.labels.dtype, device=self.labels.device)
        chunk = max(1, EPOCH_CHUNK // self.batch) * self.batch
        for start in range(0, len(used), chunk):
            images, labels = self.made(used[start:start + chunk])
            self.made_images[start * self.copies:start * self.copies + len(labels)].copy_(images)
            self.made_labels[start * self.copies:start * self.copies + len(labels)].copy_(labels)
        for step in range(len(self)):
            yield self.made_images[step * rows:(step + 1) * rows], self.made_labels[step * rows:(step + 1) * rows]


class DeviceHeldOut:
    """This rank's share of the held-out split (samples rank, rank + W, ...), normalized on the device in batches;
    evaluation.evaluate iterates it like the host path's DataLoader."""

    def __init__(self, split: HostSplit, batch: int, cfg: TrainConfig, ctx: DistContext):
        shard = torch.arange(ctx.rank, len(split.labels), ctx.world_size)
        self.images, self.labels = split.images[shard].to(ctx.device), split.labels[shard].to(ctx.device)
        self.batch, self.dtype, self.memory_format = batch, input_dtype(cfg), memory_format(cfg)
        self.norm = Normalization.of(*normalization(idx_dataset(cfg.dataset)), ctx.device)

    def __len__(self) -> int:
        return -(-len(self.labels) // self.batch)

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        for start in range(0, len(self.labels), self.batch):
            images = normalize(self.images[start:start + self.batch], self.norm, self.dtype)
            yield images.contiguous(memory_format=self.memory_format), self.labels[start:start + self.batch]


def device_data(cfg: TrainConfig, kind: DatasetKind, ctx: DistContext, batch: int, seed: int
                ) -> Tuple[DeviceEpochs, DeviceHeldOut | None]:
    """Both splits decoded on the host, checked against the device's free memory, then moved there."""
    train = decode_split(cfg, kind, train=True)
    held_out = decode_split(cfg, kind, train=False) if cfg.eval_every else None
    ahead = cfg.batch_prep == BatchPrep.epoch
    needed = train.nbytes + (held_out.nbytes if held_out else 0)
    if ahead:
        needed += epoch_buffer_nbytes(train, batch, ctx.world_size, cfg.batch_augmentation, input_dtype(cfg))
    what = "the splits and the epoch's made batches (workload.batch_prep=epoch)" if ahead else "the splits"
    problem = fit_problem(needed, free_memory_bytes(ctx.device), cfg.device_data_share, ctx.device, what)
    if problem:
        raise ValueError(problem)
    return (DeviceEpochs(train, batch, cfg, ctx, seed, copies=cfg.batch_augmentation, ahead=ahead),
            DeviceHeldOut(held_out, batch, cfg, ctx) if held_out else None)
