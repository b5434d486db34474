"""analysis/synthetic/ and the synthetic part of `hpml report`: formulas and tables against hand-computed
values, from result documents whose raw arrays are chosen here (no torch, no workers)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.stats import coefficient_of_variation, efficiency
from hpml.analysis.synthetic.runs import (
    horovod_summary,
    paired_ratios,
    paired_totals,
    rates_of,
    summed_rates,
    synthetic_runs,
)
from hpml.analysis.synthetic.tables import (
    comparison_table,
    epoch_time_s,
    gpu_cost_usd,
    paired_table,
    protocol_table,
    scaling_table,
)
from tests.factories.synthetic import synthetic_result


def write_doc(root: Path, doc: dict) -> Path:
    path = root / doc["identity"]["sweep"] / "points" / str(doc["identity"]["point"]) / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# --- formulas ----------------------------------------------------------------------------------------------


def test_horovod_summary_is_rank0_mean_pm_1_96_population_std_times_n():
    # rates [100, 110, 95]: mean 101.6667; deviations -1.6667, 8.3333, -6.6667; squares sum 116.6667;
    # population std sqrt(116.6667 / 3) = 6.23610; x 1.96 = 12.22276; total on 4 GPUs x 4
    summary = horovod_summary([100, 110, 95], world_size=4)
    assert summary["per_gpu_mean"] == pytest.approx(101.666667)
    assert summary["per_gpu_pm"] == pytest.approx(12.22276, rel=1e-5)
    assert summary["total_mean"] == pytest.approx(406.666667)
    assert summary["total_pm"] == pytest.approx(48.89105, rel=1e-5)


def test_coefficient_of_variation_states_its_ddof_and_is_not_rounded():
    # [100, 110, 95]: sample std sqrt(116.6667 / 2) = 7.63763 -> CV 0.0751243 (Ramble's rounded stats say 0.0)
    assert coefficient_of_variation([100, 110, 95]) == pytest.approx(0.0751243, rel=1e-5)
    assert coefficient_of_variation([100, 110, 95], ddof=0) == pytest.approx(6.23610 / 101.666667, rel=1e-5)
    assert coefficient_of_variation([42.0]) == 0.0  # one value: no spread to estimate


def test_rates_and_their_sum_over_ranks():
    assert rates_of([1.0, 0.5, 2.0], images=100) == pytest.approx([100, 200, 50])
    # rank 1's own rates, not rank 0's times n: [100+200, 200+200, 50+100]
    assert summed_rates([[100, 200, 50], [200, 200, 100]]) == pytest.approx([300, 400, 150])
    with pytest.raises(ValueError, match="different numbers of iterations"):
        summed_rates([[1, 2], [1]])
    with pytest.raises(ValueError, match="> 0"):
        rates_of([0.0], images=1)


@pytest.mark.parametrize("scaling, t_base, t_n, n, expected", [
    ("weak", 1.0, 1.25, 2, 0.8),    # weak: t1 / tN
    ("weak", 1.0, 1.0, 4, 1.0),
    ("strong", 2.0, 1.25, 2, 0.8),  # strong: speedup 2 / 1.25 = 1.6, over N = 2
    ("strong", 4.0, 1.25, 4, 0.8),  # speedup 3.2 over 4
])
def test_scaling_efficiency(scaling, t_base, t_n, n, expected):
    assert efficiency(scaling, speedup_n=t_base / t_n, n_base=1, n=n, step_base=t_base, step_n=t_n) == pytest.approx(expected)


def test_epoch_time_and_cost():
    assert epoch_time_s(1_281_167, 2_000.0) == pytest.approx(640.5835)
    # 640.5835 s on 4 GPUs at $4.00 per GPU-hour: 0.177940 h x 4 x 4 = $2.847038
    assert gpu_cost_usd(640.5835, 4, 4.0) == pytest.approx(2.847038, rel=1e-6)
    assert math.isnan(gpu_cost_usd(640.5835, 4, None))


# --- tables from raw arrays -------------------------------------------------------------------------------


def test_run_row_recomputes_from_the_raw_arrays():
    # images per iteration and rank: 10 x 10 = 100. rank 0: [1.0, 0.5, 2.0] s -> [100, 200, 50] img/s;
    # rank 1: [0.5, 0.5, 1.0] s -> [200, 200, 100]; totals [300, 400, 150]; slowest times [1.0, 0.5, 2.0]
    runs = synthetic_runs([synthetic_result(0, [[1.0, 0.5, 2.0], [0.5, 0.5, 1.0]])])
    assert runs.skipped == []
    row = runs.rows.iloc[0]
    assert row["totals"] == pytest.approx([300, 400, 150])
    assert row["slowest_times_s"] == pytest.approx([1.0, 0.5, 2.0])
    protocol = protocol_table(runs.rows).iloc[0]
    assert protocol["throughput_median"] == pytest.approx(300)
    assert (protocol["throughput_min"], protocol["throughput_max"]) == (pytest.approx(150), pytest.approx(400))
    # totals mean 283.333, sample std sqrt(31666.67 / 2) = 125.8306 -> CV 0.444108
    assert protocol["throughput_cv"] == pytest.approx(0.444108, rel=1e-5)
    # Horovod: rank 0's [100, 200, 50]: mean 116.667, population std 62.3610 -> ± 122.2276; x 2 ranks
    assert protocol["horovod_per_gpu_mean"] == pytest.approx(116.666667)
    assert protocol["horovod_per_gpu_pm"] == pytest.approx(122.2276, rel=1e-5)
    assert protocol["horovod_total_mean"] == pytest.approx(233.333333)
    assert protocol["horovod_total_vs_ours"] == pytest.approx(233.333333 / 300)


def test_horovod_host_clock_column_uses_the_host_times():
    # Horovod's host clock saw 0.5 s per iteration where the device took 1.0 s: it would print 200 img/s
    doc = synthetic_result(0, [[1.0, 1.0]], host_times=[[0.5, 0.5]])
    row = protocol_table(synthetic_runs([doc]).rows).iloc[0]
    assert row["horovod_per_gpu_mean"] == pytest.approx(100)
    assert row["horovod_host_per_gpu_mean"] == pytest.approx(200)


def weak_and_strong_docs():
    return [
        # weak, per-worker batch 10: N=1 1.0 s/iter (100 img/s); N=2 1.25 s (80 + 80 = 160 img/s)
        synthetic_result(0, [[1.0] * 3], price_name="h200_cloud", gpu_hour_usd=3.6),
        synthetic_result(1, [[1.25] * 3] * 2, price_name="h200_cloud", gpu_hour_usd=3.6),
        # strong, global batch 20: N=1 200 images/iter in 2.0 s (100 img/s); N=2 100 per rank in 1.25 s
        synthetic_result(2, [[2.0] * 3], scaling="strong", batch_size=20),
        synthetic_result(3, [[1.25] * 3] * 2, scaling="strong", batch_size=20),
    ]


def test_weak_and_strong_scaling_tables():
    table = scaling_table(synthetic_runs(weak_and_strong_docs()).rows)
    weak = table[table["scaling"] == "weak"].reset_index(drop=True)
    strong = table[table["scaling"] == "strong"].reset_index(drop=True)
    assert weak["world_size"].tolist() == [1, 2] and strong["world_size"].tolist() == [1, 2]
    assert weak["throughput_median"].tolist() == pytest.approx([100, 160])
    assert weak["ideal_throughput"].tolist() == pytest.approx([100, 200])
    assert weak["efficiency"].tolist() == pytest.approx([1.0, 0.8])  # 1.0 / 1.25
    assert weak["speedup"].tolist() == pytest.approx([1.0, 1.6])  # throughput ratio
    assert strong["per_worker_batch"].tolist() == [20, 10] and strong["global_batch"].tolist() == [20, 20]
    assert strong["speedup"].tolist() == pytest.approx([1.0, 1.6])  # 2.0 / 1.25
    assert strong["efficiency"].tolist() == pytest.approx([1.0, 0.8])  # 1.6 / 2
    # epoch of 1000 images: 10 s at 100 img/s, 6.25 s at 160; at $3.60 per GPU-hour: 10/3600 x 1 x 3.6 = $0.01,
    # 6.25/3600 x 2 x 3.6 = $0.0125; 90 epochs: $0.90 and $1.125
    assert weak["epoch_time_s"].tolist() == pytest.approx([10.0, 6.25])
    assert weak["epoch_cost_usd"].tolist() == pytest.approx([0.01, 0.0125])
    assert weak["train_cost_usd"].tolist() == pytest.approx([0.9, 1.125])
    assert strong["epoch_cost_usd"].isna().all()  # pricing=none


def comparison_docs():
    # N = 2, per-rank 1000 images per iteration (batch 100 x 10): ddp 10 s/iter per rank -> 100 + 100 = 200
    # img/s; horovod@64 -> 190; horovod@0 -> 150; gloo ddp -> 50
    def doc(point, seconds, **kw):
        return synthetic_result(point, [[seconds] * 3] * 2, batch_size=100, **kw)
    return [doc(0, 10.0, backend="nccl"), doc(1, 1000 / 95, backend="nccl", data_parallel="horovod"),
            doc(2, 1000 / 75, backend="nccl", data_parallel="horovod", fusion=0.0), doc(3, 40.0, backend="gloo")]


def test_comparison_table_orders_by_throughput_and_compares_with_ddp():
    table = comparison_table(synthetic_runs(comparison_docs()).rows)
    assert table["throughput_median"].tolist() == pytest.approx([200, 190, 150, 50])
    assert table["data_parallel"].tolist() == ["ddp", "horovod", "horovod", "ddp"]
    assert table["vs_fastest"].tolist() == pytest.approx([1.0, 0.95, 0.75, 0.25])
    vs_ddp = table["vs_ddp"].tolist()
    assert vs_ddp[0] == pytest.approx(1.0) and vs_ddp[1] == pytest.approx(0.95) and vs_ddp[3] == pytest.approx(1.0)
    assert math.isnan(vs_ddp[2])  # no DDP row with a 0 MiB bucket to compare with


def test_bad_results_are_listed_not_fatal():
    broken = synthetic_result(1, [[1.0, 1.0]])
    del broken["measurements"]["iteration_time_s_per_rank"]
    runs = synthetic_runs([synthetic_result(0, [[1.0]]), broken, synthetic_result(2, [[1.0]], status="oom")])
    assert len(runs.rows) == 1
    # the oom result is no table's business (the report lists every result that is not ok); the broken one is
    assert len(runs.skipped) == 1 and "KeyError" in runs.skipped[0] and "points/1" not in runs.skipped[0]


def test_a_broken_result_is_listed_by_the_report_not_fatal(tmp_path, capsys):
    broken = synthetic_result(1, [[1.0, 1.0]])
    del broken["measurements"]["iteration_time_s_per_rank"]
    for doc in (synthetic_result(0, [[1.0]]), broken, synthetic_result(2, [[1.0]], status="oom")):
        write_doc(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    left_out = markdown[markdown.index("## Results not in a table (2)"):markdown.index("## Problems")]
    assert "(point 1, repeat 0): unreadable synthetic measurements (KeyError" in left_out
    assert "(point 2, repeat 0): oom: out of memory" in left_out


# --- through `hpml report` -------------------------------------------------------------------------------


def test_hpml_report_has_the_synthetic_tables_csvs_and_plot(tmp_path, capsys):
    for doc in weak_and_strong_docs():
        write_doc(tmp_path, doc)
    for doc in comparison_docs():
        doc["identity"]["sweep"] = "methods"
        write_doc(tmp_path, doc)
    assert report_main([str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## study · synthetic" in markdown and "## methods · synthetic" in markdown
    assert "No ok results to tabulate" not in markdown  # the train scaling table is empty, this part is not
    assert "no report section" not in markdown  # synthetic results are tabulated here
    assert "resnet50, weak scaling (per-worker batch fixed)" in markdown
    assert "h200_cloud: $3.60 per GPU-hour" in markdown
    assert "| 2 | 1 × 2 | 10 | 20 | 160.0 [160.0, 160.0] (n=3) | 0.00% | 200.0 | 1.60 | 80.0% |" in markdown
    assert "All-reduce implementations compared: N = 2" in markdown
    assert "| nccl | auto | horovod | 64 | no | 190.0 [190.0, 190.0] (n=3) | 0.00% |" in markdown
    with open(tmp_path / "out" / "synthetic_scaling.csv") as f:
        rows = list(csv.DictReader(f))
    weak = [r for r in rows if r["sweep"] == "study" and r["scaling"] == "weak"]
    assert [float(r["efficiency"]) for r in weak] == pytest.approx([1.0, 0.8])
    assert [float(r["train_cost_usd"]) for r in weak] == pytest.approx([0.9, 1.125])
    png = (tmp_path / "out" / "synthetic_throughput.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "out" / "synthetic_comparison.csv").exists()


# --- DDP vs Horovod-style side by side (measurements.paired) ----------------------------------------------


def paired(times_ddp, times_horovod, images=100):
    return {"rounds": len(times_ddp[0]), "order": ["ddp", "horovod", "horovod", "ddp"][:2 * len(times_ddp[0])],
            "images_per_iteration_per_rank": images,
            "iteration_time_s_per_rank": {"ddp": times_ddp, "horovod": times_horovod}, "method": "test"}


def test_paired_totals_and_ratios_by_hand():
    # 2 ranks, 2 rounds, 100 images per iteration per rank.
    # DDP round 0: 100/0.5 + 100/0.25 = 200 + 400 = 600; round 1: 100/1 + 100/1 = 200.
    # Horovod-style round 0: 100/0.4 + 100/0.5 = 250 + 200 = 450; round 1: 100/0.5 + 100/0.5 = 400.
    totals = paired_totals(paired([[0.5, 1.0], [0.25, 1.0]], [[0.4, 0.5], [0.5, 0.5]]))
    assert totals["ddp"] == pytest.approx([600, 200]) and totals["horovod"] == pytest.approx([450, 400])
    assert paired_ratios(totals["ddp"], totals["horovod"]) == pytest.approx([0.75, 2.0])


def test_paired_table_compares_round_by_round_not_the_pooled_medians():
    # A host that halves its speed in rounds 2 and 3 slows both methods alike: Horovod-style is 2 % slower in
    # every round, which the round-by-round ratio shows (0.98), while the ratio of the pooled medians would not.
    ddp = [[0.100, 0.100, 0.200, 0.200]]
    horovod = [[0.100 / 0.98, 0.100 / 0.98, 0.200 / 0.98, 0.200 / 0.98]]
    doc = synthetic_result(0, [[1.0, 1.0]])
    doc["measurements"]["paired"] = paired(ddp, horovod, images=10)
    doc["config"]["workload"]["paired_rounds"] = 4
    row = paired_table(synthetic_runs([doc]).rows).iloc[0]
    assert row["rounds"] == 4
    assert (row["ratio_median"], row["ratio_min"], row["ratio_max"]) == pytest.approx((0.98, 0.98, 0.98))
    assert row["ddp_median"] == pytest.approx((100 + 50) / 2)  # rates 100, 100, 50, 50
    assert row["horovod_median"] == pytest.approx(0.98 * 75)


def test_paired_rounds_does_not_split_a_configuration():
    # The same configuration with and without the side-by-side check: one scaling row, not two.
    plain, checked = synthetic_result(0, [[1.0, 1.0]]), synthetic_result(1, [[1.0, 1.0]])
    plain["config"]["workload"]["paired_rounds"] = 0
    checked["config"]["workload"]["paired_rounds"] = 1
    checked["measurements"]["paired"] = paired([[0.5]], [[0.5]])
    runs = synthetic_runs([plain, checked]).rows
    assert len(scaling_table(runs)) == 1 and list(runs["label"]) == ["", ""]
    assert len(paired_table(runs)) == 1


def test_paired_rounds_that_disagree_with_the_arrays_leave_the_result_out():
    doc = synthetic_result(0, [[1.0, 1.0]])
    doc["measurements"]["paired"] = {**paired([[0.5, 0.5]], [[0.5]]), "rounds": 2}
    runs = synthetic_runs([doc])
    assert runs.rows.empty and "measurements.paired: 2 rounds" in runs.skipped[0]


def test_the_report_shows_the_side_by_side_table(tmp_path, capsys):
    doc = synthetic_result(0, [[1.0, 1.0], [1.0, 1.0]])
    doc["measurements"]["paired"] = paired([[0.5, 0.5], [0.5, 0.5]], [[0.4, 0.5], [0.5, 0.5]])
    write_doc(tmp_path, doc)
    assert report_main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "### DDP vs Horovod-style, side by side in one process" in out
    # round 0: DDP 200 + 200 = 400, Horovod-style 250 + 200 = 450 (1.125); round 1: 400 vs 400 (1.0)
    assert "| 0 | – | 2 | 1 × 2 | 10 | 64 | no | 2 | 400.0 | 425.0 | 1.0625 [1.0000, 1.1250] |" in out
    with open(tmp_path / "report" / "synthetic_paired.csv") as f:
        assert float(next(csv.DictReader(f))["ratio_median"]) == pytest.approx(1.0625)
