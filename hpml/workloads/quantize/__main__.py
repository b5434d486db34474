"""Post-training quantization of a small CNN to 8-bit fixed point, stage by stage (docs/studies/quantization.md).

Started by torchrun, one worker on the CPU:
    python -m hpml.workloads.quantize --config <sweep>/points/<n>/config.yaml

1. the float model: trained here (seeded by sweep.seed) or read from workload.model_path (float_model.py);
2. the model as a chain of layers, batch norm folded (plan.py), checked against the model's own forward;
3. calibration: the float activations over workload.calibration_samples training images (calibration.py);
4. scales and integers: weights int8 per tensor or per channel, the input and each layer's output int8, biases
   int32 at s_in * s_w, requantizers M = s_in s_w / s_out (quantized_net.py, fixed_point.py); every quantized
   tensor checked to be an integer in range;
5. the stages on the held-out split, each timed: float, W8, W8A8, W8A8B32 simulated in float32 (simulated.py),
   and the integer-only inference of W8A8B32 (integer_only.py);
6. the torch.ao cross-check on the same model and calibration images (torch_ao.py), or one line why not.

result.json's layout: contract/quantize_format.py.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.workload.quantize import QuantizeConfig
from hpml.contract.quantize_format import STAGES, agreement, payload_bytes, top1
from hpml.workloads.common.worker import start_worker
from hpml.workloads.quantize import torch_ao
from hpml.workloads.quantize.calibration import calibration_activations, summary
from hpml.workloads.quantize.data import calibration_images, load_splits
from hpml.workloads.quantize.float_model import FloatModel, loaded, train, untrained
from hpml.workloads.quantize.integer_only import Observed, integer_forward
from hpml.workloads.quantize.plan import build_plan
from hpml.workloads.quantize.quantized_net import QuantizedNet, ScaleRule, layer_record, quantize_net
from hpml.workloads.quantize.simulated import SIMULATED, stage_forward
from hpml.workloads.quantize.stages import TIMING_METHOD, serialized_bytes, timed_passes

PLAN_CHECK_IMAGES = 16  # held-out images the chain is checked on against the model's own forward


def scale_rule(cfg: QuantizeConfig) -> ScaleRule:
    return ScaleRule(cfg.scale_method.value, cfg.sigma_k, cfg.power_of_two,
                     cfg.weight_granularity.value == "per_channel", cfg.requantize.value)


def layer_records(net: QuantizedNet, activations: List[torch.Tensor], bins: int) -> List[Dict]:
    return [{"name": q.layer.name, "kind": q.layer.kind, "modules": q.layer.modules,
             "weight_shape": list(q.weight_q.shape), "relu": q.layer.relu,
             "weight": summary(q.layer.weight, bins), "output": summary(output, bins), **layer_record(q)}
            for q, output in zip(net.layers, activations[1:])]


def float_model(cfg: QuantizeConfig, seed: int) -> FloatModel:
    torch.manual_seed(seed)
    return loaded(cfg.model_path) if cfg.model_path else untrained(cfg, seed)


def torch_ao_block(cfg: QuantizeConfig) -> Dict:
    if not cfg.torch_ao:
        return {"available": False, "reason": "workload.torch_ao=false", "engine": None, "notes": []}
    reason = torch_ao.unavailable(cfg.torch_ao_engine.value)
    if reason:
        return {"available": False, "reason": reason, "engine": None, "notes": []}
    return {"available": True, "reason": None, **torch_ao.engine_block(cfg.torch_ao_engine.value), "notes": []}


def run(cfg: QuantizeConfig, seed: int) -> Dict:
    fm = float_model(cfg, seed)
    train_split, test = load_splits(cfg, fm.mean, fm.std, fm.padding)
    training = train(fm.model, train_split, cfg, seed) if fm.source == "trained" else None
    calibration = calibration_images(train_split, cfg.calibration_samples, seed)
    plan = build_plan(fm.model, test.images[:PLAN_CHECK_IMAGES])
    activations = calibration_activations(plan, calibration, cfg.eval_batch_size)
    net = quantize_net(plan, activations, scale_rule(cfg))
    observed = Observed()
    with torch.inference_mode():
        integer_forward(net, test.images, observed)  # every int8 tensor of the held-out pass, checked below

    forwards = {stage: stage_forward(net, stage) for stage in SIMULATED}
    forwards["integer"] = lambda x: integer_forward(net, x)
    sizes = {stage: serialized_bytes(net, stage) for stage in STAGES}
    ao = torch_ao_block(cfg)
    if ao["available"]:
        models, ao_sizes, ao["notes"] = torch_ao.cross_check(fm.model, net, ao["engine"], calibration,
                                                             cfg.eval_batch_size)
        forwards.update(models)
        sizes.update(ao_sizes)
    elif cfg.torch_ao:
        print(f"[quantize] {ao['reason']}", flush=True)
    stages = {}
    for stage, forward in forwards.items():
        predictions, seconds = timed_passes(forward, test.images, cfg.eval_batch_size, cfg.timing_warmup,
                                            cfg.timing_repetitions)
        stages[stage] = {"predictions": predictions, "inference_s": seconds, "serialized_bytes": sizes[stage]}
    return {
        "model": fm.record,
        "data": {"dataset": cfg.dataset.value, "train_samples": len(train_split.labels),
                 "test_samples": len(test.labels), "calibration_samples": len(calibration),
                 "classes": test.classes, "normalize": {"mean": fm.mean, "std": fm.std}},
        "training": training,
        "threads": torch.get_num_threads(),
        "labels": test.labels.tolist(),
        "stages": stages,
        "input": {**summary(activations[0], cfg.histogram_bins), "scale": net.input_scale, "range": net.input_range},
        "layers": layer_records(net, activations, cfg.histogram_bins),
        "checks": [check.as_dict() for check in net.checks] + observed.checks(net),
        "torch_ao": ao,
    }


def derive(measurements: Dict) -> Dict:
    labels = measurements["labels"]
    stages = measurements["stages"]
    derived = {f"top1_{stage}": top1(record["predictions"], labels) for stage, record in stages.items()}
    derived.update({f"payload_bytes_{stage}": payload_bytes(stage, measurements["layers"]) for stage in STAGES})
    derived["all_checks_in_range"] = all(check["in_range"] for check in measurements["checks"])
    derived["integer_agrees_with_w8a8b32"] = agreement(stages["integer"]["predictions"],
                                                       stages["w8a8b32"]["predictions"])
    return derived


def print_summary(derived: Dict) -> None:
    line = ", ".join(f"{key[5:]} {value:.2%}" for key, value in derived.items() if key.startswith("top1_"))
    print(f"[quantize] held-out top-1: {line}; integer vs W8A8B32 predictions agree on "
          f"{derived['integer_agrees_with_w8a8b32']:.2%}", flush=True)


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: QuantizeConfig = worker.workload
    with worker.reporting({"inference": TIMING_METHOD}) as body:
        measurements = run(cfg, worker.seed)
        body["measurements"] = measurements
        body["derived"] = derive(measurements)
        print_summary(body["derived"])


if __name__ == "__main__":
    main()
