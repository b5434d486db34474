"""The plain reference for the step-efficiency measurements (issue 44): no hpml, a bare PyTorch loop.

ResNet (CIFAR stem: 3x3 stride-1 first conv, no max-pool), bf16 autocast, channels_last, SGD (momentum 0.9,
weight decay 5e-4), random data already on the GPU; per batch size: the eager step, and the whole step
(forward, loss, backward, fused SGD with a device-tensor rate) captured by hand in one CUDA graph. Time per step
from CUDA events over `steps` steps after `warmup` steps; prints one JSON line per (model, mode, batch).
    python plain_loop.py --model resnet18 --batches 128 512 --steps 100
"""

from __future__ import annotations

import argparse
import json

import torch
import torchvision


def cifar_resnet(name: str) -> torch.nn.Module:
    model = torchvision.models.get_model(name, num_classes=10)
    model.conv1 = torch.nn.Conv2d(3, model.conv1.out_channels, 3, 1, 1, bias=False)
    model.maxpool = torch.nn.Identity()
    return model.cuda().to(memory_format=torch.channels_last)


def time_steps(step, steps: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps  # ms


def run(name: str, batch: int, graphed: bool, steps: int, warmup: int) -> dict:
    torch.manual_seed(0)
    model = cifar_resnet(name)
    rate = torch.tensor(0.1, device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=rate if graphed else 0.1, momentum=0.9, weight_decay=5e-4,
                          fused=graphed)
    x = torch.randn(batch, 3, 32, 32, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def eager():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not graphed):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            eager()
    torch.cuda.current_stream().wait_stream(side)
    step = eager
    if graphed:
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        step = graph.replay
        for _ in range(warmup):
            step()
    ms = time_steps(step, steps)
    return {"model": name, "mode": "graph" if graphed else "eager", "batch": batch, "ms_per_step": ms,
            "device": torch.cuda.get_device_name(), "torch": torch.__version__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batches", type=int, nargs="+", default=[128])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=11)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    for batch in args.batches:
        for graphed in (False, True):
            print(json.dumps(run(args.model, batch, graphed, args.steps, args.warmup)), flush=True)


if __name__ == "__main__":
    main()
