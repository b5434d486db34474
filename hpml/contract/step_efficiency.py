"""How far a training step is from the device's limit (issue 44): MFU, and what bounds the step.

Standard library only: the train worker writes these numbers into result.json and the analysis recomputes them
from the inputs recorded beside them (`measurements.efficiency`), so both import the one rule.

MFU (model FLOPs utilization; torchtitan's and Lightning's definition)
    achieved FLOP/s = model FLOPs per sample (forward + backward, counted once by torch's FlopCounterMode:
                      2 FLOPs per multiply-accumulate; recomputation and the optimizer not counted)
                      x samples per step (every device, batch augmentation's copies included) / step time
    MFU             = achieved FLOP/s / (devices x the device's dense peak for the precision used)
The peak's dtype follows the precision: bf16 and fp16 autocast -> their tensor-core rate; tf32 (or fp32 with
TF32 allowed) -> tf32; fp32 -> the plain fp32 rate. No GPU, a GPU not in conf/hardware/gpu_peaks.py, or a
dtype it has no rate for: MFU is None, with the reason.

What bounds the step (`step_bound`), from per-step seconds measured on rank 0 (the inputs are recorded):
    busy share   = device compute time / busy wall time  (GPU: the union of the intervals of kernels other than
                                                          NCCL's, torch.profiler; None on a CPU. Both per step
                                                          of the same profiled steps: busy_s / busy_wall_s)
    data share   = loader wait per step / step time       (phase "data": the host waiting for next(loader))
    comm share   = exposed communication / step time     (DDP's no_sync probe: synced - no_sync median)
The busy share's two numbers come from one window (the busy probe's steps, after training): its kernel time over
the training's median step mixed two conditions, and where runs shared a host the share exceeded 1
(docs/results/tta_fashion_mnist/). A result written before busy_wall_s was recorded has none: its busy share is
busy_s / step_s, as it was computed then (`bound_of_record` gives such a record the verdict it had).
In this order, the first rule that holds:
    busy share >= GPU_BOUND_SHARE            -> GPU-bound (first: a busy GPU sets the pace, and the host that runs
                                                ahead of it blocks anywhere, in next(loader) too)
    data share >= DATA_BOUND_SHARE           -> data-bound
    comm share >= COMM_BOUND_SHARE           -> communication-bound
    no device timeline (CPU)                 -> CPU-bound (the host does the arithmetic itself)
    otherwise                                -> host-bound (the GPU idles between kernels while Python launches)
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

DATA_BOUND_SHARE = 0.25  # a quarter of the step waiting for data: the loader, not the model, sets the pace
COMM_BOUND_SHARE = 0.25  # a quarter of the step is all-reduce that backward could not hide
GPU_BOUND_SHARE = 0.80  # the device is busy 80 % of the step; below, it waits on the host between kernels

VERDICTS = ("GPU-bound", "data-bound", "communication-bound", "CPU-bound", "host-bound")

# precision (workload.precision) -> the key of conf/hardware/gpu_peaks.py's tflops table
PEAK_DTYPE = {"bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp32": "fp32"}


def peak_dtype(precision: str, tf32_in_force: bool) -> str:
    """The peak a step's matmuls and convolutions can reach: fp32 with TF32 allowed runs on TF32 tensor cores."""
    if precision == "fp32" and tf32_in_force:
        return "tf32"
    return PEAK_DTYPE[precision]


def achieved_tflops(flops_per_sample: float, samples_per_step: int, step_s: float) -> float:
    """Model TFLOP/s of the whole job (every device): FLOPs per sample x samples per step / step seconds."""
    return flops_per_sample * samples_per_step / step_s / 1e12


def mfu(flops_per_sample: Optional[float], samples_per_step: int, step_s: float, devices: int,
        peak_tflops_per_device: Optional[float], na_reason: Optional[str] = None) -> Dict[str, Any]:
    """{"achieved_tflops", "peak_tflops", "mfu", "na"}: "na" is None when MFU is known, else the reason."""
    achieved = None if flops_per_sample is None else achieved_tflops(flops_per_sample, samples_per_step, step_s)
    if na_reason is None and flops_per_sample is None:
        na_reason = "the model's FLOPs were not counted"
    if na_reason is None and peak_tflops_per_device is None:
        na_reason = "no peak for this device and precision"
    if na_reason is not None:
        return {"achieved_tflops": achieved, "peak_tflops": None, "mfu": None, "na": na_reason}
    peak = devices * peak_tflops_per_device
    return {"achieved_tflops": achieved, "peak_tflops": peak, "mfu": achieved / peak, "na": None}


def _share(part: Optional[float], whole: float) -> Optional[float]:
    return None if part is None else max(0.0, part) / whole


def step_bound(step_s: float, data_s: float, comm_s: Optional[float], busy_s: Optional[float],
               per_device_batch: int, busy_wall_s: Optional[float] = None,
               settings: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The verdict on what bounds a step, its shares and the knob that would move it.

    step_s: median step time (wall, step end to step end); data_s: median loader wait per step; comm_s: exposed
    communication per step (None: not measured or one worker); busy_s: device busy time per step (None: no GPU
    timeline, i.e. a CPU run or the probe off; NCCL's kernels are not in it); busy_wall_s: wall time per step of
    the steps busy_s was measured over, the busy share's denominator (None: not recorded, a result written before
    it was; step_s then, as then); settings: the run's techniques (`precision`, `channels_last`, `compile`,
    `cuda_graphs`; `batch_prep` where the device path ran), so that the knob names only settings the run does not use already and may be combined with
    what it does (None: every knob, as before the settings were passed)."""
    if step_s <= 0:
        raise ValueError(f"step time {step_s!r}: must be > 0")
    if busy_wall_s is not None and busy_wall_s <= 0:
        raise ValueError(f"busy probe's wall time per step {busy_wall_s!r}: must be > 0")
    shares = {"data": _share(data_s, step_s), "comm": _share(comm_s, step_s),
              "busy": _share(busy_s, step_s if busy_wall_s is None else busy_wall_s)}
    if shares["busy"] is not None and shares["busy"] >= GPU_BOUND_SHARE:
        verdict = "GPU-bound"
        knob = gpu_bound_knob(settings)
    elif shares["data"] >= DATA_BOUND_SHARE:
        verdict = "data-bound"
        knob = ("the step waits for its batch: more workload.loader_workers, or workload.data_placement=device "
                "(the data set on the GPU)")
    elif shares["comm"] is not None and shares["comm"] >= COMM_BOUND_SHARE:
        verdict = "communication-bound"
        knob = (f"per-GPU batch {per_device_batch} leaves the all-reduce exposed: a larger batch per GPU (more "
                "compute to hide it behind), fewer GPUs, or a faster link")
    elif shares["busy"] is None:
        verdict = "CPU-bound"
        knob = "the CPU does the arithmetic: run on a GPU, or a smaller model or batch"
    else:
        verdict = "host-bound"
        knob = host_bound_knob(per_device_batch, settings)
    return {"verdict": verdict, "knob": knob, "shares": shares,
            "thresholds": {"data": DATA_BOUND_SHARE, "comm": COMM_BOUND_SHARE, "busy": GPU_BOUND_SHARE}}


def gpu_bound_knob(settings: Optional[Mapping[str, Any]]) -> str:
    """Cheaper arithmetic the run does not use yet (with the whole-step graph, compile=default: the modes that
    replay torch's own graphs cannot go inside it), else more GPUs."""
    given = settings or {}
    options = []
    if given.get("precision") not in ("bf16", "fp16"):
        options.append("workload.precision=bf16")
    if not given.get("channels_last"):
        options.append("workload.channels_last=true")
    if given.get("cuda_graphs"):
        if given.get("compile", "none") == "none":
            options.append("workload.compile=default (its fused kernels inside the graph)")
    elif given.get("compile") != "max_autotune":
        options.append("workload.compile=max_autotune")
    if not options:
        return "the GPU is busy with the cheaper-arithmetic settings on: more GPUs, or a smaller model"
    return f"the GPU is busy: cheaper arithmetic ({', '.join(options)}) or more GPUs"


def host_bound_knob(per_device_batch: int, settings: Optional[Mapping[str, Any]]) -> str:
    """A larger batch per GPU, and the graph options the run does not use yet."""
    given = settings or {}
    head = f"per-GPU batch {per_device_batch} is host-bound (the GPU idles between kernels): "
    if given.get("cuda_graphs"):  # one replay a step already: the host's per-step work is the batch's own kernels
        fewer = "a larger batch per GPU (at this global batch, fewer GPUs)"
        if given.get("batch_prep") == "step":  # the device path making each batch with its own ~20 launches
            return head + "workload.batch_prep=epoch (the epoch's batches made at its start) or " + fewer
        return head + fewer
    options = ["a larger batch per GPU", "workload.cuda_graphs=true"]
    if given.get("compile") not in ("reduce_overhead", "max_autotune"):
        options.append("workload.compile=reduce_overhead")
    return head + ", ".join(options[:-1]) + f" or {options[-1]}"


def bound_of_record(record: Mapping[str, Any], settings: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """step_bound recomputed from the inputs a result recorded (measurements.efficiency.bound_inputs); a record
    without busy_wall_s (written before it was recorded) gets its busy share over step_s, the verdict it had."""
    return step_bound(record["step_s"], record["data_s"], record.get("comm_s"), record.get("busy_s"),
                      record["per_device_batch"], record.get("busy_wall_s"), settings)
