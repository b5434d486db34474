"""MFU and what bounds the step, measured in the train worker (the rules: contract/step_efficiency.py).

- FLOPs: the model's forward and backward FLOPs per sample, counted once per model and input shape on the meta
  device (models/stats/training_flops.py), for the shape of the batches the run trained on.
- Peak: the device's dense peak for the precision used (conf/hardware/gpu_peaks.py), per device; None with the
  reason on a CPU, on a GPU not in the table, or for a dtype it has no rate for.
- Busy share (GPU, workload.bound_probe_steps > 0): after training, that many real steps under torch.profiler
  (device activity only); the union of the intervals of the kernels other than NCCL's on the device per step is
  the device's busy time (overlapping kernels of several streams count once; an NCCL kernel waiting for a slower
  rank is communication, judged by the comm probe, not compute). It is compared with the wall time of the same
  steps (`steps_wall_s_per_step`, recorded as bound_inputs.busy_wall_s), timed inside the profiler after it
  started and before it stopped. The whole window (`profiled_wall_s_per_step`, kept as it was) read 1.3-3.7x the
  median step in the H100 runs, 3.7x for the graphed step that launches once per step: mostly the profiler's
  start and stop (inferred, not timed apart), which would make a busy GPU read idle. Against the epochs' median
  step, as before, two conditions were mixed: runs sharing a host read shares above 1.
`efficiency_record` gathers the inputs (recorded in result.json as measurements.efficiency) and the numbers
derived from them.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.contract.step_efficiency import mfu, peak_dtype, step_bound
from hpml.models.stats.training_flops import training_flops_per_sample

FLOPS_METHOD = ("torch.utils.flop_counter.FlopCounterMode over forward + cross-entropy + backward of the model on "
                "the meta device at batch 2, / 2 (matrix products only, 2 FLOPs per MAC; no recomputation, no "
                "optimizer); MFU = FLOPs/sample x samples/step / median timed step / (devices x dense peak)")
BUSY_METHOD = ("after training, workload.bound_probe_steps real steps under torch.profiler (CUDA activity): "
               "union of the intervals of kernels other than NCCL's on the device per step (busy_s_per_step; with "
               "NCCL's: any_kernel_s_per_step), against the wall time per step of the same steps, timed inside the "
               "profiler (steps_wall_s_per_step; profiled_wall_s_per_step: the profiler's start and stop included)")


def count_flops(model_name: str, num_classes: int, cifar_stem: bool, input_shape: Sequence[int]) -> Dict[str, Any]:
    """{"flops_per_sample", "input_shape", "error"}: a model the counter cannot trace on the meta device gives
    None with torch's message (MFU then reads n/a with it)."""
    try:
        flops = training_flops_per_sample(model_name, num_classes, cifar_stem, tuple(input_shape))
        return {"flops_per_sample": flops, "input_shape": list(input_shape), "error": None}
    except (RuntimeError, NotImplementedError, ValueError) as error:  # an op with no meta kernel
        return {"flops_per_sample": None, "input_shape": list(input_shape),
                "error": f"FLOPs not counted: {str(error).splitlines()[0] if str(error) else type(error).__name__}"}


def device_peak(device: torch.device, precision: str, tf32: bool) -> Dict[str, Any]:
    """{"device_name", "dtype", "peak_tflops_per_device", "na"}: the dense peak the step could reach."""
    dtype = peak_dtype(precision, tf32)
    if device.type != "cuda":
        return {"device_name": "cpu", "dtype": dtype, "peak_tflops_per_device": None,
                "na": "CPU: no dense peak is published for this host (MFU is measured on GPUs)"}
    name = torch.cuda.get_device_name(device)
    peaks = peaks_for_device(name)
    if peaks is None:
        return {"device_name": name, "dtype": dtype, "peak_tflops_per_device": None,
                "na": f"GPU {name!r} is not in conf/hardware/gpu_peaks.py"}
    rate = peaks.per_device().tflops[dtype]
    return {"device_name": name, "dtype": dtype, "peak_tflops_per_device": rate, "peaks_key": peaks.key,
            "na": None if rate is not None else f"{peaks.name} has no {dtype} rate"}


def merged_busy_us(intervals: Iterable[Tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals: time in which at least one kernel ran."""
    busy, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
    return busy


def device_busy_probe(run_steps: Callable[[int], None], steps: int) -> Dict[str, Any]:
    """GPU: seconds per step in which a kernel ran, over `steps` real steps under torch.profiler."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    run_steps(1)  # untimed: the profiler's first step pays its own set-up
    torch.cuda.synchronize()
    began = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        steps_began = time.perf_counter()  # the profiler has started: its start is not the steps' time
        run_steps(steps)
        torch.cuda.synchronize()
        steps_wall = time.perf_counter() - steps_began  # every kernel of the steps has ended
    wall = time.perf_counter() - began
    kernels = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()
               if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start]
    compute = [(a, b) for name, a, b in kernels if "nccl" not in name.lower()]
    return {"steps": steps, "kernels": len(kernels),
            "busy_s_per_step": merged_busy_us(compute) / 1e6 / steps,  # NCCL's kernels left out (the verdict's)
            "any_kernel_s_per_step": merged_busy_us((a, b) for _, a, b in kernels) / 1e6 / steps,
            "steps_wall_s_per_step": steps_wall / steps,  # the busy share's denominator (bound_inputs.busy_wall_s)
            "profiled_wall_s_per_step": wall / steps, "method": BUSY_METHOD}


def median_timed(per_epoch: List[List[float]], timed: List[int]) -> float:
    return statistics.median(v for i in timed for v in per_epoch[i])


def efficiency_record(*, flops: Dict[str, Any], peak: Dict[str, Any], step_time_s: List[List[float]],
                      data_time_s: List[List[float]], timed: List[int], samples_per_step: int, devices: int,
                      per_device_batch: int, comm_s: Optional[float],
                      busy: Optional[Dict[str, Any]], settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """measurements.efficiency: what MFU and the verdict are computed from, and both."""
    step_s = median_timed(step_time_s, timed)
    data_s = median_timed(data_time_s, timed)
    busy_s = None if busy is None else busy["busy_s_per_step"]
    busy_wall_s = None if busy is None else busy["steps_wall_s_per_step"]  # busy_s's own steps, not step_s's
    inputs = {"step_s": step_s, "data_s": data_s, "comm_s": comm_s, "busy_s": busy_s, "busy_wall_s": busy_wall_s,
              "per_device_batch": per_device_batch}
    rates = mfu(flops["flops_per_sample"], samples_per_step, step_s, devices, peak["peak_tflops_per_device"],
                flops["error"] or peak["na"])
    return {"flops": flops, "peak": peak, "samples_per_step": samples_per_step, "devices": devices,
            "bound_inputs": inputs, "busy_probe": busy, **rates, "bound": step_bound(**inputs, settings=settings),
            "method": FLOPS_METHOD}
