"""The batch size x devices study's tables against hand-computed values (analysis.train.tables,
analysis.train.sections, report_kit.latex), and `hpml report` writing them as Markdown, CSV, LaTeX and PNG."""

from __future__ import annotations

import csv
import math
import random

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.train import tables as tt
from hpml.analysis.train.runs import PHASES, train_run
from hpml.contract.units import GIB
from hpml.report_kit.latex import escape, latex_table
from tests.factories import write_result
from tests.factories.train import study_result


def runs_of(docs):
    return [train_run(doc) for doc in docs if doc["status"] in ("ok", "oom")]


def rows_of(*docs):
    return [{**doc, "path": f"points/{i}/result.json"} for i, doc in enumerate(docs)]


# Weak scaling, batch 32 per device. Timed epochs (epoch 1 dropped):
#   N=1: total [4, 4] -> 4.0, train [3, 3] -> 3.0, steps 1.0
#   N=2: total [2.5, 1.5] -> 2.0 (std sqrt(0.5)), train [1.5, 1.5] -> 1.5, steps 1.25
#   N=4: out of memory -> does not fit
WEAK = [
    study_result(0),
    study_result(1, workers=2, total=(5, 2.5, 1.5), train=(4, 1.5, 1.5), steps=((2, 3), (1.5, 1.0), (1.0, 1.5))),
    study_result(2, workers=4, status="oom"),
]


def test_time_table_speedups_efficiency_and_does_not_fit():
    table = tt.time_table(runs_of(rows_of(*WEAK)))
    assert list(table["devices"]) == [1, 2, 4]
    assert list(table["fits"]) == [True, True, False]
    assert list(table["oom_runs"]) == [0, 0, 1]
    assert list(table["epoch_time_mean_s"][:2]) == pytest.approx([4.0, 2.0])
    assert list(table["epoch_time_std_s"][:2]) == pytest.approx([0.0, math.sqrt(0.5)])
    assert list(table["train_time_mean_s"][:2]) == pytest.approx([3.0, 1.5])
    assert list(table["speedup"][:2]) == pytest.approx([1.0, 2.0])          # 4 / 2
    assert list(table["train_speedup"][:2]) == pytest.approx([1.0, 2.0])    # 3 / 1.5
    assert list(table["efficiency"][:2]) == pytest.approx([1.0, 0.8])       # step 1.0 / 1.25
    assert list(table["n"][:2]) == [2, 2]
    assert list(table["baseline_devices"][:2]) == [1, 1]
    assert math.isnan(table["speedup"][2]) and list(table["global_batch"]) == [32, 64, 128]


def test_speedups_never_cross_batch_sizes_and_dp_counts_its_devices():
    table = tt.time_table(runs_of(rows_of(
        study_result(0, batch=32, total=(9, 4, 4)),
        study_result(1, batch=128, total=(9, 2, 2)),  # faster, but another batch: its own baseline
        study_result(2, batch=128, parallel="dp", dp_devices=4, total=(9, 1, 1)),
        study_result(3, batch=128, parallel="dp", dp_devices=1, total=(9, 2, 2)),
    )))
    ddp = table[table["parallel"] == "ddp"]
    assert list(ddp["speedup"]) == [1.0, 1.0]
    dp = table[table["parallel"] == "dp"].sort_values("devices")
    assert list(dp["devices"]) == [1, 4] and list(dp["global_batch"]) == [128, 512]
    assert list(dp["speedup"]) == pytest.approx([1.0, 2.0])
    assert dp["group_key"].nunique() == 1  # dp_devices is not part of the group


def test_strong_scaling_efficiency_is_speedup_over_device_ratio():
    table = tt.time_table(runs_of(rows_of(
        study_result(0, scaling="strong", batch=64, total=(9, 8, 8)),
        study_result(1, scaling="strong", batch=64, workers=4, total=(9, 2.5, 2.5)),
    )))
    assert list(table["speedup"]) == pytest.approx([1.0, 3.2])
    assert list(table["efficiency"]) == pytest.approx([1.0, 0.8])
    assert list(table["per_device_batch"]) == [64, 16] and list(table["global_batch"]) == [64, 64]


def test_repeats_pool_epochs():
    table = tt.time_table(runs_of(rows_of(study_result(0, total=(9, 4, 4)),
                                             study_result(1, total=(9, 5, 7), repeat=1))))
    assert table["runs"].iloc[0] == 2 and table["n"].iloc[0] == 4
    assert table["epoch_time_mean_s"].iloc[0] == pytest.approx(5.0)
    assert table["epoch_time_std_s"].iloc[0] == pytest.approx(math.sqrt(6 / 3))  # [4,4,5,7], ddof=1


def test_phase_table_means_per_step():
    table = tt.phase_table(runs_of(rows_of(WEAK[0])))
    row = table.iloc[0]
    assert row["step_n"] == 8
    assert [row[f"{p}_mean_s"] for p in PHASES] == pytest.approx([0.1, 0.05, 0.25, 0.5, 0.1])
    assert row["train_step_mean_s"] == pytest.approx(0.9)


COMM = {"no_sync_step_s": [0.010, 0.012, 0.011], "sync_step_s": [0.014, 0.015, 0.013],
        "no_sync_median_s": 0.011, "sync_median_s": 0.014, "exposed_comm_s": 0.003}


def test_comm_table_exposed_comm_per_step_and_epoch():
    table = tt.comm_table(runs_of(rows_of(
        study_result(0, workers=4, comm=COMM, steps_per_epoch=100, profile={"nccl_kernel_s_per_step": 0.004}))))
    row = table.iloc[0]
    assert row["compute_step_median_s"] == pytest.approx(0.011)
    assert row["synced_step_median_s"] == pytest.approx(0.014)
    assert row["exposed_comm_step_s"] == pytest.approx(0.003)
    assert row["exposed_comm_epoch_s"] == pytest.approx(0.3)   # x 100 steps
    assert row["compute_epoch_s"] == pytest.approx(1.1)
    assert row["exposed_comm_share"] == pytest.approx(0.003 / 0.014)
    assert row["nccl_kernel_epoch_s"] == pytest.approx(0.4)
    assert row["probe_n"] == 3 and (row["compute_step_min_s"], row["compute_step_max_s"]) == (0.010, 0.012)


def test_bandwidth_row_against_hand_computed_ring_numbers():
    # S = 100 MB, N = 4, peak 450 GB/s: ring model 2*3/4 * 1e8 / 450e9 = 0.3333 ms.
    # Measured 1 ms of NCCL kernels: algbw 100 GB/s, busbw 150 GB/s, utilization 150/450 = 1/3.
    row = tt.bandwidth_row(100_000_000, 4, 450.0, nccl_s=0.001, exposed_s=0.0002)
    assert row["ring_model_s"] == pytest.approx(1.5e8 / 450e9)
    assert row["algbw_GBps"] == pytest.approx(100.0)
    assert row["busbw_GBps"] == pytest.approx(150.0)
    assert row["utilization"] == pytest.approx(1 / 3)
    assert row["measured_from"].startswith("NCCL kernel time")
    fallback = tt.bandwidth_row(100_000_000, 2, None, nccl_s=math.nan, exposed_s=0.002)
    assert fallback["measured_from"].startswith("exposed comm") and math.isnan(fallback["utilization"])
    assert fallback["busbw_GBps"] == pytest.approx(50.0)  # 1e8 / 2 ms = 50 GB/s algbw; x 2(1)/2 = 1


def test_bandwidth_table_only_for_more_than_one_device():
    runs = runs_of(rows_of(study_result(0, comm=COMM), study_result(1, workers=2, comm=COMM, peak=450.0,
                                                                       link="h200_nvlink")))
    table = tt.bandwidth_table(runs, tt.comm_table(runs))
    assert list(table["devices"]) == [2] and table["link"].iloc[0] == "h200_nvlink"
    assert table["busbw_GBps"].iloc[0] == pytest.approx(1e8 / 0.003 / 1e9)  # 2(n-1)/n = 1 at n = 2


def test_large_batch_table_reports_epoch_five_over_repeats():
    five = dict(total=(9, 4, 4, 4, 4), train=(8, 3, 3, 3, 3), steps=((1.0,),) * 5)
    table = tt.large_batch_table(runs_of(rows_of(
        study_result(0, lr_scaling="linear", loss=[3, 2, 1.5, 1.2, 1.0], accuracy=[0.1, 0.2, 0.3, 0.4, 0.5], **five),
        study_result(1, lr_scaling="linear", repeat=1, loss=[3, 2, 1.5, 1.2, 1.2],
                     accuracy=[0.1, 0.2, 0.3, 0.4, 0.7], **five),
        study_result(2, batch=64, loss=[3, 2, 1.0], accuracy=[0.1, 0.2, 0.9]),  # 3 epochs: no epoch 5, no row
    )))
    first = table[table["per_device_batch"] == 32].iloc[0]
    assert first["epoch"] == 5 and first["runs"] == 2
    assert first["loss_mean"] == pytest.approx(1.1) and first["loss_std"] == pytest.approx(math.sqrt(0.02))
    assert first["accuracy_mean"] == pytest.approx(0.6)
    assert list(table["per_device_batch"]) == [32]  # never claims an epoch 5 the 3-epoch run did not have
    three_epochs_only = tt.large_batch_table(runs_of(rows_of(study_result(0, loss=[3, 2, 1.0]))))
    assert three_epochs_only.empty


def test_overhead_table_uses_block_medians():
    doc = study_result(0)
    doc["measurements"]["overhead_check"] = {"steps_per_block": 20, "plain_samples_per_s": [100.0, 98.0, 102.0],
                                             "instrumented_samples_per_s": [99.0, 97.0, 100.0]}
    row = tt.overhead_table(runs_of(rows_of(doc))).iloc[0]
    assert (row["plain_samples_per_s"], row["instrumented_samples_per_s"]) == (100.0, 99.0)
    assert row["overhead"] == pytest.approx(0.01)


def test_latex_escapes_and_symbols():
    assert escape("a_b & 50% ± 1") == r"a\_b \& 50\% $\pm$ 1"
    tex = latex_table(["N", "t [s]"], [[1, "4.0 ± 0.1"]], caption="weak scaling", label="tab:t")
    assert r"\begin{tabular}{lr}" in tex and r"1 & 4.0 $\pm$ 0.1 \\" in tex and r"\toprule" in tex


def test_latex_escape_by_replacements_equals_the_one_pass_translation():
    """escape() replaces character by character in an order; it must give what one str.translate pass gives."""
    from hpml.report_kit.latex import _TRANSLATION
    alphabet = list("\\&%$#_{}~^±×—≥≤ab1 \x1a\x1f")
    generator = random.Random(0)
    texts = ["".join(generator.choice(alphabet) for _ in range(generator.randint(0, 30))) for _ in range(2000)]
    texts += ["\\{}", "{\\}", "~^", "\\textbackslash", "± ± ±", "a\x1ab\\"]
    assert [escape(text) for text in texts] == [text.translate(_TRANSLATION) for text in texts]
    assert escape("\\{x}~") == r"\textbackslash{}\{x\}\textasciitilde{}"


@pytest.mark.parametrize("rows", [
    [[1, "a_b", None], [2.5, "50% & ±", "{x}"]],
    [["x\x1fy", "\x1e", "&"], ["", "~", "^"]],  # cells holding the characters the fast path joins with
    [["x"]],
    [],
], ids=["plain", "separator_characters", "one_cell", "empty"])
def test_latex_body_escaped_as_one_text_equals_cell_by_cell(rows):
    """The body is escaped in one translate call; it must be what escaping each cell gives, whatever a cell holds."""
    width = max((len(row) for row in rows), default=1)
    tex = latex_table([f"h{i}" for i in range(width)], rows, caption="c", label="tab:c")
    expected = [" & ".join(escape(cell) for cell in row) + r" \\" for row in rows]
    if not rows:
        assert "\\midrule\n\\bottomrule" in tex
        return
    body = tex.split("\\midrule\n", 1)[1].split("\n\\bottomrule", 1)[0]
    assert body.split("\n") == expected


def test_report_writes_study_tables_in_three_formats_and_the_plot(tmp_path, capsys):
    for doc in WEAK + [study_result(3, workers=2, comm=COMM,
                                    total=(5, 2.5, 1.5), train=(4, 1.5, 1.5),
                                    steps=((2, 3), (1.5, 1.0), (1.0, 1.5)), repeat=1)]:
        write_result(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    out = tmp_path / "report"
    for name in ("scaling", "train_phases", "train_comm", "train_bandwidth"):
        assert (out / f"{name}.csv").exists() and (out / f"{name}.tex").exists(), name
    assert not (out / "train_large_batch.csv").exists()  # 3-epoch runs: no epoch 5 to show
    assert (out / "speedup.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (out / "report.md").read_text()
    assert "does not fit (out of memory)" in markdown
    assert "weak scaling (per-device batch fixed" in markdown and "baseline: for each per-device batch" in markdown
    assert "> **Note:** synthetic data was used" in markdown and "Large batches" not in markdown
    # each number once: the epoch time of N = 2 (2.0 ± 0.577 over 4 epochs) is in one table only
    assert markdown.count("2.000 ± 0.577 (n=4)") == 1
    # the order: the workload's tables, then what was left out (the oom point), then the problems, last
    assert (markdown.index("### Epoch time and speedup") < markdown.index("## Results not in a table (1)")
            < markdown.index("## Problems (0)"))
    with open(out / "scaling.csv") as f:
        rows = list(csv.DictReader(f))
    two = [r for r in rows if r["devices"] == "2"][0]
    assert int(two["runs"]) == 2 and int(two["n"]) == 4 and float(two["speedup"]) == pytest.approx(2.0)


def probe_result(point, start, tried):
    """A result whose largest-batch probe tried (batch, fits, peak bytes) in order."""
    doc = study_result(point, batch=start)
    fitting = [batch for batch, fits, _ in tried if fits]
    oom = [batch for batch, fits, _ in tried if not fits]
    doc["measurements"]["batch_probe"] = {
        "start": start, "limit": 131072, "largest_fitting": fitting[-1] if fitting else None,
        "first_oom": oom[0] if oom else None,
        "tried": [{"batch": b, "fits": f, "peak_memory_bytes": m} for b, f, m in tried]}
    return doc


def test_batch_probe_section_with_a_point_where_nothing_fits():
    # The H200 run: batch 8192 fits up to 16384; at 32768 nothing fits. pandas turns the column holding a
    # None into floats; the table must still print whole batch sizes. Peak memory is in GiB (2**30 bytes).
    runs = runs_of(rows_of(probe_result(0, 8192, [(8192, True, 40 * GIB), (16384, True, 80 * GIB),
                                                  (32768, False, None)]),
                              probe_result(1, 32768, [(32768, False, None)])))
    from hpml.analysis.train.sections import batch_probe_sections
    [section] = batch_probe_sections(tt.batch_probe_table(runs))
    assert [row[3:6] for row in section.tables[0].rows] == [["8192, 16384, 32768", "16384", "32768"],
                                                 ["32768", "none", "32768"]]
    assert section.tables[0].rows[0][6] == "80.00" and section.tables[0].rows[1][6] == "—"
    assert section.tables[0].headers[6] == "peak memory of the largest [GiB]"
