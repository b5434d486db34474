"""A plain batch-augmentation loop to a target accuracy: the reference beside
`experiment=batch_augmentation_fashion_mnist` (issue 43, item 3).

    python tools/plain_batch_aug.py --data-root FMNIST --copies 1 2 4 8 --repeats 1 [--out plain.json]

What a user would write without hpml, with the preset's recipe, on one GPU: Fashion-MNIST read through
torchvision.datasets.FashionMNIST(root) (what `hpml data fashion-mnist --root FMNIST` lays out), zero-padded from
28 x 28 to the 32 x 32 that He et al.'s CIFAR ResNet-20 was designed for, normalized once into one float tensor on
the GPU. Every step takes B samples of the epoch's permutation and repeats each of them M times in a row (batch
augmentation, Hoffer et al. 2019). Each copy gets its own random crop of the image zero-padded by 4, its own
left-right flip and one 12 x 12 Cutout hole (DeVries & Taylor 2017: a centre drawn uniformly over the image,
clipped at the border, set to 0 after normalization). Then fp32, SGD (momentum 0.9, weight decay 1e-4), rate 0.1
divided by 10 at epochs 10 and 15. After every epoch the 10,000 test images are evaluated, and the run stops at the
first evaluation at or above the target from epoch 2 on, as hpml's worker does.

Time to target: wall clock from before epoch 1 to the evaluation that reached it, evaluations included. Energy: the
GPU's NVML total-energy counter differenced over the same window. Runs go one after another in this one process
(for each M, seeds 0..repeats-1); the first pays cuDNN's autotuning, as every launched point does.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pynvml
import torch
import torch.nn as nn
import torch.nn.functional as F
from plain_ddp_tta import STATS, augment, energy_mj, read_fashion_mnist, synchronize


class Block(nn.Module):
    """He et al.'s basic block; where it halves the resolution and doubles the channels, the shortcut is option A:
    every other pixel, the new channels zero-padded."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.pad = cout - cin
        self.stride = stride

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        shortcut = x[:, :, ::self.stride, ::self.stride]
        if self.pad:
            shortcut = F.pad(shortcut, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return F.relu(out + shortcut)


def resnet20(in_channels: int, classes: int = 10) -> nn.Module:
    layers = [nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(3):
            layers.append(Block(cin, cout, stride if i == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_normal_(m.weight)
    return model


def padded_on_device(images, labels, device):
    """1 x 28 x 28 uint8 -> 1 x 32 x 32 (raw zeros around), normalized with Fashion-MNIST's mean and std."""
    mean, std = STATS["fashion_mnist"][0][0], STATS["fashion_mnist"][1][0]
    x = F.pad(torch.from_numpy(images).to(device).float() / 255, (2, 2, 2, 2))
    return (x - mean) / std, torch.from_numpy(labels).to(device)


def cutout(x: torch.Tensor, size: int, generator) -> torch.Tensor:
    n, _, h, w = x.shape
    cy = torch.randint(0, h, (n, 1, 1, 1), device=x.device, generator=generator)
    cx = torch.randint(0, w, (n, 1, 1, 1), device=x.device, generator=generator)
    rows = torch.arange(h, device=x.device).view(1, 1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, 1, w)
    top, left = cy - size // 2, cx - size // 2
    hole = (rows >= top) & (rows < top + size) & (cols >= left) & (cols < left + size)
    return x.masked_fill(hole, 0.0)


def one_run(args, copies: int, seed: int, train, test, device, handle) -> dict:
    torch.manual_seed(seed)
    model = resnet20(train[0].shape[1]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    (x, y), (tx, ty) = train, test
    steps = len(y) // args.batch
    pad_value = torch.tensor(-STATS["fashion_mnist"][0][0] / STATS["fashion_mnist"][1][0], device=device)
    order, draws = torch.Generator(device=device), torch.Generator(device=device)
    draws.manual_seed(seed)
    synchronize(device)
    start_mj, start = energy_mj(handle), time.perf_counter()
    reached, epoch_s = None, []
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = args.lr * 0.1 ** sum(epoch > m for m in args.milestones)
        model.train()
        order.manual_seed(seed * 1000 + epoch)
        perm = torch.randperm(len(y), device=device, generator=order)
        for i in range(steps):
            index = perm[i * args.batch:(i + 1) * args.batch].repeat_interleave(copies)
            batch = cutout(augment(x[index], args.crop_padding, True, pad_value, draws), args.cutout_size, draws)
            loss = F.cross_entropy(model(batch), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum().item()
                          for i in range(0, len(ty), 1000))
        top1 = correct / len(ty)
        epoch_s.append(time.perf_counter() - epoch_start)
        if top1 >= args.target and epoch >= 2:
            reached = epoch
            break
    seconds = time.perf_counter() - start
    synchronize(device)
    joules = (energy_mj(handle) - start_mj) / 1000.0 if handle is not None else None
    return {"copies": copies, "seed": seed, "samples_per_step": copies * args.batch, "converged": reached is not None,
            "epochs": epoch, "top1": top1, "seconds": seconds, "energy_j": joules, "epoch_s": epoch_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 2, 4, 8], help="M, one set of runs each")
    parser.add_argument("--repeats", type=int, default=1, help="seeds 0..N-1 for each M")
    parser.add_argument("--batch", type=int, default=128, help="samples drawn per step, before the M copies")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--milestones", type=int, nargs="*", default=[10, 15])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--target", type=float, default=0.92)
    parser.add_argument("--crop-padding", type=int, default=4)
    parser.add_argument("--cutout-size", type=int, default=12)
    parser.add_argument("--max-samples", type=int, default=None, help="the first N of each split (smoke tests)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    handle = None
    if torch.cuda.is_available():
        device = torch.device("cuda", 0)
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{torch.cuda.get_device_properties(device).uuid}")
    else:  # a smoke test of the loop on a machine without a GPU
        device = torch.device("cpu")
    torch.backends.cudnn.benchmark = True
    train, test = (padded_on_device(*(a[:args.max_samples] for a in read_fashion_mnist(args.data_root, split)), device)
                   for split in (True, False))
    runs = []
    for copies in args.copies:
        for seed in range(args.repeats):
            runs.append(one_run(args, copies, seed, train, test, device, handle))
            print(json.dumps(runs[-1]), flush=True)
    if args.out:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        args.out.write_text(json.dumps({"gpu": name, "torch": torch.__version__, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
