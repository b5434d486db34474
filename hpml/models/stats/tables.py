"""`hpml model-stats` output as tables: per layer, totals, and the inception comparison; rendered as
Markdown, CSV or LaTeX through analysis/'s table writers (the launcher's side only: a workload imports
layers.py, never this).

Display rows are rounded for reading (3.21 M); the CSV is the machine-readable per-layer frame, exact
integers. The per-layer table ends with an "(outside leaf modules)" row holding the MACs and parameters no
layer holds, so each count column sums to the model's total.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import pandas as pd

from hpml.models.stats.counting import ModelStats
from hpml.models.stats.inception import Comparison, Variant
from hpml.models.stats.receptive_field import Field
from hpml.report_kit.latex import latex_table
from hpml.report_kit.numbers import si
from hpml.report_kit.sections import Section, Table, report_markdown

FORMATS = ("md", "csv", "tex")
OUTSIDE_ROW = "(outside leaf modules)"



def shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(size) for size in shape)


def field_text(field: Optional[Field]) -> str:
    if field is None:
        return "whole input"
    if len(set(field.size)) == 1 and len(set(field.jump)) == 1:
        return f"{field.size[0]} (jump {field.jump[0]})"
    return f"{shape_text(field.size)} (jump {shape_text(field.jump)})"


def title(stats: ModelStats) -> str:
    return (f"{stats.model}: input {shape_text(stats.input_shape)}, batch {stats.batch}, "
            f"{str(stats.dtype).replace('torch.', '')}, {'with' if stats.bias else 'without'} biases")


def layer_table(stats: ModelStats) -> Table:
    fields = stats.receptive_fields
    headers = ["layer", "type", "output shape", "activations", "activation bytes", "parameters", "MACs",
               "FLOPs (2 x MACs)"] + (["receptive field"] if fields is not None else [])
    records, rows = [], []
    for i, row in enumerate(stats.rows):
        records.append({"layer": row.name, "type": row.type, "output_shape": shape_text(row.output_shape),
                        "activations": row.activations, "activation_bytes": row.activation_bytes,
                        "input_bytes": row.input_bytes, "params": row.params, "param_bytes": row.param_bytes,
                        "macs": row.macs, "flops": row.flops})
        rows.append([row.name, row.type, shape_text(row.output_shape), f"{row.activations:,}",
                     si(row.activation_bytes, "B"), f"{row.params:,}", si(row.macs), si(row.flops)]
                    + ([field_text(fields[i])] if fields is not None else []))
        if fields is not None:
            records[-1]["receptive_field"] = field_text(fields[i]).split(" (")[0]
            records[-1]["jump"] = None if fields[i] is None else shape_text(fields[i].jump)
    totals = stats.totals
    if totals.macs_outside_rows or totals.params_outside_rows:
        records.append({"layer": OUTSIDE_ROW, "type": "", "output_shape": "", "activations": 0,
                        "activation_bytes": 0, "input_bytes": 0, "params": totals.params_outside_rows,
                        "param_bytes": totals.params_outside_rows * stats.dtype.itemsize,
                        "macs": totals.macs_outside_rows, "flops": 2 * totals.macs_outside_rows})
        rows.append([OUTSIDE_ROW, "", "", "", "", f"{totals.params_outside_rows:,}", si(totals.macs_outside_rows),
                     si(2 * totals.macs_outside_rows)] + ([""] if fields is not None else []))
    return Table("model_stats", headers, rows, pd.DataFrame(records))


def totals_table(stats: ModelStats) -> Table:
    t = stats.totals
    items = [("parameters", t.params, f"{t.params:,} ({si(t.params)})"),
             ("parameters in no layer row", t.params_outside_rows, f"{t.params_outside_rows:,}"),
             ("MACs", t.macs, f"{t.macs:,} ({si(t.macs)})"),
             ("FLOPs (2 x MACs)", t.flops, f"{t.flops:,} ({si(t.flops)})"),
             ("MACs outside leaf modules", t.macs_outside_rows, f"{t.macs_outside_rows:,}"),
             ("activations (sum over layers)", t.activations, f"{t.activations:,} ({si(t.activations)})"),
             ("activation bytes (sum over layers)", t.activation_bytes, si(t.activation_bytes, "B")),
             ("convolutions' share of FLOPs", t.conv_flops_share, f"{100 * t.conv_flops_share:.2f} %"),
             ("fully connected layers' share of parameters", t.fc_params_share, f"{100 * t.fc_params_share:.2f} %")]
    return Table("model_stats_totals", ["total", "value"], [[name, text] for name, _, text in items],
                 pd.DataFrame([{"total": name, "value": value} for name, value, _ in items]))


COUNTED = ("MACs: torch.utils.flop_counter.FlopCounterMode's FLOPs / 2, per leaf-module call; it counts "
           "convolutions, matrix products (linear, mm, addmm, bmm) and attention, not biases, element-wise "
           "ops, pooling or normalisation. FLOPs = 2 x MACs (torchvision's `_ops` are MACs). Activations: "
           "each call's output elements, batch included. Parameters: the module's own. Totals: the whole model "
           "and forward; what no row holds is the last row, '(outside leaf modules)'.")


def model_sections(stats: ModelStats) -> List[Section]:
    rf = (" Receptive field: the recurrence r_out = r_in + (k - 1) j_in, j_out = j_in s over the chain of "
          "layers, in input pixels, not clipped to the image." if stats.receptive_fields is not None else "")
    return [Section("Per layer", markdown=COUNTED + rf, tables=[layer_table(stats)]),
            Section("Totals", tables=[totals_table(stats)])]


def _variant_record(variant: Variant, naive: Variant) -> dict:
    c, h, w = variant.output_shape
    return {"variant": variant.name, "output": f"{h}x{w}x{c}", "multiplies": variant.multiplies,
            "multiplies_counted": variant.counted_multiplies, "weights": variant.weights,
            "share_of_naive": variant.multiplies / naive.multiplies}


def inception_sections(comparison: Comparison) -> List[Section]:
    naive, reduced = comparison.naive, comparison.reduced
    channels, height, width = comparison.input_shape
    records = [_variant_record(v, naive) for v in (naive, reduced)]
    summary = Table("inception", ["module", "output (HxWxC)", "multiplies (formula)", "multiplies (torch counter)",
                                  "weights", "of naive"],
                    [[r["variant"], r["output"], f"{r['multiplies']:,}", f"{r['multiplies_counted']:,}",
                      f"{r['weights']:,}", f"{100 * r['share_of_naive']:.1f} %"] for r in records],
                    pd.DataFrame(records))
    conv_rows = [[variant.name, conv.branch, f"{conv.kernel}x{conv.kernel}, {conv.in_channels} -> {conv.out_channels}",
                  f"{height}*{width}*{conv.in_channels}*{conv.kernel}*{conv.kernel}*{conv.out_channels}",
                  f"{conv.multiplies(height, width):,}"] for variant in (naive, reduced) for conv in variant.convs]
    convs = Table("inception_convs", ["module", "branch", "convolution", "H*W*C_in*K*K*C_out", "multiplies"],
                  conv_rows, pd.DataFrame(conv_rows, columns=["module", "branch", "convolution", "formula",
                                                              "multiplies"]))
    text = (f"GoogLeNet inception (3a) filter counts (Szegedy et al. 2015, Table 1: #1x1 64, #3x3 reduce 96, "
            f"#3x3 128, #5x5 reduce 16, #5x5 32, pool proj 32) on a {height}x{width}x{channels} input, 'same' "
            f"padding, stride 1. Multiplies: H * W * C_in * K * K * C_out per convolution, biases left out; "
            f"the max pool multiplies nothing.")
    after = (f"The 1x1 reductions save {100 * comparison.saving:.1f} % of the multiplies "
             f"({naive.multiplies:,} -> {reduced.multiplies:,}, {naive.multiplies / reduced.multiplies:.2f}x "
             f"fewer) and shrink the output from {records[0]['output']} to {records[1]['output']}.")
    return [Section("Inception module: naive vs with 1x1 reductions", markdown=text, tables=[summary], after=after),
            Section("Convolutions", tables=[convs], level=3)]


def render(heading: str, sections: Sequence[Section], fmt: str) -> str:
    """md: the whole report; tex: one booktabs table per table; csv: the first table's frame."""
    if fmt == "md":
        return report_markdown(heading, sections)
    if fmt == "tex":
        return "\n".join(latex_table(table.headers, table.rows, caption=f"{heading}: {section.title}",
                                     label=f"tab:{table.name}")
                         for section in sections for table in section.tables)
    if fmt == "csv":
        return sections[0].tables[0].frame.to_csv(index=False)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
