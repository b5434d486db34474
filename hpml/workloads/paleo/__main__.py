"""Per-layer forward timing for PALEO: one model's inference on one device, layer by layer and as a whole,
next to the device's peaks measured in the same run.

Started by torchrun, one worker (conf/workload/paleo.py allows one):
    python -m hpml.workloads.paleo --config <sweep>/points/<n>/config.yaml
It writes result.json beside the config.

  1. The model (models.build_classifier: hpml's own or torchvision's), eval mode, in workload.dtype (weights
     and inputs: model.to(dtype), no autocast), NHWC with workload.channels_last; on GPUs TF32 exactly as
     workload.tf32 says (cuBLAS and cuDNN: torch's cuDNN default is TF32 on, so false is set, not assumed),
     cuDNN benchmark mode as workload.cudnn_benchmark says. One random input batch, made once on the device.
  2. The layers' counts: models.stats.layers.count_forward on the same model and input shape: one row per
     leaf-module call in call order (FLOPs, parameter, input and output bytes at the run's dtype).
  3. Rounds (timing.py), under torch.inference_mode: workload.warmup_iters untimed forwards with and without
     hooks, then workload.repetitions rounds of (whole forward without hooks, forward timed layer by layer).
     The timed forward must call the same leaves in the same order as the counted one.
  4. The device's peaks (workloads/common/device_peaks.py): an n x n x n matmul in the run's dtype
     (fp32 with TF32 off, tf32, bf16 or fp16) and a device copy, raw times of every repetition; the
     published peaks of the device (conf/hardware/gpu_peaks.py, null off a known GPU) and of
     workload.reference_gpu (the study's K80), per board and per CUDA device.

Every time is kept per repetition; the analysis (analysis/paleo/) computes PALEO's predictions, PPP and
errors from them. `derived` is a quick look only: medians and the sum of the layers' medians.
"""

from __future__ import annotations

import platform
import statistics
from typing import Any, Dict, Sequence

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.hardware.gpu_peaks import peaks_by_key, peaks_for_device
from hpml.conf.workload.paleo import PaleoConfig
from hpml.models.build import build_classifier
from hpml.models.stats.layers import count_forward
from hpml.workloads.common.device_peaks import copy_times, matmul_times
from hpml.workloads.common.random_inputs import random_images
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.worker import start_worker
from hpml.workloads.paleo.timing import (
    FORWARD_METHOD_CPU,
    FORWARD_METHOD_CUDA,
    LAYER_METHOD_CPU,
    LAYER_METHOD_CUDA,
    run_rounds,
)

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def peak_dtype(cfg: PaleoConfig) -> str:
    """The matmul dtype whose peak the run's layers are compared with (conf/hardware/gpu_peaks.py's keys)."""
    if cfg.dtype.value == "float32":
        return "tf32" if cfg.tf32 else "fp32"
    return {"bfloat16": "bf16", "float16": "fp16"}[cfg.dtype.value]


def configure_backends(cfg: PaleoConfig, device: torch.device) -> Dict[str, Any]:
    """TF32 and cuDNN benchmark mode as the config says; returns what is in force (null on the CPU)."""
    if device.type != "cuda":
        return {"tf32_matmul": None, "tf32_cudnn": None, "cudnn_benchmark": None}
    torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
    torch.backends.cudnn.allow_tf32 = cfg.tf32
    torch.backends.cudnn.benchmark = cfg.cudnn_benchmark
    return {"tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "cudnn_benchmark": torch.backends.cudnn.benchmark}


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine() or "cpu"


def build(cfg: PaleoConfig, device: torch.device, seed: int):
    """(model, input) on the device, in the run's dtype and memory format."""
    torch.manual_seed(seed)
    memory_format = torch.channels_last if cfg.channels_last else torch.contiguous_format
    dtype = TORCH_DTYPES[cfg.dtype.value]
    model = build_classifier(cfg.model, num_classes=cfg.num_classes).eval()
    model = model.to(device=device, dtype=dtype, memory_format=memory_format)
    generator = torch.Generator(device=device).manual_seed(seed)
    x = random_images(cfg.batch_size, cfg.image_size, generator=generator, device=device)
    return model, x.to(dtype=dtype).contiguous(memory_format=memory_format)


def layer_records(model: torch.nn.Module, cfg: PaleoConfig) -> Dict[str, Any]:
    """The counted rows of one forward (models.stats.layers) and what the counter saw outside every leaf."""
    counted = count_forward(model, (3, cfg.image_size, cfg.image_size), cfg.batch_size, TORCH_DTYPES[cfg.dtype.value])
    rows = [{"name": row.name, "type": row.type, "kind": row.kind, "output_shape": list(row.output_shape),
             "activations": row.activations, "activation_bytes": row.activation_bytes,
             "input_bytes": row.input_bytes, "params": row.params, "param_bytes": row.param_bytes,
             "macs": row.macs, "flops": row.flops} for row in counted.rows]
    outside = counted.total_macs - sum(row.macs for row in counted.rows)
    return {"layers": rows, "outside_leaf_macs": outside}


def measure_peaks(cfg: PaleoConfig, device: torch.device, seed: int) -> Dict[str, Any]:
    """The device's matmul rate in the run's dtype and its copy bandwidth (raw times), and the published peaks
    of the device and of the reference GPU."""
    published = peaks_for_device(device_name(device)) if device.type == "cuda" else None
    reference = peaks_by_key(cfg.reference_gpu)
    return {
        "dtype": peak_dtype(cfg),
        "matmul": matmul_times(device, cfg.peak_matmul_n, peak_dtype(cfg), cfg.peak_warmup, cfg.peak_repetitions,
                               seed, warmup_s=cfg.peak_window_s, measure_s=cfg.peak_window_s),
        "copy": copy_times(device, cfg.peak_copy_bytes, cfg.peak_warmup, cfg.peak_repetitions, seed,
                           warmup_s=cfg.peak_window_s, measure_s=cfg.peak_window_s),
        "published": None if published is None else published.as_record(),
        "reference": {"board": reference.as_record(), "device": reference.per_device().as_record()},
    }


def measure(cfg: PaleoConfig, device: torch.device, seed: int, telemetry: Telemetry = NO_TELEMETRY) -> Dict[str, Any]:
    in_force = configure_backends(cfg, device)
    model, x = build(cfg, device, seed)
    with torch.inference_mode():
        counted = layer_records(model, cfg)
        names = [row["name"] for row in counted["layers"]]
        rounds = run_rounds(model, x, names, cfg.warmup_iters, cfg.repetitions,
                            phase=lambda r: telemetry.phase("round", index=r, timed=True))
    with telemetry.phase("peaks"):
        peaks = measure_peaks(cfg, device, seed)
    for i, layer in enumerate(counted["layers"]):
        layer["time_s"] = [times[i] for times in rounds["layer_s"]]
        layer["wall_s"] = [times[i] for times in rounds["layer_wall_s"]]
    return {
        "model": cfg.model, "device_name": device_name(device), "input_shape": list(x.shape),
        "dtype": cfg.dtype.value, "channels_last": cfg.channels_last, **in_force,
        "cpu_threads": torch.get_num_threads() if device.type == "cpu" else None,
        **counted,
        "forward_time_s": rounds["forward_s"], "forward_wall_s": rounds["forward_wall_s"],
        "peaks": peaks,
    }


def summarize(measurements: Dict[str, Any]) -> Dict[str, Any]:
    """A quick look (the analysis recomputes everything from the arrays): medians over repetitions."""
    forward = statistics.median(measurements["forward_time_s"])
    layers_sum = sum(statistics.median(layer["time_s"]) for layer in measurements["layers"])
    return {"forward_median_s": forward, "layer_sum_of_medians_s": layers_sum,
            "layer_sum_over_forward": layers_sum / forward if forward > 0 else None,
            "layer_calls": len(measurements["layers"]),
            "flops": sum(layer["flops"] for layer in measurements["layers"])}


def timing_methods(device: torch.device) -> Dict[str, str]:
    cuda = device.type == "cuda"
    return {"forward": FORWARD_METHOD_CUDA if cuda else FORWARD_METHOD_CPU,
            "layer": LAYER_METHOD_CUDA if cuda else LAYER_METHOD_CPU,
            "rounds": "warm-up forwards (with and without hooks) untimed, then each repetition: one whole forward, "
                      "then one forward timed layer by layer; all under torch.inference_mode",
            "peaks": "workloads/common/device_peaks.py: matmul_times and copy_times (their method strings are in "
                     "measurements.peaks); measured after the rounds"}


def print_summary(derived: Dict[str, Any], cfg: PaleoConfig, name: str) -> None:
    print(f"[rank 0] {cfg.model}, batch {cfg.batch_size}, {cfg.dtype.value} on {name}: forward "
          f"{derived['forward_median_s'] * 1e3:.3f} ms (median), sum of {derived['layer_calls']} layer calls "
          f"{derived['layer_sum_of_medians_s'] * 1e3:.3f} ms, ratio {derived['layer_sum_over_forward']:.2f}",
          flush=True)


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: PaleoConfig = worker.workload
    with worker.reporting(timing_methods(worker.ctx.device)) as body:
        measurements = measure(cfg, worker.ctx.device, worker.seed, worker.telemetry)
        body.update({"measurements": measurements, "derived": summarize(measurements)})
        if worker.ctx.is_main:
            print_summary(body["derived"], cfg, measurements["device_name"])


if __name__ == "__main__":
    main()
