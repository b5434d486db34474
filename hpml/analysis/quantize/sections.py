"""The quantize report's sections, per configuration: accuracy, size and time per stage beside the float model
(quantize_stages.csv), the bars (quantize_bars.csv), the scales per layer of one run (quantize_scales.csv), the
range checks (quantize_checks.csv), and the weight and activation histograms of that run. Formatting only: the
numbers come from analysis.quantize.tables."""

from __future__ import annotations

from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.quantize.plots import activations_png, weights_png
from hpml.analysis.quantize.tables import bar_frame, check_frame, run_frame, scale_frame, stage_frame
from hpml.analysis.stats import SAMPLE_DDOF, differing_labels, natural_key
from hpml.report_kit.numbers import is_missing, number
from hpml.report_kit.sections import Figure, Section, Table

INTRO = (
    "Post-training quantization to symmetric 8-bit fixed point (docs/studies/quantization.md): s = r / 127 for a "
    "range r (max|x|, or min(max|x|, |mean| + kσ)), q = clamp(round(x / s), −128, 127). Stages: W8 quantizes the "
    "weights; W8A8 also the image and every layer's output (an input scale and one output scale per layer, from "
    "the calibration images); W8A8B32 also the biases (int32, scale s_in · s_w); these three are simulated in "
    "float32 with the quantized values. The integer-only stage computes W8A8B32 with integers: int32 sums of "
    "int8 products, the int32 bias, then M = s_in s_w / s_out applied as the run's requantizer. Top-1 on the "
    "held-out split, mean ± sample std (ddof=" f"{SAMPLE_DDOF}) over the runs (n: one trained model each); "
    "Δ float: the difference from the float model taken run by run. Bytes: the numbers a stage stores "
    "(contract/quantize_format.py) and its torch.save size. Time: one pass over the held-out split on the CPU, "
    "median [min, max] of the runs' medians; hpml's stages run generic torch kernels (a simulation, and an "
    "integer matmul without int8 SIMD), torch.ao's run its engine's int8 kernels.")

STAGE_HEADERS = ["stage", "runs (n)", "top-1 [%] mean ± std", "[min, max]", "Δ float [points] mean ± std",
                 "bytes stored", "torch.save bytes", "held-out pass [ms] median [min, max]"]
SCALE_HEADERS = ["layer", "kind", "weights", "r (output)", "weight r", "s_w", "s_in", "s_out", "bias scale s_in·s_w",
                 "requantize", "M = s_in·s_w/s_out", "M0", "shift", "int32 bound"]
CHECK_HEADERS = ["tensor", "dtype", "allowed", "observed [min, max]", "values", "clipped", "runs in range",
                 "max abs accumulator / int32 bound"]
STAGE_LABELS = {"float": "float", "w8": "W8", "w8a8": "W8A8", "w8a8b32": "W8A8B32", "integer": "integer-only",
                "torch_ao_own": "torch.ao own", "torch_ao_hpml": "torch.ao, hpml's scales"}
BAR_HEADERS = ["bar", "difference of means [points]", "verdict"]



def stage_rows(frame: pd.DataFrame) -> List[List[Any]]:
    return [[r["title"], r["runs"], f"{r['top1_pct_mean']:.2f} ± {r['top1_pct_std']:.2f}",
             f"[{r['top1_pct_min']:.2f}, {r['top1_pct_max']:.2f}]",
             f"{r['delta_pts_mean']:+.2f} ± {r['delta_pts_std']:.2f}", number(r["payload_bytes"], ",.0f"),
             f"{r['serialized_bytes']:,}",
             f"{r['inference_ms_median']:.1f} [{r['inference_ms_min']:.1f}, {r['inference_ms_max']:.1f}]"]
            for r in frame.to_dict("records")]


def run_table(frame: pd.DataFrame) -> Table:
    stages = [c.removeprefix("top1_pct_") for c in frame.columns if c.startswith("top1_pct_")]
    headers = ["seed", "point"] + [f"{STAGE_LABELS[s]} [%]" for s in stages] + ["integer = W8A8B32 [%]"]
    rows = [[r["seed"], r["point"]] + [f"{r[f'top1_pct_{s}']:.2f}" for s in stages] +
            [f"{r['integer_agrees_w8a8b32'] * 100:.2f}"] for r in frame.to_dict("records")]
    return Table("quantize_runs", headers, rows, frame)


def bar_rows(frame: pd.DataFrame) -> List[List[Any]]:
    return [[r["bar"], f"{r['difference_pts']:+.2f}", "pass" if r["passes"] else "FAIL"]
            for r in frame.to_dict("records")]


def scale_rows(frame: pd.DataFrame) -> List[List[Any]]:
    return [[r["layer"], r["kind"], r["shape"], number(r["range"], ".4g"), r["weight_range"], r["weight_scale"],
             number(r["input_scale"], ".6g"), number(r["output_scale"], ".6g"), r["bias_scale"], r["requantize"],
             r["multiplier"], r["m0"], r["shift"], number(r["int32_bound"], ",.0f")] for r in frame.to_dict("records")]


def check_rows(frame: pd.DataFrame) -> List[List[Any]]:
    body = []
    for r in frame.to_dict("records"):
        acc = "" if is_missing(r["int32_bound"]) else f"{int(r['max_abs_accumulator']):,} / {int(r['int32_bound']):,}"
        body.append([r["tensor"], r["dtype"], f"[{r['lo']}, {r['hi']}]", f"[{r['min']}, {r['max']}]",
                     f"{r['values']:,}", f"{r['clipped']:,}", f"{r['runs_in_range']}/{r['runs']}", acc])
    return body


def _torch_ao_text(runs: List[Dict[str, Any]]) -> str:
    ao = runs[0]["torch_ao"]
    if not ao["available"]:
        return f"torch.ao cross-check: not run ({ao['reason']})."
    notes = f" torch's warnings (first lines): {'; '.join(ao['notes'])}" if ao["notes"] else ""
    agree = [run["integer_agrees_torch_ao_hpml"] for run in runs if "integer_agrees_torch_ao_hpml" in run]
    same = (f" With hpml's scales, torch.ao's int8 predictions equal hpml's integer-only ones on "
            f"{min(agree) * 100:.2f} % of the held-out images or more in every run." if agree else "")
    return f"torch.ao cross-check on the {ao['engine']} engine{_engine_reason(runs)}.{same}{notes}"


def _engine_reason(runs: List[Dict[str, Any]]) -> str:
    """Why that engine, and on which CPU (results from before they were recorded have neither)."""
    ao, cpu = runs[0]["torch_ao"], runs[0].get("cpu")
    why = f" ({ao['engine_reason']})" if ao.get("engine_reason") else ""
    if cpu:
        simd = ", ".join(cpu.get("simd") or []) or "none listed"
        why += f", on {cpu.get('model') or 'an unnamed CPU'} (torch's CPU capability {cpu.get('capability')}; {simd})"
    reasons = {run["torch_ao"].get("engine_reason") for run in runs}
    if len(reasons) > 1:
        why += f"; the runs chose {len(reasons)} ways: " + " | ".join(sorted(str(r) for r in reasons))
    return why


def _config_text(runs: List[Dict[str, Any]]) -> str:
    w = runs[0]["workload"]
    seeds = ", ".join(str(run["seed"]) for run in sorted(runs, key=lambda run: run["seed"]))
    source = "trained here" if runs[0]["model_source"] == "trained" else "loaded from model.pt files"
    agree = min(run["integer_agrees_w8a8b32"] for run in runs)
    return (f"{runs[0]['model']} ({runs[0]['parameters']:,} parameters, {source}); seeds {seeds}; "
            f"{runs[0]['test_samples']} held-out and {runs[0]['calibration_samples']} calibration images; scales "
            f"{w['scale_method']}" + (f" (k={w['sigma_k']:g})" if w["scale_method"] == "sigma" else "") +
            f", weights {w['weight_granularity']}, power of two: {str(w['power_of_two']).lower()}, requantize "
            f"{w['requantize']}; {runs[0]['threads']} CPU thread(s). The integer-only inference predicts the same "
            f"class as simulated W8A8B32 on {agree * 100:.2f} % of the images or more in every run.")


def config_sections(runs: List[Dict[str, Any]], label: str, index: int, count: int) -> List[Section]:
    stem = "" if count == 1 else f"_{index}"
    title = f"Quantization: {runs[0]['model']} {label}".rstrip()
    first = min(runs, key=lambda run: (run["seed"], run["sweep"], run["point"]))
    stages = stage_frame(runs)
    bars = bar_frame(stages)
    every = pd.concat([scale_frame(run).assign(sweep=run["sweep"], point=run["point"], seed=run["seed"])
                       for run in sorted(runs, key=lambda r: (r["seed"], r["sweep"], r["point"]))], ignore_index=True)
    checks = check_frame(runs)
    weights, activations = f"quantize_weights{stem}.png", f"quantize_activations{stem}.png"
    figure_title = f"{title}, seed {first['seed']}"
    return [
        Section(title, markdown=_config_text(runs) + "\n\n" + _torch_ao_text(runs), level=3, tables=[
            Table("quantize_stages", STAGE_HEADERS, stage_rows(stages), stages),
            Table("quantize_bars", BAR_HEADERS, bar_rows(bars), bars)]),
        Section("Runs: top-1 per stage", level=4, tables=[run_table(run_frame(runs))],
                markdown="Each run's held-out top-1 per stage, and how often its integer-only inference predicts "
                         "the simulated W8A8B32 class (quantize_runs.csv adds the agreement with torch.ao on hpml's "
                         "scales)."),
        Section(f"Scales per layer: seed {first['seed']} (every layer's scales of every run: quantize_scales.csv)",
                level=4, tables=[Table("quantize_scales", SCALE_HEADERS, scale_rows(scale_frame(first)), every)],
                after=f"Figures: {weights} (weights), {activations} (calibration activations).",
                figures=[Figure(weights, lambda path: weights_png(first, path, figure_title)),
                         Figure(activations, lambda path: activations_png(first, path, figure_title))]),
        Section("Range checks: every quantized tensor, every run", level=4,
                markdown="Weights and biases as stored; the input and each layer's output as the integer-only "
                         "inference produced them over the held-out split (clipped: values that left int8 and were "
                         "clamped). The int32 bound is the largest sum a layer's accumulator could reach on any int8 "
                         "input (Σ|q_w|·128 + |q_b|): below 2^31, the int32 sums cannot overflow.",
                tables=[Table("quantize_checks", CHECK_HEADERS, check_rows(checks), checks)]),
    ]


def quantize_sections(runs: List[Dict[str, Any]]) -> List[Section]:
    by_config: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        by_config.setdefault(run["config_key"], []).append(run)
    labels = differing_labels({key: members[0]["config_items"] for key, members in by_config.items()})
    sections = [Section("Post-training quantization", markdown=INTRO)]
    ordered = sorted(by_config, key=lambda key: (natural_key(labels[key]), key))
    for index, key in enumerate(ordered, start=1):
        sections += config_sections(by_config[key], labels[key], index, len(ordered))
    return sections
