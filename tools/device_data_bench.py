"""The device data path against a plain loop and against the host path, side by side in ONE process (issue 21).

    python tools/device_data_bench.py epoch --data-root DIGITS [--rounds 3] [--epochs 8] [--out epoch.json]
    python tools/device_data_bench.py throughput [--rounds 2] [--epochs 4] [--out throughput.json]
    python tools/device_data_bench.py plain --data-root DIGITS [--seeds 5] [--epochs 8] [--out plain.json]
    python tools/device_data_bench.py profile --data-root DIGITS [--epochs 4] [--out profile.txt]
    python tools/device_data_bench.py launched SWEEP [SWEEP ...] [--plain plain.json ...] [--out launched.json]

epoch: the tta_digits preset's warm epoch (training steps + evaluation of the held-out split), three ways, in
    rounds whose order rotates so that a drift of clocks or temperature favours none:
    - hpml device: the train workload's own train() (workloads/train/__main__.py), data_placement=device;
    - hpml host:   the same with data_placement=host (the DataLoader path, the preset's loader_workers);
    - plain:       a loop written here: the training split as ONE normalized float tensor on the device, batches
                   sliced from torch.randperm on the device, the same model (hpml_cnn), batch, SGD (lr, momentum,
                   weight decay of the preset, constant rate), fp32 with TF32 and cudnn.benchmark as the preset,
                   the held-out split evaluated every epoch.
    hpml's epoch is what its time-to-accuracy clock sees: the difference of consecutive evaluations' elapsed_s
    (steps, per-epoch bookkeeping, evaluation). The plain epoch: wall clock from the epoch's start to the
    evaluation's accuracy on the host. Epoch 1 of each run is cold and dropped. Reported: median [min, max] of
    the warm epochs, pooled over rounds, and the ratios hpml device / plain and hpml host / hpml device.
throughput: ResNet-18 with the CIFAR stem, batch 512, bf16 autocast, channels_last, on CIFAR-shaped uint8 data
    (random pixels written in CIFAR-10's python format here, read by the real reader) with crop + flip + Cutout
    on the device path, against dataset=synthetic_device (random batches made once on the device: no data work
    at all) with the same steps per epoch; images/s = samples per epoch / epoch time over the warm epochs.

plain: only the plain loop, in a process of its own with no process group (the reference beside a launched sweep,
    issue 36): seeds 0..N-1, warm epochs (evaluation included).
profile: torch.profiler over hpml's train() (telemetry off) and over the plain loop, `--epochs` epochs each: the
    operators each calls per training step and their host time, to say which per-step work hpml adds.
launched: no GPU needed; the warm epochs of launched `experiment=tta_digits` sweeps as their results record them
    (measurements.epoch_time_s: the steps only; loop_time_s - eval_time_s adds the epoch record and checkpoint;
    loop_time_s adds the evaluation, as the plain epoch does), against the plain loop's from `--plain` files.

Runs on one GPU (or on the CPU, slowly: the numbers then say nothing of a GPU). Needs hydra-core and omegaconf
(to compose the presets as `hpml launch` does). Prints a table; every number goes to --out.
"""

from __future__ import annotations

import argparse
import json
import pickle
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from hydra import compose, initialize_config_module  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from hpml.conf.schema import config_from_dict  # noqa: E402
from hpml.launcher.config_store import register_schemas  # noqa: E402
from hpml.models.build import build_classifier  # noqa: E402
from hpml.workloads.common.cifar10 import CIFAR10_MEAN, CIFAR10_STD  # noqa: E402
from hpml.workloads.common.distributed import DistContext  # noqa: E402
from hpml.workloads.train.__main__ import train  # noqa: E402
from hpml.workloads.train.data import resolve_dataset  # noqa: E402
from hpml.workloads.train.device_data import decode_split  # noqa: E402
from hpml.workloads.train.measurements import Extras  # noqa: E402
from hpml.workloads.train.tta import EvaluationLog  # noqa: E402


def workload(overrides: List[str]):
    with initialize_config_module("hpml.conf", version_base="1.3"):
        values = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True, enum_to_str=True)
    return config_from_dict(values).workload


def process_group() -> DistContext:
    """A one-rank process group, as torchrun would give the worker (train() runs barriers and all-gathers)."""
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    backend = "nccl" if device.type == "cuda" else "gloo"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    return DistContext(rank=0, local_rank=0, world_size=1, device=device, backend=backend)


def hpml_run(cfg, ctx: DistContext, seed: int) -> EvaluationLog:
    """train() as the workload runs it; its evaluation record (top-1 and the TTA clock per evaluation)."""
    kind, _ = resolve_dataset(cfg)
    extras = Extras()
    with tempfile.TemporaryDirectory() as point_dir:
        train(cfg, seed, ctx, Path(point_dir), kind, extras)
    return extras.evaluations


def hpml_epochs(cfg, ctx: DistContext, seed: int) -> List[float]:
    """The warm epochs' seconds as the TTA clock sees them."""
    elapsed = hpml_run(cfg, ctx, seed).elapsed_s
    return [b - a for a, b in zip(elapsed, elapsed[1:])]  # drops epoch 1 (cold)


def as_float(split, device) -> tuple:
    mean = torch.tensor(CIFAR10_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR10_STD, device=device).view(1, 3, 1, 1)
    return ((split.images.to(device).float() / 255 - mean) / std).contiguous(), split.labels.to(device)


def plain_epochs(cfg, ctx: DistContext, seed: int, epochs: int) -> List[float]:
    """The reference loop: nothing of hpml's but the model builder and the decoded arrays."""
    device = ctx.device
    kind, _ = resolve_dataset(cfg)
    train_x, train_y = as_float(decode_split(cfg, kind, train=True), device)
    test_x, test_y = as_float(decode_split(cfg, kind, train=False), device)
    torch.manual_seed(seed)
    model = build_classifier(cfg.model, num_classes=cfg.num_classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    generator = torch.Generator(device=device).manual_seed(seed)
    batch, n = cfg.batch_size, len(train_y)
    seconds = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.train()
        order = torch.randperm(n, device=device, generator=generator)
        for step in range(n // batch):
            index = order[step * batch:(step + 1) * batch]
            loss = F.cross_entropy(model(train_x[index]), train_y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(test_x[i:i + batch]).argmax(1) == test_y[i:i + batch]).sum()
                          for i in range(0, len(test_y), batch))
        _accuracy = correct.item() / len(test_y)  # on the host: the epoch's work is done
        seconds.append(time.perf_counter() - start)
    return seconds[1:]


def plain_bench(args) -> Dict:
    """The plain loop alone in this process (no process group: nothing of hpml's runs here)."""
    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    ctx = DistContext(rank=0, local_rank=0, world_size=1, device=device, backend="none")
    cfg = workload(["experiment=tta_digits", f"workload.data_root={args.data_root}"])
    seconds: List[float] = []
    for seed in range(args.seeds):
        seconds += plain_epochs(cfg, ctx, seed, args.epochs)
        print(f"plain seed {seed}: warm epochs {['%.4f' % s for s in seconds[-args.epochs + 1:]]}", flush=True)
    return {"plain": summary(seconds)}


def per_step_ops(prof, steps: int, top: int = 25) -> str:
    """The operators by host time, each with its calls per training step."""
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    lines = [f"{'operator':48s} {'calls/step':>10s} {'host us/step':>12s}"]
    for event in rows[:top]:
        lines.append(f"{event.key[:48]:48s} {event.count / steps:10.2f} {event.self_cpu_time_total / steps:12.1f}")
    total = sum(e.self_cpu_time_total for e in rows) / steps
    lines.append(f"{'all operators':48s} {sum(e.count for e in rows) / steps:10.2f} {total:12.1f}")
    return "\n".join(lines)


def profile_bench(args, ctx: DistContext) -> Dict:
    from torch.profiler import ProfilerActivity, profile

    common = ["experiment=tta_digits", f"workload.data_root={args.data_root}", f"workload.epochs={args.epochs}",
              "workload.target_accuracy=null", "workload.save_model=false", "telemetry.enabled=false"]
    cfg = workload(common)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.device.type == "cuda" else [])
    texts = {}
    for name, run in (("hpml", lambda: hpml_run(cfg, ctx, 0)), ("plain", lambda: plain_epochs(cfg, ctx, 0,
                                                                                              args.epochs))):
        run()  # warm: cuDNN's choices and the allocator's pool, as the warm epochs of a run
        with profile(activities=activities) as prof:
            run()
        steps = args.epochs * (len(decode_split(cfg, resolve_dataset(cfg)[0], train=True).labels) // cfg.batch_size)
        texts[name] = per_step_ops(prof, steps)
        print(f"--- {name}: per training step (evaluation and set-up spread over the steps) ---\n{texts[name]}",
              flush=True)
    return {"profile": texts}


def warm(values: List[float], cold: List[int]) -> List[float]:
    return [v for i, v in enumerate(values) if i not in cold]


def launched_bench(args) -> Dict:
    """Warm epochs of launched sweeps, read from their results."""
    out: Dict = {}
    plain: List[float] = []
    for path in args.plain or []:
        plain += json.loads(Path(path).read_text())["plain"]["values"]
    if plain:
        out["plain (steps + evaluation)"] = summary(plain)
    for sweep in args.sweeps:
        steps, steps_record, loops = [], [], []
        for result in sorted(Path(sweep).glob("points/*/result.json")):
            m = json.loads(result.read_text())["measurements"]
            cold = m.get("cold_epochs") or [0]
            steps += warm(m["epoch_time_s"], cold)
            loops += warm(m["loop_time_s"], cold)
            steps_record += warm([a - b for a, b in zip(m["loop_time_s"], m["eval_time_s"])], cold)
        name = Path(sweep).name
        out[f"{name}: epoch_time_s (steps)"] = summary(steps)
        out[f"{name}: loop - eval (steps + record)"] = summary(steps_record)
        out[f"{name}: loop_time_s (+ evaluation)"] = summary(loops)
        if plain:
            out[f"{name}: epoch_time_s / plain"] = out[f"{name}: epoch_time_s (steps)"]["median"] / statistics.median(plain)
            out[f"{name}: loop_time_s / plain"] = out[f"{name}: loop_time_s (+ evaluation)"]["median"] / statistics.median(plain)
    return out


def summary(values: List[float]) -> Dict[str, float]:
    return {"n": len(values), "median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}


def epoch_bench(args, ctx: DistContext) -> Dict:
    common = ["experiment=tta_digits", f"workload.data_root={args.data_root}", f"workload.epochs={args.epochs}",
              "workload.target_accuracy=null", "workload.save_model=false", "telemetry.enabled=false"]
    modes = {"hpml device": lambda s: hpml_epochs(workload(common + ["workload.data_placement=device"]), ctx, s),
             "hpml host": lambda s: hpml_epochs(workload(common + ["workload.data_placement=host"]), ctx, s),
             "plain": lambda s: plain_epochs(workload(common), ctx, s, args.epochs)}
    names = list(modes)
    seconds: Dict[str, List[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names[r % 3:] + names[:r % 3]:
            seconds[name] += modes[name](r)
            print(f"round {r + 1}: {name}: warm epochs {['%.4f' % s for s in seconds[name][-args.epochs + 1:]]}",
                  flush=True)
    out = {name: summary(values) for name, values in seconds.items()}
    out["ratio_device_over_plain"] = out["hpml device"]["median"] / out["plain"]["median"]
    out["ratio_host_over_device"] = out["hpml host"]["median"] / out["hpml device"]["median"]
    return out


def write_random_cifar10(root: Path, train: int, test: int) -> None:
    """CIFAR-10's python layout with random pixels (the real reader reads it as it reads CIFAR-10)."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    sizes = {f"data_batch_{i}": train // 5 for i in range(1, 6)} | {"test_batch": test}
    for name, size in sizes.items():
        batch = {"data": rng.integers(0, 256, (size, 3072), dtype=np.uint8),
                 "labels": rng.integers(0, 10, size).tolist()}
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [str(i) for i in range(10)]}))


def throughput_bench(args, ctx: DistContext) -> Dict:
    common = ["workload.model=resnet18", "workload.cifar_stem=true", "workload.batch_size=512",
              "workload.precision=bf16", "workload.channels_last=true", f"workload.epochs={args.epochs}",
              "workload.checkpoint=false", "telemetry.enabled=false", "workload.synthetic_samples=50000"]
    rates: Dict[str, List[float]] = {"device path, crop + flip + Cutout": [], "synthetic_device": []}
    with tempfile.TemporaryDirectory() as root:
        write_random_cifar10(Path(root), 50000, 10000)
        overrides = {"device path, crop + flip + Cutout": [
            "workload.dataset=cifar10", f"workload.data_root={root}", "workload.data_placement=device",
            "workload.augment=true", "workload.cutout_holes=1", "workload.cutout_size=16"],
            "synthetic_device": ["workload.dataset=synthetic_device"]}
        names = list(rates)
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                cfg = workload(common + overrides[name])
                extras = Extras()
                with tempfile.TemporaryDirectory() as point_dir:
                    log = train(cfg, r, ctx, Path(point_dir), resolve_dataset(cfg)[0], extras)
                samples = extras.steps_per_epoch * cfg.batch_size
                rates[name] += [samples / max(ranks) for ranks in log.epoch_time_s_per_rank[1:]]
                print(f"round {r + 1}: {name}: {['%.0f' % x for x in rates[name][-args.epochs + 1:]]} images/s",
                      flush=True)
    out = {name: summary(values) for name, values in rates.items()}
    out["ratio_device_path_over_synthetic"] = (out["device path, crop + flip + Cutout"]["median"]
                                               / out["synthetic_device"]["median"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=["epoch", "throughput", "plain", "profile", "launched"])
    parser.add_argument("sweeps", nargs="*", help="launched: sweep folders of experiment=tta_digits")
    parser.add_argument("--data-root", help="the digits written by `hpml data digits` (epoch, plain, profile)")
    parser.add_argument("--seeds", type=int, default=5, help="plain: seeds 0..N-1")
    parser.add_argument("--plain", nargs="*", type=Path, help="launched: the plain part's --out files")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.part in ("epoch", "plain", "profile") and not args.data_root:
        parser.error(f"{args.part} needs --data-root")
    register_schemas()
    ctx = None
    if args.part == "launched":
        result = launched_bench(args)
    elif args.part == "plain":
        result = plain_bench(args)
    else:
        ctx = process_group()
        result = {"epoch": epoch_bench, "throughput": throughput_bench, "profile": profile_bench}[args.part](args, ctx)
    if args.part != "launched":
        result["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        result["torch"] = torch.__version__
    for name, value in result.items():
        if name == "profile":
            continue
        if isinstance(value, dict):
            print(f"{name:38s} median {value['median']:.4g} [{value['min']:.4g}, {value['max']:.4g}] n={value['n']}")
        else:
            print(f"{name:38s} {value if isinstance(value, str) else f'{value:.3f}'}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    if ctx is not None:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
