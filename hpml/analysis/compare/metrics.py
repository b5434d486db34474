"""Each study's headline numbers, one value per result (a repeat), recomputed from the raw arrays as the study's own
report does, with the direction that is better. A workload without an entry here is listed by `hpml compare` as not
compared, never dropped silently. The values of the studies that train nothing (quantize, paleo, probe, cuda_vecadd,
dataloader) are analysis.compare.study_metrics', each through its study's own row builder.

Time to accuracy is not a per-result number like the others: a run that did not converge has no time. It is
compared as MLPerf scores it (analysis.compare.comparisons: olympic means, a non-converged run the slowest) beside the
converged fraction; here each result gives its time, or None when it did not converge.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

from hpml.analysis.compare import study_metrics as study
from hpml.analysis.train.efficiency import efficiency_of, techniques_of
from hpml.contract.result_format import timed_values


class NotMeasured(Exception):
    """A result holds the metric's raw numbers, but they say it was not measured (all its step times 0 s): the
    comparison leaves it out of the metric and names it with this reason (docs/decisions.md)."""


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str  # "lower" | "higher"
    value: Callable[[Mapping[str, Any]], Optional[float]]
    time_to_accuracy: bool = False  # compared the MLPerf way (olympic means, converged fraction)
    # for a time_to_accuracy metric: whether a result can have the number at all (energy needs NVML telemetry, a
    # cost a price), so that one without it is left out rather than counted as not converged
    measured: Optional[Callable[[Mapping[str, Any]], bool]] = None


def _epoch_time(doc: Mapping[str, Any]) -> Optional[float]:
    m = doc["measurements"]
    times = timed_values(m["epoch_time_s"], m)
    return statistics.fmean(times) if times else None


def _step_time_ms(doc: Mapping[str, Any]) -> Optional[float]:
    m = doc["measurements"]
    steps = [s for epoch in timed_values(m["step_time_s"], m) for s in epoch]
    if steps and not any(steps):  # a clock that ran reads more than 0 s for a step of real work
        raise NotMeasured(f"its {len(steps)} timed step times are all 0 s: not measured")
    return statistics.median(steps) * 1000 if steps else None


def _mfu_percent(doc: Mapping[str, Any]) -> Optional[float]:
    """MFU recomputed from the recorded inputs (analysis.train.efficiency); None on a CPU, an unknown GPU or a
    result that predates it."""
    found = efficiency_of(doc["measurements"], techniques_of(doc))
    return 100 * found["mfu"] if found["mfu"] is not None else None


def _throughput(doc: Mapping[str, Any]) -> Optional[float]:
    epoch = _epoch_time(doc)
    samples = doc["measurements"].get("samples_per_epoch")
    return samples / epoch if epoch and samples else None


def _evaluation(doc: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    evaluation = doc["measurements"].get("evaluation")
    return evaluation if isinstance(evaluation, dict) and evaluation.get("top1") else None


def _final_top1(doc: Mapping[str, Any]) -> Optional[float]:
    evaluation = _evaluation(doc)
    return 100 * evaluation["top1"][-1] if evaluation else None


def _time_to_accuracy(doc: Mapping[str, Any]) -> Optional[float]:
    """Seconds to the first evaluation at or above the target; None when the run never reached it."""
    evaluation, target = _evaluation(doc), (doc.get("derived") or {}).get("tta", {}).get("target")
    if not evaluation or target is None:
        return None
    from hpml.analysis.tta.runs import first_at_target

    hit = first_at_target(evaluation["top1"], target)
    return evaluation["elapsed_s"][hit] if hit is not None else None


def _has_target(doc: Mapping[str, Any]) -> bool:
    return _evaluation(doc) is not None and (doc.get("derived") or {}).get("tta", {}).get("target") is not None


_ENERGY: Dict[str, Any] = {}  # result path -> its PointEnergy (or None): two metrics read one sidecar once


def _point_energy(doc: Mapping[str, Any]):
    """The point's energy over its timed phases, all GPUs of all nodes, from its NVML sidecars
    (analysis.telemetry, as the report's energy table); None without telemetry."""
    if (doc.get("telemetry") or {}).get("status") != "ok" or not doc.get("path"):
        return None
    path = str(doc["path"])
    if path not in _ENERGY:
        from hpml.analysis.telemetry.points import gather

        points = gather([doc]).points
        _ENERGY[path] = points[0].energy if points else None
    return _ENERGY[path]


def _energy_per_phase(doc: Mapping[str, Any]) -> Optional[float]:
    energy = _point_energy(doc)
    return energy.per_phase_j if energy else None


def _energy_per_sample(doc: Mapping[str, Any]) -> Optional[float]:
    energy = _point_energy(doc)
    return energy.per_sample_j if energy else None


ENERGY = [Metric("energy per timed phase (epoch)", "J", "lower", _energy_per_phase),
          Metric("energy per sample", "J", "lower", _energy_per_sample)]


_TO_TARGET: Dict[str, Dict[str, Any]] = {}  # result path -> its numbers to target: four metrics read its sidecars once


def _to_target(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """The run's energy, energy per sample, GPU-hours and cost to target (analysis.tta.energy, as the time-to-accuracy
    report computes them); None each for a run that did not converge."""
    from hpml.analysis.tta.runs import tta_run

    if not doc.get("path"):  # not read from a file: nothing to key it by (and no sidecar to read)
        return tta_run({**doc, "path": ""})
    path = str(doc["path"])
    if path not in _TO_TARGET:
        _TO_TARGET[path] = tta_run(doc)
    return _TO_TARGET[path]


def _has_energy(doc: Mapping[str, Any]) -> bool:
    return (doc.get("telemetry") or {}).get("status") == "ok" and bool(doc.get("path"))


def _holds_gpus(doc: Mapping[str, Any]) -> bool:
    return bool(doc["config"]["resources"].get("gpus_per_node"))


def _priced(doc: Mapping[str, Any]) -> bool:
    return _holds_gpus(doc) and doc["config"]["workload"].get("gpu_hour_usd") is not None


def _to_target_metric(name: str, unit: str, key: str, measured: Callable[[Mapping[str, Any]], bool]) -> Metric:
    return Metric(name, unit, "lower", lambda doc: _to_target(doc)[key], time_to_accuracy=True, measured=measured)


TO_TARGET = [_to_target_metric("energy to target", "J", "energy_j", _has_energy),
             _to_target_metric("energy per sample to target", "J", "energy_per_sample_j", _has_energy),
             _to_target_metric("GPU-hours to target", "GPU-h", "gpu_hours", _holds_gpus),
             _to_target_metric("cost to target", "US$", "cost_usd", _priced)]


def _synthetic_images_per_s(doc: Mapping[str, Any]) -> Optional[float]:
    from hpml.analysis.synthetic.runs import synthetic_run

    totals = synthetic_run(doc)["totals"]
    return statistics.fmean(totals) if totals else None


def _allreduce_busbw(doc: Mapping[str, Any]) -> Optional[float]:
    from hpml.analysis.allreduce.tables import allreduce_rows

    rows = allreduce_rows(dict(doc))
    largest = max(rows, key=lambda row: row["bytes"]) if rows else None
    return largest["busbw_GBps"] if largest else None


TRAIN = [
    Metric("epoch time", "s", "lower", _epoch_time),
    Metric("step time (median)", "ms", "lower", _step_time_ms),
    Metric("MFU", "%", "higher", _mfu_percent),
    Metric("throughput", "samples/s", "higher", _throughput),
    Metric("held-out top-1 (last evaluation)", "%", "higher", _final_top1),
    Metric("time to accuracy", "s", "lower", _time_to_accuracy, time_to_accuracy=True),
    *TO_TARGET,
    *ENERGY,
]
HEADLINES: Dict[str, List[Metric]] = {
    "train": TRAIN,
    "synthetic": [Metric("images/s (all ranks)", "images/s", "higher", _synthetic_images_per_s), *ENERGY],
    "allreduce": [Metric("busbw at the largest size", "GB/s", "higher", _allreduce_busbw)],
    "quantize": [Metric("integer-only top-1", "%", "higher", study.quantize_integer_top1),
                 Metric("integer-only held-out pass (median)", "ms", "lower", study.quantize_integer_pass_ms),
                 Metric("torch.ao int8 held-out pass (median)", "ms", "lower", study.quantize_torch_ao_pass_ms)],
    "paleo": [Metric("forward (median)", "ms", "lower", study.paleo_forward_ms),
              Metric("sum of the layer times (medians)", "ms", "lower", study.paleo_layer_sum_ms),
              # a model's output, not a measurement: lower where the run's own matmul and copy peaks were higher
              Metric("PALEO forward at the measured peaks", "ms", "lower", study.paleo_predicted_ms)],
    "probe": [Metric("matmul bf16 (median)", "TFLOP/s", "higher", study.probe_matmul_bf16),
              Metric("device copy (median)", "GB/s", "higher", study.probe_copy),
              Metric("H2D pinned (median)", "GB/s", "higher", study.probe_h2d_pinned)],
    "cuda_vecadd": [Metric("kernel bandwidth, many_blocks explicit, largest K", "GB/s", "higher",
                           study.vecadd_kernel_GBps),
                    Metric("whole program, many_blocks explicit, largest K (median)", "ms", "lower",
                           study.vecadd_total_ms),
                    Metric("CPU loop bandwidth, largest K", "GB/s", "higher", study.vecadd_cpu_GBps)],
    "dataloader": [Metric("samples/s (timed epochs)", "samples/s", "higher", study.loader_samples_per_s),
                   Metric("first batch (mean)", "ms", "lower", study.loader_first_batch_ms)],
}


def applies(metric: Metric, doc: Mapping[str, Any]) -> bool:
    """Whether a result measures this metric at all (a run without evaluations has no accuracy or TTA)."""
    if metric.time_to_accuracy:
        return _has_target(doc) and (metric.measured is None or metric.measured(doc))
    try:
        return metric.value(doc) is not None
    except NotMeasured:  # it should have the number: the comparison names it as left out
        return True
