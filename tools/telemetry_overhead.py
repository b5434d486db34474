"""What GPU telemetry costs: the sampling loop's NVML calls, and a training loop's throughput with it on or off.

    python tools/telemetry_overhead.py [--out overhead.json] [--pairs 8] [--steps 50] [--interval-ms 100]

1. Loop cost (idle GPUs, every visible one): the median seconds of each NVML call the sampling loop makes,
   of a whole tick of one GPU, and of the total-energy counter that only phase edges read.
2. Overhead, on GPU 0, in ONE process: ResNet-50, bf16 autocast, channels_last, batch 256 of random images
   made once on the device, SGD with momentum, cudnn.benchmark. After --warmup-steps, --pairs pairs of blocks
   of --steps steps, one with telemetry on (the real sampler at --interval-ms, started before the block's
   clock and stopped after it, the block marked as a phase) and one off; the order alternates between pairs
   so that a drift of clocks or temperature favours neither. Each block is timed by wall clock between two
   device synchronizes. Rate = images / block seconds; overhead = 1 - median(on) / median(off).
   The on blocks' sidecars give the sampler's own tick times under load (GIL waits included) and the size
   of a sidecar per sample, from which its size per hour follows.
Prints a table and writes every number to --out (JSON).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torchvision

from hpml.workloads.common.telemetry import start_sampling  # noqa: E402
from hpml.workloads.common.telemetry.nvml import NvmlReader, time_calls  # noqa: E402
from hpml.workloads.common.telemetry.sidecar import read_sidecar  # noqa: E402


def loop_cost(repeats: int) -> list:
    reader = NvmlReader(torch.cuda.device_count())
    try:
        return time_calls(reader, repeats, energy_repeats=max(5, repeats // 10))
    finally:
        reader.close()


def training_step(batch: int):
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return step


def timed_block(step, steps: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def overhead(pairs: int, steps: int, warmup_steps: int, batch: int, interval_ms: int, folder: Path) -> dict:
    torch.backends.cudnn.benchmark = True
    step = training_step(batch)
    for _ in range(warmup_steps):
        step()
    torch.cuda.synchronize()
    blocks, sidecars = [], []
    for pair in range(pairs):
        for mode in (("on", "off") if pair % 2 == 0 else ("off", "on")):
            if mode == "off":
                seconds = timed_block(step, steps)
            else:
                telemetry = start_sampling(NvmlReader(1), interval_ms, cuda=True)
                with telemetry.phase("block", index=pair, timed=True, samples=steps * batch):
                    seconds = timed_block(step, steps)
                out = folder / f"pair{pair}"
                out.mkdir()
                state = telemetry.finish(out)
                assert state["status"] == "ok", state
                path = out / "telemetry.node0.json.gz"
                doc = read_sidecar(path)
                samples = len(next(iter(doc["samples"].values()))["t_s"])
                sidecars.append({"bytes": path.stat().st_size, "samples": samples, "sampler": doc["sampler"],
                                 "energy_j": doc["phases"][0]["energy_j"]})
            blocks.append({"pair": pair, "mode": mode, "seconds": seconds, "images_per_s": steps * batch / seconds})
            print(f"pair {pair} {mode:>3}: {blocks[-1]['images_per_s']:9.1f} images/s ({seconds:.3f} s)", flush=True)
    rates = {m: [b["images_per_s"] for b in blocks if b["mode"] == m] for m in ("on", "off")}
    on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
    ticks = sorted(t for s in sidecars for t in [s["sampler"]["tick_read_s"]["median"]])
    return {"pairs": pairs, "steps_per_block": steps, "warmup_steps": warmup_steps, "batch": batch,
            "interval_ms": interval_ms, "blocks": blocks, "median_on_images_per_s": on,
            "median_off_images_per_s": off, "overhead_percent": 100 * (1 - on / off),
            "on_block_sidecars": sidecars, "tick_read_s_median_per_block": ticks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("telemetry_overhead.json"))
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup-steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=200, help="calls per NVML function in the loop cost")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("telemetry_overhead: needs a CUDA device")
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "loop_cost": loop_cost(args.repeats)}
    print("NVML call costs, median microseconds (idle GPUs):")
    for row in result["loop_cost"]:
        print("  cuda:{cuda_index} {name}: ".format(**row) + ", ".join(
            f"{k} {v * 1e6:.1f}" for k, v in row.items() if k not in ("cuda_index", "name") and v is not None))
    with tempfile.TemporaryDirectory() as folder:
        result["overhead"] = overhead(args.pairs, args.steps, args.warmup_steps, args.batch, args.interval_ms,
                                      Path(folder))
    o = result["overhead"]
    per_sample = sum(s["bytes"] for s in o["on_block_sidecars"]) / sum(s["samples"] for s in o["on_block_sidecars"])
    result["sidecar_bytes_per_sample_1gpu"] = per_sample
    result["sidecar_mb_per_hour_1gpu"] = per_sample * 3600e3 / args.interval_ms / 1e6
    tick_max = max(s["sampler"]["tick_read_s"]["max"] for s in o["on_block_sidecars"])
    overruns = sum(s["sampler"]["overruns"] for s in o["on_block_sidecars"])
    print(f"telemetry on: median {o['median_on_images_per_s']:.1f} images/s; off: {o['median_off_images_per_s']:.1f}; "
          f"overhead {o['overhead_percent']:+.3f} %")
    print(f"sampler tick (1 GPU, under training): median per block {[round(t * 1e6) for t in o['tick_read_s_median_per_block']]} us, "
          f"max {tick_max * 1e3:.2f} ms, {overruns} skipped ticks")
    print(f"sidecar: {per_sample:.1f} bytes per sample of 1 GPU (gzip) -> {result['sidecar_mb_per_hour_1gpu']:.2f} MB "
          f"per GPU-hour at {args.interval_ms} ms (from these short blocks)")
    args.out.write_text(json.dumps(result, indent=1))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
