"""The headline values of the studies that time one program or one device rather than training (quantize, paleo,
probe, cuda_vecadd, dataloader): each takes one result and gives one number, or None where the result does not
measure it, through the study's own row builder, so that compare and the study's report read the raw arrays one
way. analysis.compare.metrics names them, with their units and directions, in HEADLINES.

Where one result holds many sizes or devices, one of them is the headline, chosen below where it is read.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Mapping, Optional

from hpml.contract.units import MS_PER_S
from hpml.report_kit.numbers import is_missing


def _milliseconds(seconds: Optional[float]) -> Optional[float]:
    return None if is_missing(seconds) else seconds * MS_PER_S


# --- quantize: the fully quantized model's accuracy and time, and the real int8 engine's time ---------------------

def _quantize_run(doc: Mapping[str, Any]) -> Dict[str, Any]:
    from hpml.analysis.quantize.runs import quantize_run

    return quantize_run(doc)


def quantize_integer_top1(doc: Mapping[str, Any]) -> Optional[float]:
    return 100 * _quantize_run(doc)["top1_integer"]


def quantize_integer_pass_ms(doc: Mapping[str, Any]) -> Optional[float]:
    return _milliseconds(_quantize_run(doc)["inference_s_integer"])


def quantize_torch_ao_pass_ms(doc: Mapping[str, Any]) -> Optional[float]:
    """torch.ao's int8 model with its own observers: present only where the cross-check ran."""
    return _milliseconds(_quantize_run(doc).get("inference_s_torch_ao_own"))


# --- paleo: the measured forward, the sum of its synchronized layers, and PALEO's prediction ----------------------

def _paleo_summary(doc: Mapping[str, Any]) -> Dict[str, Any]:
    from hpml.analysis.paleo.tables import point_tables

    return point_tables(doc)[0].summary


def paleo_forward_ms(doc: Mapping[str, Any]) -> Optional[float]:
    return _milliseconds(_paleo_summary(doc)["forward_median_s"])


def paleo_layer_sum_ms(doc: Mapping[str, Any]) -> Optional[float]:
    return _milliseconds(_paleo_summary(doc)["layer_sum_s"])


def paleo_predicted_ms(doc: Mapping[str, Any]) -> Optional[float]:
    """PALEO's forward from the peaks the same run measured: every result has them (the published ones only a
    known GPU)."""
    return _milliseconds(_paleo_summary(doc)["predicted_s_measured"])


# --- probe: per quantity, the median over repetitions as its report gives it -----------------------------------

def _probe_rate(doc: Mapping[str, Any], quantity: str) -> Optional[float]:
    """The mean over the result's devices (one per rank) of the quantity's median rate: a result is one allocation,
    and its devices are measured alike, one after the other; None where it did not measure the quantity."""
    from hpml.analysis.probe.tables import peak_rows

    medians = [row["median"] for row in peak_rows(doc) if row["quantity"].split(" (n=")[0] == quantity]
    return statistics.fmean(medians) if medians else None


def probe_matmul_bf16(doc: Mapping[str, Any]) -> Optional[float]:
    return _probe_rate(doc, "matmul bf16")


def probe_copy(doc: Mapping[str, Any]) -> Optional[float]:
    return _probe_rate(doc, "memory copy")


def probe_h2d_pinned(doc: Mapping[str, Any]) -> Optional[float]:
    return _probe_rate(doc, "H2D pinned")


# --- cuda_vecadd: the case the study's bar reads, and the CPU loop ----------------------------------------------

def _vecadd_case(doc: Mapping[str, Any], shape: str, memory: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The case of this shape (and memory mode; the CPU has one) at the result's largest K: there the kernel's time
    is its bytes, not its launch, and the study's bar (many_blocks with explicit copies at 100 M) reads it."""
    from hpml.analysis.cuda_vecadd.tables import case_rows

    rows = [row for row in case_rows(doc) if row["shape"] == shape and memory in (None, row["memory"])]
    return max(rows, key=lambda row: row["elements"]) if rows else None


def vecadd_kernel_GBps(doc: Mapping[str, Any]) -> Optional[float]:
    case = _vecadd_case(doc, "many_blocks", "explicit")
    return case["kernel_GBps"] if case else None


def vecadd_total_ms(doc: Mapping[str, Any]) -> Optional[float]:
    case = _vecadd_case(doc, "many_blocks", "explicit")
    return _milliseconds(case["total_median_s"]) if case else None


def vecadd_cpu_GBps(doc: Mapping[str, Any]) -> Optional[float]:
    case = _vecadd_case(doc, "cpu")
    return case["kernel_GBps"] if case else None


# --- dataloader: the loader's rate over the timed epochs, and its first batch ---------------------------------

def _loader_setting(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """The study's setting row of this one result: its timed epochs, as the report pools a setting's runs."""
    from hpml.analysis.dataloader.runs import run_record
    from hpml.analysis.dataloader.tables import setting_row

    return setting_row([run_record(doc)])


def loader_samples_per_s(doc: Mapping[str, Any]) -> Optional[float]:
    return _loader_setting(doc)["samples_per_s_mean"]


def loader_first_batch_ms(doc: Mapping[str, Any]) -> Optional[float]:
    return _milliseconds(_loader_setting(doc)["first_batch_mean_s"])
