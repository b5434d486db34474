"""One quantize result -> one run record: every number recomputed from the raw arrays (contract/quantize_format.py):
top-1 per stage from its predictions and the labels, bytes per stage from the layer counts, inference time per
stage as the median of its timed passes.

Grouping: a run's configuration is its config without where and how it ran (analysis.configuration drops sweep.*,
so seeds and repeats of one preset are one configuration) and without workload.model_path: the models kept by one
training sweep, quantized one per point, are repeats of one configuration, not configurations of their own.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Mapping

from hpml.analysis.configuration import configuration_items, items_key
from hpml.contract.quantize_format import STAGES, TORCH_AO_STAGES, agreement, payload_bytes, top1

WHERE_KEYS = ("workload.model_path",)


def quantize_configuration(config: Mapping[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in configuration_items(config).items() if key not in WHERE_KEYS}


def quantize_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    m = doc["measurements"]
    labels, stages = m["labels"], m["stages"]
    missing = [stage for stage in STAGES if stage not in stages]
    if missing:
        raise KeyError(f"stages {', '.join(missing)}")
    items = quantize_configuration(doc["config"])
    run: Dict[str, Any] = {
        "sweep": doc["identity"]["sweep"], "point": doc["identity"]["point"], "seed": doc["config"]["sweep"]["seed"],
        "config_key": items_key(items), "config_items": items, "workload": doc["config"]["workload"],
        "model": m["model"]["name"], "model_source": m["model"]["source"], "parameters": m["model"]["parameters"],
        "test_samples": len(labels), "calibration_samples": m["data"]["calibration_samples"],
        "threads": m["threads"], "layers": m["layers"], "input": m["input"], "checks": m["checks"],
        "torch_ao": m["torch_ao"], "cpu": doc["environment"].get("cpu"),
        "stages": [stage for stage in STAGES + TORCH_AO_STAGES if stage in stages],
    }
    for stage in run["stages"]:
        record = stages[stage]
        run[f"top1_{stage}"] = top1(record["predictions"], labels)
        run[f"inference_s_{stage}"] = statistics.median(record["inference_s"])
        run[f"serialized_bytes_{stage}"] = record["serialized_bytes"]
        run[f"payload_bytes_{stage}"] = payload_bytes(stage, m["layers"]) if stage in STAGES else None
    integer = stages["integer"]["predictions"]
    for other in ("w8a8b32", "torch_ao_hpml"):
        if other in stages:
            run[f"integer_agrees_{other}"] = agreement(integer, stages[other]["predictions"])
    return run
