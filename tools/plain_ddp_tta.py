"""A plain DDP loop to a target accuracy: the reference beside `experiment=tta_gpus` (issue 36, item 5).

    torchrun --nproc_per_node N tools/plain_ddp_tta.py --data-root DIGITS50K [--repeats 5] [--out plain.json]
    torchrun --nproc_per_node 1 tools/plain_ddp_tta.py --dataset fashion_mnist --data-root FMNIST \
        --target 0.93 --epochs 15 --decay-epochs 15 --crop-padding 2 --flip --repeats 11 --out plain.json

The second is the reference beside `experiment=tta_fashion_mnist` (issue 43): Fashion-MNIST read through
torchvision.datasets.FashionMNIST(root) (what `hpml data fashion-mnist --root FMNIST` lays out), 1 x 28 x 28,
normalized with its own mean and std, ResNet-18's CIFAR stem taking 1 channel; with --crop-padding P each training
image is a random 28 x 28 window of the image zero-padded by P (one offset per sample), with --flip mirrored with
probability 1/2: the preset's augmentation, batched on the GPU as a plain loop would write it.

What a user would write without hpml, with the preset's recipe: CIFAR-10's python batches read with pickle,
normalized once into one float tensor on each rank's GPU; every epoch one permutation of the training split (the
same on every rank), rank r taking perm[r::world] (the tail that does not divide evenly cut), batches of
global batch / world; torchvision's ResNet-18 with the CIFAR stem (3x3 stride-1 conv, no max-pool), DDP, bf16
autocast (on a GPU; the CPU smoke run is float32), channels_last, SGD (momentum 0.9, weight decay 5e-4), a rate
ramped per step from 0 to lr over the first epoch and down to 0 at the end of epoch 4; after every epoch the
held-out split evaluated (rank r takes samples r, r + W, ...; the correct counts all-reduced); it stops at the first
evaluation at or above the target from epoch 2 on, as hpml's worker does.

Time to target: wall clock from a barrier before epoch 1 to the evaluation that reached the target (evaluations
included, as hpml's time-to-accuracy clock). Energy to target: each rank reads its own GPU's NVML total-energy
counter (the GPU found by UUID) right before that barrier and right after the target's evaluation, outside the
timed loop; the differences are all-reduced, so each GPU is counted once. Repeats run one after another in this
one process (seed = repeat), each with a fresh model and optimizer.

With --cuda-graphs (a GPU; --compile none, or default: its fused kernels are captured) the step (forward, loss, backward with DDP's all-reduces, fused SGD with
its rate in a device tensor) is captured in one CUDA graph after 11 eager DDP steps and replayed, by PyTorch's
recipe for DDP ("Usage with DistributedDataParallel", CUDA semantics): NCCL's async error handling off, DDP built
on the side stream the warm-up and the capture run on. The batch (indexing, augmentation) is made eagerly and
copied into the graph's fixed input, as hpml's `workload.cuda_graphs=true` does.

With --batch-prep epoch every batch of the epoch is made at the epoch's start (one permutation slice, augmented in
chunks) and each step takes a slice of it, as hpml's `workload.batch_prep=epoch` does: the per-step launches that
make a batch are gone, what a graphed step at 128 samples a GPU waits on.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pynvml
import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

# (mean, std) per channel: CIFAR-10's, as torchvision examples use (the digits written as CIFAR-10 use them too);
# Fashion-MNIST's training split's (hpml/contract/idx_data.py, tested against the files)
STATS = {"cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)), "fashion_mnist": ((0.2860,), (0.3530,))}


def read_fashion_mnist(root: Path, train: bool):
    data = torchvision.datasets.FashionMNIST(str(root), train=train, download=False)
    return data.data.unsqueeze(1).numpy(), data.targets.numpy().astype(np.int64)


def read_split(root: Path, names):
    images, labels = [], []
    for name in names:
        with open(root / "cifar-10-batches-py" / name, "rb") as f:
            batch = pickle.load(f, encoding="latin1")
        images.append(np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels += list(batch["labels"])
    return np.concatenate(images), np.asarray(labels, dtype=np.int64)


def on_device(images: np.ndarray, labels: np.ndarray, device, dataset: str):
    """Normalized once into one float tensor on the device. Zero padding of the raw image is normalized too: a
    padded pixel is -mean/std, what torchvision's RandomCrop(padding) then Normalize gives."""
    mean, std = (torch.tensor(v, device=device).view(1, -1, 1, 1) for v in STATS[dataset])
    x = (torch.from_numpy(images).to(device).float() / 255 - mean) / std
    return x.contiguous(memory_format=torch.channels_last), torch.from_numpy(labels).to(device)


def augment(x: torch.Tensor, padding: int, flip: bool, pad_value: torch.Tensor, generator) -> torch.Tensor:
    """Each sample its own random crop of the zero-padded image (and a left-right flip with probability 1/2)."""
    n, _, h, w = x.shape
    if padding:
        padded = F.pad(x - pad_value, (padding,) * 4) + pad_value  # raw zeros, in the normalized scale
        dy = torch.randint(0, 2 * padding + 1, (n, 1), device=x.device, generator=generator)
        dx = torch.randint(0, 2 * padding + 1, (n, 1), device=x.device, generator=generator)
        rows = (dy + torch.arange(h, device=x.device))[:, None, :, None]
        cols = (dx + torch.arange(w, device=x.device))[:, None, None, :]
        x = padded[torch.arange(n, device=x.device)[:, None, None, None],
                   torch.arange(x.shape[1], device=x.device)[None, :, None, None], rows, cols]
    if flip:
        mirrored = torch.rand(n, device=x.device, generator=generator) < 0.5
        x = torch.where(mirrored[:, None, None, None], x.flip(3), x)
    return x.contiguous(memory_format=torch.channels_last)


def made(x: torch.Tensor, index: torch.Tensor, args, pad_value: torch.Tensor, generator) -> torch.Tensor:
    """The samples at `index`, augmented as the arguments say."""
    return augment(x[index], args.crop_padding, args.flip, pad_value, generator) \
        if args.crop_padding or args.flip else x[index]


def epoch_batches(x, y, used: torch.Tensor, args, pad_value, generator):
    """--batch-prep epoch: every batch of the epoch at once (in chunks of 8,192 samples, to bound the crop's index
    tensors), in the order the steps take them."""
    images = torch.cat([made(x, chunk, args, pad_value, generator) for chunk in used.split(8192)])
    return images.contiguous(memory_format=torch.channels_last), y[used]


def resnet18_cifar(in_channels: int = 3) -> torch.nn.Module:
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = torch.nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = torch.nn.Identity()
    return model


def rate(step: int, steps_per_epoch: int, lr: float, warmup_epochs: int, decay_epochs: int) -> float:
    warmup, end = warmup_epochs * steps_per_epoch, decay_epochs * steps_per_epoch
    if step < warmup:
        return lr * step / warmup
    return lr * max(0.0, 1 - (step - warmup) / (end - warmup))


def energy_mj(handle) -> float:
    """The GPU's counter in mJ; 0 on the CPU (the smoke test's gloo run: no energy there)."""
    return float(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)) if handle is not None else 0.0


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


GRAPH_WARMUP_STEPS = 11  # eager DDP steps before capture (PyTorch's notes)


class GraphedStep:
    """The step captured once (after GRAPH_WARMUP_STEPS eager ones on the side stream) and replayed."""

    def __init__(self, model, optimizer, side):
        self.model, self.optimizer, self.side = model, optimizer, side
        self.graph = self.x = self.y = None
        self.eager = 0

    def loss(self, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            return F.cross_entropy(self.model(x), y)

    def __call__(self, x, y, lr: float) -> None:
        self.optimizer.param_groups[0]["lr"].fill_(lr)
        if self.eager < GRAPH_WARMUP_STEPS:
            self.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.side):
                self.optimizer.zero_grad(set_to_none=True)
                self.loss(x, y).backward()
                self.optimizer.step()
            torch.cuda.current_stream().wait_stream(self.side)
            self.eager += 1
            return
        if self.graph is None:
            torch.cuda.synchronize()
            self.x, self.y = x.clone(), y.clone()
            self.optimizer.zero_grad(set_to_none=True)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, stream=self.side):
                self.loss(self.x, self.y).backward()
                self.optimizer.step()
        self.x.copy_(x)
        self.y.copy_(y)
        self.graph.replay()


def one_run(args, seed: int, train, test, device, rank: int, world: int, handle) -> dict:
    torch.manual_seed(seed)
    side = torch.cuda.Stream() if args.cuda_graphs else None
    if side is not None:
        side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # None: the current stream
        model = DDP(resnet18_cifar(train[0].shape[1]).to(device, memory_format=torch.channels_last),
                    device_ids=[device.index] if device.type == "cuda" else None)
    if side is not None:
        torch.cuda.current_stream().wait_stream(side)
    if args.compile != "none":  # as a user would: the DDP model compiled whole (torch's DDPOptimizer splits it)
        model = torch.compile(model, mode=args.compile)
    graph_trees = args.compile == "reduce-overhead"
    if args.cuda_graphs:  # fused SGD, its rate a device tensor: nothing in the captured step reads the host
        optimizer = torch.optim.SGD(model.parameters(), lr=torch.tensor(0.0, device=device), momentum=0.9,
                                    weight_decay=5e-4, fused=True)
        graphed = GraphedStep(model, optimizer, side)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9, weight_decay=5e-4)
    (x, y), (tx, ty) = train, test
    bf16 = precision(device) == "bf16"
    per_rank = args.batch // world
    shard_len = len(y) // world
    steps = shard_len // per_rank
    generator = torch.Generator(device=device)
    mine = torch.arange(rank, len(ty), world, device=device)
    mean, std = (torch.tensor(v, device=device).view(1, -1, 1, 1) for v in STATS[args.dataset])
    pad_value = -mean / std  # a raw 0 pixel after normalization
    draws = torch.Generator(device=device)
    draws.manual_seed(seed * 1000 + rank)
    synchronize(device)
    dist.barrier()
    start_mj = energy_mj(handle)
    start = time.perf_counter()
    step, result, epoch_s = 0, None, []
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.perf_counter()
        model.train()
        generator.manual_seed(seed * 1000 + epoch)  # the same permutation on every rank
        shard = torch.randperm(len(y), device=device, generator=generator)[rank::world][:shard_len]
        if args.batch_prep == "epoch":  # the epoch's batches made now, in a few large kernels; a step takes a slice
            ex, ey = epoch_batches(x, y, shard[:steps * per_rank], args, pad_value, draws)
        for i in range(steps):
            index = shard[i * per_rank:(i + 1) * per_rank]
            lr = rate(step, steps, args.lr, args.warmup_epochs, args.decay_epochs)
            if args.batch_prep == "epoch":
                batch, labels = ex[i * per_rank:(i + 1) * per_rank], ey[i * per_rank:(i + 1) * per_rank]
            else:
                batch, labels = made(x, index, args, pad_value, draws), y[index]
            if args.cuda_graphs:
                graphed(batch, labels, lr)
                step += 1
                continue
            for group in optimizer.param_groups:
                group["lr"] = lr
            if graph_trees:  # a new step: the replays of the last one may be overwritten
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = F.cross_entropy(model(batch), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
        model.eval()
        correct = torch.zeros((), device=device)
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            for i in range(0, len(mine), per_rank):
                index = mine[i:i + per_rank]
                if graph_trees:
                    torch.compiler.cudagraph_mark_step_begin()
                correct += (model(tx[index]).argmax(1) == ty[index]).sum()
        dist.all_reduce(correct)
        top1 = correct.item() / len(ty)
        epoch_s.append(time.perf_counter() - epoch_start)  # the steps and the evaluation, as hpml's loop_time_s
        if top1 >= args.target and epoch >= 2:
            result = {"epoch": epoch, "top1": top1}
            break
    seconds = time.perf_counter() - start
    synchronize(device)
    joules = torch.tensor([(energy_mj(handle) - start_mj) / 1000.0], device=device, dtype=torch.float64)
    dist.all_reduce(joules)
    return {"seed": seed, "converged": result is not None, "epochs": epoch, "top1": top1,
            "seconds": seconds, "energy_j": joules.item() if handle is not None else None, "gpus": world,
            "epoch_s": epoch_s}


def precision(device: torch.device) -> str:
    """bf16 autocast on a GPU, the preset's precision. The CPU run is a smoke test of the loop, in float32: a CPU
    without bf16 instructions emulates them, many times slower (docs/results/test-suite-speed.md)."""
    return "bf16" if device.type == "cuda" else "float32"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--dataset", choices=sorted(STATS), default="cifar10",
                        help="cifar10: CIFAR-10's python batches (the digits as written by hpml data digits); "
                             "fashion_mnist: torchvision's FashionMNIST under the root")
    parser.add_argument("--crop-padding", type=int, default=0, help="random crop of the zero-padded image; 0: none")
    parser.add_argument("--flip", action="store_true", help="random left-right flip (not for digits)")
    parser.add_argument("--max-samples", type=int, default=None, help="the first N of each split (smoke tests)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=512, help="global batch")
    parser.add_argument("--lr", type=float, default=0.2)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--decay-epochs", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--target", type=float, default=0.98)
    parser.add_argument("--compile", choices=("none", "default", "reduce-overhead", "max-autotune"), default="none",
                        help="torch.compile the DDP model in this mode (the first repeat pays the compilation)")
    parser.add_argument("--cuda-graphs", action="store_true",
                        help="the whole step in one CUDA graph, DDP's all-reduces included (a GPU; --compile none or default)")
    parser.add_argument("--batch-prep", choices=("step", "epoch"), default="step",
                        help="step: each batch sliced and augmented at its step; epoch: the epoch's batches made at "
                             "its start, a step taking a slice (hpml's workload.batch_prep)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.cuda_graphs and (args.compile not in ("none", "default") or not torch.cuda.is_available()):
        parser.error("--cuda-graphs needs a GPU and --compile none or default (one capture at a time)")
    if args.cuda_graphs:  # PyTorch's recipe for capturing DDP: read when the process group is made
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    local = int(os.environ["LOCAL_RANK"])
    handle = None
    if torch.cuda.is_available():
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{torch.cuda.get_device_properties(device).uuid}")
    else:  # a smoke test of the loop on a machine without a GPU
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cudnn.benchmark = True
    if args.dataset == "fashion_mnist":
        splits = read_fashion_mnist(args.data_root, True), read_fashion_mnist(args.data_root, False)
    else:
        splits = (read_split(args.data_root, [f"data_batch_{i}" for i in range(1, 6)]),
                  read_split(args.data_root, ["test_batch"]))
    train, test = (on_device(images[:args.max_samples], labels[:args.max_samples], device, args.dataset)
                   for images, labels in splits)
    runs = []
    for seed in range(args.repeats):
        runs.append(one_run(args, seed, train, test, device, rank, world, handle))
        if rank == 0:
            print(json.dumps(runs[-1]), flush=True)
    if rank == 0 and args.out:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        args.out.write_text(json.dumps({"gpu": name, "gpus": world, "compile": args.compile,
                                        "cuda_graphs": args.cuda_graphs, "batch_prep": args.batch_prep,
                                        "precision": precision(device),
                                        "torch": torch.__version__, "runs": runs}, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
