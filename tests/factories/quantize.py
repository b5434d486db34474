"""Quantize results (workloads/quantize/, contract/quantize_format.py) whose predictions and pass times are chosen by
the test: what analysis.quantize.runs reads, one layer of the homework CNN. The report's figures need the weight and
activation summaries a real run writes: the committed sweeps (docs/results/quantization_digits/) have them."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from hpml.contract.quantize_format import STAGES, TORCH_AO_STAGES
from tests.factories import envelope

WORKLOAD = {"name": "quantize", "device": "cpu", "backend": "auto", "model": "hw5_cnn", "num_classes": 10,
            "dataset": "digits", "data_root": None, "model_path": None, "epochs": 1, "batch_size": 32, "lr": 0.01,
            "momentum": 0.9, "weight_decay": 0.0005, "calibration_samples": 64, "scale_method": "maxabs",
            "sigma_k": 3.0, "power_of_two": False, "weight_granularity": "per_tensor", "requantize": "fixed_point",
            "histogram_bins": 20, "eval_batch_size": 500, "timing_warmup": 0, "timing_repetitions": 3,
            "torch_ao": True, "torch_ao_engine": "auto"}
CONV1 = {"name": "conv1", "kind": "conv", "weight_shape": [6, 3, 5, 5], "relu": True, "weights": 450, "biases": 6,
         "weight_scale": [0.01], "requantize": {"kind": "fixed_point"}}


def quantize_result(point: int, labels: Sequence[int], predictions: Mapping[str, Sequence[int]],
                    inference_s: Mapping[str, Sequence[float]], *, repeat: int = 0, sweep: str = "quantize",
                    torch_ao: bool = True, workload: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One point. predictions and inference_s: per stage, what a stage not named gets is the labels themselves and
    [0.01]; without torch_ao, the cross-check's stages are absent (torch_ao: "not run")."""
    doc = envelope({**WORKLOAD, **(workload or {})}, point=point, sweep=sweep, repeat=repeat)
    stages = STAGES + (TORCH_AO_STAGES if torch_ao else ())
    ao = ({"available": True, "reason": None, "engine": "x86", "engine_reason": "chosen by the test", "notes": []}
          if torch_ao else {"available": False, "reason": "workload.torch_ao=false", "engine": None, "notes": []})
    doc["measurements"] = {
        "model": {"name": "hw5_cnn", "parameters": 62006, "source": "trained", "model_path": None},
        "data": {"dataset": "digits", "train_samples": 100, "test_samples": len(labels), "calibration_samples": 64},
        "training": None, "threads": 1, "labels": list(labels),
        "stages": {stage: {"predictions": list(predictions.get(stage, labels)),
                           "inference_s": list(inference_s.get(stage, [0.01])), "serialized_bytes": 2000}
                   for stage in stages},
        "input": {"scale": 0.02, "range": 2.54}, "layers": [CONV1], "checks": [], "torch_ao": ao,
    }
    doc["derived"] = {"top1_integer": 2.0}  # wrong on purpose: the analysis must recompute
    return doc
