"""Evaluation on the held-out split, every workload.eval_every epochs: top-1 and mean loss over the whole split.

Each rank evaluates every world_size-th sample (rank, rank + W, ...), so the split is covered exactly once with
no padding (a DistributedSampler would repeat samples to even the shards out and bias the accuracy); one
all-reduce of (correct, loss sum, count) gives every rank the same numbers, so all ranks agree on stopping.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, Subset

from hpml.conf.workload.train import Dataset as DatasetKind
from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_data import idx_dataset
from hpml.workloads.common.cifar10 import local_cifar10
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.idx_images import FirstSamples, local_idx, normalization, padding_transform
from hpml.workloads.train.graphed_eval import EvalGraph, add_counts
from hpml.workloads.train.image_files import load_image
from hpml.workloads.train.model import autocast, memory_format


def held_out_dataset(cfg: TrainConfig) -> Dataset:
    """The held-out split (its first workload.max_samples samples where that is set)."""
    dataset = _held_out(cfg)
    return FirstSamples(dataset, cfg.max_samples) if cfg.max_samples else dataset


def _held_out(cfg: TrainConfig) -> Dataset:
    """CIFAR-10's test batch, Fashion-MNIST's or MNIST's test split (padded to the model's side), or an image
    folder's val/, transformed for evaluation (no augmentation)."""
    import torchvision.transforms as T

    idx = idx_dataset(cfg.dataset)
    normalize = T.Normalize(*normalization(idx))
    if idx:
        pad = padding_transform(cfg.fit_padding)
        return local_idx(cfg.data_root, idx, T.Compose([*pad, T.ToTensor(), normalize]), train=False)
    if cfg.dataset == DatasetKind.cifar10:
        return local_cifar10(cfg.data_root, T.Compose([T.ToTensor(), normalize]), train=False)
    from torchvision.datasets import ImageFolder

    transform = T.Compose([T.Resize(cfg.image_size), T.CenterCrop(cfg.image_size), *padding_transform(cfg.fit_padding),
                           T.ToTensor(), normalize])
    return ImageFolder(str(Path(cfg.data_root) / "val"), transform=transform, loader=load_image)


def eval_loader(cfg: TrainConfig, ctx: DistContext, batch: int) -> DataLoader:
    dataset = held_out_dataset(cfg)
    shard: List[int] = list(range(ctx.rank, len(dataset), ctx.world_size))
    return DataLoader(Subset(dataset, shard), batch_size=batch, shuffle=False, num_workers=cfg.loader_workers,
                      pin_memory=ctx.device.type == "cuda")


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: DataLoader, cfg: TrainConfig, ctx: DistContext,
             graph: Optional[EvalGraph] = None) -> Tuple[float, float]:
    """(top-1 as a fraction, mean cross-entropy) over the whole held-out split, the same on every rank. With
    `graph` (workload.cuda_graphs=true) each full batch is a replay of its captured forward (graphed_eval.py)."""
    was_training = model.training
    model.eval()
    totals = torch.zeros(2, dtype=torch.float64, device=ctx.device) if graph is None else graph.totals
    if graph is not None:
        graph.start_pass()
    count = 0  # counted on the host: a per-batch tensor from the host would be a synchronizing copy
    # one autocast context for the whole pass: each weight is cast to the autocast dtype once (autocast caches the
    # casts of leaf weights within a context), not once a batch, which cost a launch per weight per batch
    with autocast(cfg, ctx.device):
        for images, labels in loader:
            images = images.to(ctx.device, non_blocking=True, memory_format=memory_format(cfg))
            labels = labels.to(ctx.device, non_blocking=True)
            if graph is None:
                add_counts(model, images, labels, totals)
            else:
                graph.add(model, images, labels)
            count += labels.numel()
    totals = torch.cat([totals, torch.tensor([float(count)], dtype=torch.float64).to(ctx.device)])
    dist.all_reduce(totals)
    model.train(was_training)
    correct, loss_sum, count = totals.tolist()
    if count == 0:
        raise ValueError("the held-out split is empty: nothing to evaluate on")
    return correct / count, loss_sum / count
