"""Time to accuracy (analysis/tta, analysis.stats.olympic_mean): TTA, CoV and the olympic mean against
hand-computed values, a run that never converged, grouping by hardware across sweeps, and the sections
rendered by `hpml report` from hand-written result.json files that pass the envelope validation."""

import csv
import math

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.stats import olympic_mean
from hpml.analysis.tta.runs import first_at_target, tta_run
from hpml.analysis.tta.tables import tta_table
from tests.factories import write_result
from tests.factories.train import train_result

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"


def tta_result(point, *, top1, elapsed, train_elapsed, target=0.9, sweep="h100", gpu=H100, batch=32,
               link="h100_nvlink", status="ok"):
    """A train result with one evaluation per epoch: epoch i+1, step 10 (i+1)."""
    n = len(top1)
    doc = train_result(point=point, sweep=sweep, batch_size=batch, epoch_times=[1.0] * max(n, 2),
                       step_times=[[0.1]] * max(n, 2), status=status, epochs=10,  # the cap, as configured
                       extra_workload={"target_accuracy": target, "eval_every": 1, "link": link},
                       extra_measurements={"evaluation": {
                           "epoch": list(range(1, n + 1)), "step": [10 * (i + 1) for i in range(n)],
                           "top1": list(top1), "loss": [1.0] * n, "elapsed_s": list(elapsed),
                           "train_elapsed_s": list(train_elapsed), "eval_s": [0.5] * n}})
    doc["environment"]["gpus"] = [gpu] if gpu else []
    doc["derived"]["tta"] = {"target": target}  # the analysis recomputes the rest
    return doc


def converging(point, tta, epochs, **kwargs):
    """Reaches the target at evaluation `epochs` (elapsed tta, tta - 1 without evaluation time)."""
    top1 = [0.5] * (epochs - 1) + [0.93]
    elapsed = [tta * (i + 1) / epochs for i in range(epochs)]
    return tta_result(point, top1=top1, elapsed=elapsed, train_elapsed=[t - 1.0 for t in elapsed], **kwargs)


# H100: TTA 10, 12, 11, 14, 13 s (w/o evaluation 1 s less), epochs to target 2, 3, 2, 3, 3.
H100_RUNS = [(10.0, 2), (12.0, 3), (11.0, 2), (14.0, 3), (13.0, 3)]
# H200: 8, 9, 7 s converged, one run never reaches the target.
H200_RUNS = [(8.0, 2), (9.0, 2), (7.0, 2)]


def _study(root):
    docs = [converging(i, t, e) for i, (t, e) in enumerate(H100_RUNS)]
    docs += [converging(10 + i, t, e, sweep="h200", gpu=H200, link="h200_nvlink") for i, (t, e) in enumerate(H200_RUNS)]
    docs.append(tta_result(13, sweep="h200", gpu=H200, link="h200_nvlink", top1=[0.5, 0.8, 0.89],
                           elapsed=[5.0, 10.0, 15.0], train_elapsed=[4.0, 8.0, 12.0]))
    docs.append(converging(20, 6.0, 2, sweep="h100b", batch=64))  # another configuration: one run
    for doc in docs:
        write_result(root / doc["identity"]["sweep"], doc)
    return docs


def test_olympic_mean_drops_the_fastest_and_the_slowest():
    assert olympic_mean([10, 12, 11, 14, 13]) == 12.0  # (11 + 12 + 13) / 3
    assert olympic_mean([3.0, 1.0, 2.0]) == 2.0
    # one run not converged: it is the slowest (dropped) and the fastest goes too: (8 + 9) / 2
    assert olympic_mean([8, 9, 7], not_converged=1) == 8.5
    assert olympic_mean([8, 9, 7, 20], not_converged=2) is None  # MLPerf: invalid with two
    assert olympic_mean([8, 9]) is None  # nothing left after dropping two
    assert olympic_mean([8, 9], not_converged=1) == 9.0  # 3 runs: 7... 8 dropped as fastest, the miss as slowest
    with pytest.raises(ValueError, match="not_converged"):
        olympic_mean([1, 2, 3], not_converged=-1)


def test_tta_is_the_first_evaluation_at_or_above_the_target():
    assert first_at_target([0.5, 0.9, 0.85, 0.95], 0.9) == 1  # equal counts; later dips do not matter
    assert first_at_target([0.5, 0.89], 0.9) is None
    doc = tta_result(0, top1=[0.5, 0.95, 0.8, 0.97], elapsed=[3.0, 6.5, 9.0, 12.0], train_elapsed=[2.0, 4.0, 6.0, 8.0])
    doc["path"] = "p"
    run = tta_run(doc)
    assert (run["converged"], run["tta_s"], run["tta_train_s"], run["epochs_to_target"], run["steps_to_target"]) \
        == (True, 6.5, 4.0, 2, 20)
    assert run["hardware"] == H100


def test_a_run_that_never_reaches_the_target_is_not_converged_and_has_no_time():
    doc = tta_result(0, top1=[0.5, 0.89], elapsed=[3.0, 6.0], train_elapsed=[2.0, 4.0])
    doc["path"] = "p"
    run = tta_run(doc)
    assert run["converged"] is False
    assert run["tta_s"] is None and run["tta_train_s"] is None and run["epochs_to_target"] is None


def test_a_run_that_evaluated_nothing_is_not_converged():
    doc = tta_result(0, top1=[], elapsed=[], train_elapsed=[])  # its epochs ended before the first evaluation
    doc["path"] = "p"
    run = tta_run(doc)
    assert run["converged"] is False and run["tta_s"] is None
    row = tta_table([run]).iloc[0]
    assert (row["runs"], row["converged"]) == (1, 0) and math.isnan(row["tta_s_mean"])


def test_cpu_runs_are_grouped_as_cpu():
    doc = converging(0, 5.0, 2, gpu=None)
    doc["path"] = "p"
    assert tta_run(doc)["hardware"] == "cpu"


def test_table_groups_by_configuration_and_hardware_with_hand_computed_statistics(tmp_path):
    docs = _study(tmp_path)
    runs = []
    for doc in docs:
        doc["path"] = f"{doc['identity']['sweep']}/{doc['identity']['point']}"
        runs.append(tta_run(doc))
    table = tta_table(runs)
    # two sweeps (h100, h200) of one configuration (only the link, a hardware key, differs) -> rows per hardware
    assert len(table) == 3
    h100, h200 = (table[(table["hardware"] == hw) & (table["runs"] > 1)].iloc[0] for hw in (H100, H200))
    assert h100["config_key"] == h200["config_key"]

    assert (h100["runs"], h100["converged"], h100["converged_fraction"]) == (5, 5, 1.0)
    assert h100["tta_s_mean"] == pytest.approx(12.0)
    assert h100["tta_s_std"] == pytest.approx(math.sqrt(2.5))  # (4 + 0 + 1 + 4 + 1) / (5 - 1)
    assert h100["tta_s_cov"] == pytest.approx(math.sqrt(2.5) / 12.0)  # 0.131762, not rounded
    assert (h100["tta_s_median"], h100["tta_s_min"], h100["tta_s_max"]) == (12.0, 10.0, 14.0)
    assert h100["tta_s_olympic"] == pytest.approx(12.0)
    assert h100["tta_train_s_mean"] == pytest.approx(11.0)
    assert h100["tta_train_s_cov"] == pytest.approx(math.sqrt(2.5) / 11.0)
    assert h100["tta_train_s_olympic"] == pytest.approx(11.0)
    assert h100["epochs_mean"] == pytest.approx(2.6)
    assert h100["epochs_std"] == pytest.approx(math.sqrt(0.3))  # (.36 + .16 + .36 + .16 + .16) / 4
    assert h100["epochs_cov"] == pytest.approx(math.sqrt(0.3) / 2.6)
    assert h100["steps_mean"] == pytest.approx(26.0)
    assert h100["std_ddof"] == 1

    assert (h200["runs"], h200["converged"], h200["converged_fraction"]) == (4, 3, 0.75)
    assert h200["tta_s_mean"] == pytest.approx(8.0)
    assert h200["tta_s_std"] == pytest.approx(1.0)  # (0 + 1 + 1) / 2
    assert h200["tta_s_cov"] == pytest.approx(0.125)
    assert h200["tta_s_olympic"] == pytest.approx(8.5)  # 7 dropped (fastest), the miss dropped (slowest)
    assert h200["olympic_status"] == "ok: the non-converged run dropped as the slowest"

    single = table[table["runs"] == 1].iloc[0]  # the batch-64 configuration: one run, no spread
    assert single["config_key"] != h100["config_key"]
    assert single["tta_s_mean"] == 6.0 and math.isnan(single["tta_s_std"]) and math.isnan(single["tta_s_cov"])
    assert math.isnan(single["tta_s_olympic"]) and single["olympic_status"] == "undefined: 1 run(s), needs 3"


def test_two_misses_make_the_olympic_mean_invalid():
    docs = [converging(0, 5.0, 2), converging(1, 6.0, 2), converging(2, 7.0, 2)]
    docs += [tta_result(3 + i, top1=[0.5, 0.6], elapsed=[1.0, 2.0], train_elapsed=[0.5, 1.0]) for i in range(2)]
    for doc in docs:
        doc["path"] = str(doc["identity"]["point"])
    row = tta_table([tta_run(doc) for doc in docs]).iloc[0]
    assert (row["runs"], row["converged"]) == (5, 3)
    assert math.isnan(row["tta_s_olympic"])
    assert row["olympic_status"] == "invalid: 2 runs not converged (MLPerf allows one)"
    assert row["tta_s_mean"] == pytest.approx(6.0)  # the converged runs' statistics stay


def test_hpml_report_renders_the_time_to_accuracy_sections(tmp_path, capsys):
    _study(tmp_path)
    broken = converging(30, 5.0, 2, sweep="h100")
    broken["measurements"]["evaluation"]["elapsed_s"] = [1.0]  # one time for two evaluations
    write_result(tmp_path / "h100", broken)
    untargeted = tta_result(31, sweep="eval", target=None, top1=[0.4, 0.7], elapsed=[2.0, 4.0],
                            train_elapsed=[1.0, 2.0])
    write_result(tmp_path / "eval", untargeted)

    assert report_main([str(tmp_path)]) == 0
    markdown = capsys.readouterr().out
    out = tmp_path / "report"
    assert markdown == (out / "report.md").read_text()
    assert "## Time to accuracy" in markdown
    assert "mlcommons/training_policies" in markdown and "0.088" in markdown
    assert markdown.index("### Epoch time and speedup") < markdown.index("## Time to accuracy")  # train first
    assert "### Time to accuracy: resnet18 to 90 % top-1 batch_size=32 target_accuracy=0.9" in markdown
    assert "### Time to accuracy: resnet18 to 90 % top-1 batch_size=64 target_accuracy=0.9" in markdown
    # evaluated without a target: its curve is drawn, it is in no table
    assert "### Time to accuracy: resnet18, no target batch_size=32 target_accuracy=None\n\n1 run(s) with an " \
           "evaluation record; 1 evaluated without a target: plotted, not tabulated.\n\nFigures: tta_curves_2.png." \
           in markdown
    assert (f"| {H100} | host | 5 | 5/5 (100 %) | 12.00 ± 1.58 (n=5) | 0.1318 | 12.00 [10.00, 14.00] | 12.00 | "
            "11.00 ± 1.58 (n=5) | 0.1437 | 11.00 | 2.60 ± 0.55 (n=5) | 0.2107 | 26.0 |") in markdown
    assert (f"| {H200} | host | 4 | 3/4 (75 %) | 8.00 ± 1.00 (n=3) | 0.1250 | 8.00 [7.00, 9.00] | 8.50 |") in markdown
    assert "| — (undefined: 1 run(s), needs 3) |" in markdown
    # a broken evaluation record is one line, the other results are still tabulated
    assert "measurements.evaluation: its lists differ in length (" in markdown  # a Problem (analysis.train.checks)

    with open(out / "tta.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3
    h200 = next(r for r in rows if r["hardware"] == H200)
    assert float(h200["tta_s_cov"]) == pytest.approx(0.125) and float(h200["tta_s_olympic"]) == pytest.approx(8.5)
    for name in ("tta_curves_1.png", "tta_spread_1.png", "tta_curves_2.png", "tta_curves_3.png", "tta_spread_3.png",
                 "tta.tex"):
        assert (out / name).stat().st_size > 0
    assert not (out / "tta_spread_2.png").exists()  # nothing converged there: no spread to draw


def test_no_evaluation_no_time_to_accuracy_section(tmp_path, capsys):
    write_result(tmp_path, train_result(point=0, epoch_times=[2.0, 1.0], step_times=[[1.0], [1.0]]))
    assert report_main([str(tmp_path)]) == 0
    assert "Time to accuracy" not in capsys.readouterr().out
    assert not (tmp_path / "report" / "tta.csv").exists()
