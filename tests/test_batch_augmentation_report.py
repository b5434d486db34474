"""Batch augmentation (issue 23) end to end and in the report: the data on disk refusing a batch or a class count
before `hpml launch` runs anything, the digits preset through `hpml launch` and `hpml report`, and the report's
run records, table and section against hand-computed values. The training side is tests/test_batch_augmentation.py."""

from __future__ import annotations

import json

import pytest

from tests.conftest import hpml_here, run_hpml

# --- end to end: the digits preset through hpml launch, then hpml report ------------------------------------------

@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    done = hpml_here(["data", "digits", "--root", str(root / "data"), "--ood", str(root / "ood")], cwd=root)
    assert done.returncode == 0, done.stderr
    return root / "data"


@pytest.mark.parametrize("override, message", [
    # the digits' training split has 1,438 images: a batch of 2,000 passed the old check (CIFAR-10's 50,000)
    ("workload.batch_size=2000", "workload.batch_size=2000 is not allowed: a batch that fits the data: 1 worker(s) x "
     "2000 samples per step is more than the 1438 training samples of an epoch (workload.dataset=cifar10); lower "
     "workload.batch_size or use a larger data set than"),
    ("workload.num_classes=5", "workload.num_classes=5: the data set at {root} has 10 classes; set "
     "workload.num_classes=10"),
])
def test_the_data_on_disk_decides_the_batch_and_the_classes_before_anything_runs(digits, tmp_path, override, message):
    done = run_hpml(["launch", "experiment=batch_augmentation_digits_tiny", f"workload.data_root={digits}", override,
                     "--dry-run"], cwd=tmp_path)
    assert done.returncode == 2 and message.format(root=digits) in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "sweeps").exists()


# the first 256 digits of each split (workload.max_samples): 4 steps of 64 an epoch instead of the whole 1,438's 22
# (issue 41); every count below is computed from it
SAMPLES, BATCH = 256, 64


def test_the_tiny_digits_preset_trains_two_copies_in_chunks_and_reports_them(digits, tmp_path):
    """experiment=batch_augmentation_digits_tiny at M = 2 only (ResNet-8, 2 epochs, Cutout, the device path), the
    step in 2 chunks, on a slice of the digits; then the report's batch augmentation section and its CSV."""
    done = run_hpml(["launch", "experiment=batch_augmentation_digits_tiny", f"workload.data_root={digits}",
                     "hydra.sweeper.params={workload.batch_augmentation: '2'}", "workload.accumulation_chunks=2",
                     f"workload.max_samples={SAMPLES}"],
                    cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (sweep,) = [d for d in (tmp_path / "sweeps").iterdir() if d.name != "latest"]
    (point,) = (sweep / "points").iterdir()
    result = json.loads((point / "result.json").read_text())
    m = result["measurements"]
    assert result["status"] == "ok" and m["data_placement"] == "device"
    assert (m["batch_augmentation"], m["accumulation_chunks"], m["global_batch"]) == (2, 2, BATCH)
    assert m["steps_per_epoch"] == SAMPLES // BATCH and len(m["evaluation"]["top1"]) == 2  # an epoch: each digit once
    assert m["lr_last"] == pytest.approx([0.1, 0.01])  # milestone 1.5: the second half of epoch 2 at lr / 10
    forward, step = m["phase_time_s"]["forward"][1], m["step_time_s"][1]
    assert all(f > 0 for f in forward) and len(forward) == len(step) == SAMPLES // BATCH
    report = hpml_here(["report", str(sweep), "--out", str(tmp_path / "report")], cwd=tmp_path)  # its files are the claim
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Batch augmentation" in text and "### Batch augmentation: cifar_resnet8, no target, cpu, device path" in text
    assert "| 2 | 128 | 2 | 1 x 16x16 px | 1 | no target |" in text
    csv = (tmp_path / "report" / "batch_augmentation.csv").read_text().splitlines()
    assert csv[0].startswith("group_key,model,hardware") and len(csv) == 2
    assert (tmp_path / "report" / "batch_augmentation_error.png").is_file()


# --- the report's numbers against hand-computed values ------------------------------------------------------------

def result_doc(copies: int, seed: int, top1, epoch_s, steps_s, target=0.9, holes=1, chunks=1):
    """A minimal ok train result as the report reads it: 10 steps of 64 per epoch, one evaluation per epoch 1 s apart."""
    epochs = len(top1)
    return {"path": f"p/{copies}/{seed}/result.json", "status": "ok", "identity": {"seed": seed},
            "environment": {"gpus": []},
            "config": {"workload": {"model": "cifar_resnet8", "batch_augmentation": copies, "accumulation_chunks": chunks,
                                    "cutout_holes": holes, "cutout_size": 16, "target_accuracy": target},
                       "resources": {"nodes": 1, "workers_per_node": 1}, "sweep": {"seed": seed}},
            "measurements": {"batch_augmentation": copies, "accumulation_chunks": chunks, "global_batch": 64,
                             "samples_per_epoch": 640, "epoch_time_s": epoch_s, "step_time_s": steps_s,
                             "data_placement": "device",
                             "evaluation": {"epoch": list(range(1, epochs + 1)), "step": [10 * e for e in range(1, epochs + 1)],
                                            "top1": top1, "elapsed_s": [float(e) for e in range(1, epochs + 1)],
                                            "train_elapsed_s": [float(e) for e in range(1, epochs + 1)]}},
            "derived": {"tta": {"target": target}}}


def test_a_run_record_takes_its_numbers_from_the_raw_arrays():
    from hpml.analysis.batch_aug.runs import ba_run

    doc = result_doc(4, 0, [0.5, 0.92, 0.95], epoch_s=[9.0, 2.0, 4.0], steps_s=[[1.0], [0.1, 0.3, 0.2], [0.5, 0.4]])
    run = ba_run(doc)
    assert run["epoch_time_s"] == 3.0  # epochs 2 and 3 (epoch 1 is warm-up): (2 + 4) / 2
    assert run["step_time_s"] == 0.3  # the median of the timed epochs' steps 0.1 0.3 0.2 0.5 0.4
    assert (run["samples_per_s"], run["images_per_s"]) == (640 / 3.0, 4 * 640 / 3.0)
    assert (run["converged"], run["epochs_to_target"], run["tta_s"], run["samples_per_step"]) == (True, 2, 2.0, 256)
    assert (run["best_top1"], run["best_epoch"], run["last_elapsed_s"]) == (0.95, 3, 3.0)
    assert "workload.batch_augmentation" not in run["group_items"] and "workload.cutout_holes" not in run["group_items"]


def test_the_table_gives_epochs_and_time_to_target_rates_and_the_step_cost_factor_per_m():
    from hpml.analysis.batch_aug.runs import ba_run
    from hpml.analysis.batch_aug.tables import variant_table

    docs = [result_doc(1, 0, [0.5, 0.91], [5.0, 2.0], [[1.0], [0.02]]),        # converged at epoch 2, 2.0 s
            result_doc(1, 1, [0.5, 0.85, 0.88], [5.0, 2.0, 2.0], [[1.0], [0.022], [0.022]]),  # never: best 0.88 at 3 s
            result_doc(4, 0, [0.6, 0.95], [5.0, 3.0], [[1.0], [0.03]]),
            result_doc(4, 1, [0.6, 0.8, 0.93], [5.0, 4.0, 4.0], [[1.0], [0.034], [0.034]])]
    table = variant_table([ba_run(doc) for doc in docs]).set_index("copies")
    one, four = table.loc[1], table.loc[4]
    assert (one["runs"], one["converged"], four["converged"]) == (2, 1, 2)
    assert (one["epochs_mean"], one["tta_s_mean"]) == (2.0, 2.0)
    assert (one["missed_best_top1_mean"], one["missed_last_elapsed_s_mean"]) == (0.88, 3.0)
    assert four["epochs_mean"] == 2.5 and four["epochs_std"] == pytest.approx(0.5 ** 0.5)  # 2 and 3, ddof = 1
    assert four["epoch_time_s_mean"] == 3.5 and four["epoch_time_s_std"] == pytest.approx(0.5 ** 0.5)  # 3 and 4
    assert four["images_per_s_mean"] == pytest.approx((4 * 640 / 3 + 4 * 640 / 4) / 2)
    # mean step at M = 4 over 4 x the mean single-copy step: 0.032 / (4 x 0.021)
    assert four["step_cost_factor"] == pytest.approx(0.032 / (4 * 0.021)) and one["step_cost_factor"] == pytest.approx(1.0)


def test_the_table_gives_each_ms_gpu_use_over_the_runs_with_telemetry(tmp_path):
    from hpml.analysis.batch_aug.runs import ba_run
    from hpml.analysis.batch_aug.tables import variant_table
    from tests.factories.telemetry import PHASES, columns, ok_block, sidecar_doc, write_sidecar

    def with_telemetry(doc, point, util_gpu, sm_activity):
        # one GPU sampled at t = 0..3 s; PHASES times [1, 3]: the window holds the samples at t = 1, 2, 3
        folder = tmp_path / f"point{point}"
        write_sidecar(folder, sidecar_doc({"gpu-0": columns(4, util_gpu=util_gpu, sm_activity=sm_activity)}, PHASES))
        return {**doc, "path": str(folder / "result.json"), "telemetry": ok_block(),
                "identity": {"seed": doc["identity"]["seed"], "sweep": "ba", "point": point, "repeat": 0}}

    docs = [with_telemetry(result_doc(1, 0, [0.5, 0.91], [5.0, 2.0], [[1.0], [0.02]]), 0,
                           [99, 20, 30, 40], [99, 10, 10, 10]),        # window means: 30 and 10 (t = 0 is warm-up)
            with_telemetry(result_doc(1, 1, [0.5, 0.92], [5.0, 2.0], [[1.0], [0.02]]), 1,
                           [0, 50, 50, 50], [0, 20, None, 20]),        # 50 and 20 (a null left out, never 0)
            result_doc(1, 2, [0.5, 0.93], [5.0, 2.0], [[1.0], [0.02]]),  # no telemetry: not in the GPU columns
            result_doc(2, 0, [0.6, 0.95], [5.0, 2.0], [[1.0], [0.03]])]
    table = variant_table([ba_run(doc) for doc in docs]).set_index("copies")
    one, two = table.loc[1], table.loc[2]
    assert (one["runs"], one["util_gpu_runs"], one["sm_activity_runs"]) == (3, 2, 2)
    assert one["util_gpu_mean"] == pytest.approx(40.0) and one["util_gpu_std"] == pytest.approx(200 ** 0.5)
    assert one["sm_activity_mean"] == pytest.approx(15.0)
    assert two["util_gpu_runs"] == 0 and two["util_gpu_mean"] != two["util_gpu_mean"]  # NaN: shown as —


def test_the_section_appears_only_with_copies_or_cutout_and_the_error_curve_averages_the_runs_at_each_epoch():
    from hpml.analysis import batch_aug
    from hpml.analysis.batch_aug.plots import error_curve
    from hpml.analysis.results import WorkloadResults

    plain = [result_doc(1, s, [0.5, 0.91], [5.0, 2.0], [[1.0], [0.02]], holes=0) for s in (0, 1)]
    assert batch_aug.sections(WorkloadResults("train", plain)) == []  # a TTA sweep's report stays as it was
    sections = batch_aug.sections(WorkloadResults("train", plain + [result_doc(2, 0, [0.6, 0.95], [5.0, 2.0],
                                                                                [[1.0], [0.03]], holes=0)]))
    assert [s.title for s in sections][0] == "Batch augmentation" and len(sections) == 3
    # the group's cost to target: these results carry no telemetry, so one line says so (issue 36)
    assert sections[2].title.startswith("Energy to target: ") and not sections[2].tables
    assert sections[2].markdown.startswith("Energy to target: none, no run here has NVML energy (no telemetry block")
    assert [row[0] for row in sections[1].tables[0].rows] == [1, 2]  # M = 1 is the group's baseline row
    curve = error_curve([{"eval_epochs": [1, 2], "top1": [0.5, 0.9]}, {"eval_epochs": [1], "top1": [0.7]}])
    assert curve["epoch"] == [1, 2] and curve["n"] == [2, 1]
    assert curve["mean"] == pytest.approx([40.0, 10.0])
    assert curve["min"] == pytest.approx([30.0, 10.0]) and curve["max"] == pytest.approx([50.0, 10.0])
