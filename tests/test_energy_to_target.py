"""Energy, energy per sample, GPU-hours and cost to target, and MLPerf's power-sampling check (issue 36;
analysis.telemetry.to_target, analysis.tta.energy): every number against hand-computed values on sidecars written
by hand, each GPU counted once (two ranks on one GPU, two GPUs of one node, two nodes, two SLURM nodes of one host),
the report's tables, and the committed H100/H200 sweeps' recorded sidecars."""

from __future__ import annotations

import copy
import csv
import gzip
import json
import shutil
from pathlib import Path

import pytest

from hpml.analysis.report import main as report_main
from hpml.analysis.stats import olympic_kept, olympic_mean_by_time
from hpml.analysis.telemetry.to_target import EnergyToTarget, result_energy_to_target
from hpml.analysis.tta.energy import row_fields, run_fields
from hpml.analysis.tta.runs import tta_run
from hpml.contract.telemetry_format import sidecar_name
from tests.factories import write_result
from tests.factories.telemetry import UUID_A, UUID_B, columns, sidecar_doc, write_sidecar
from tests.test_tta_report import converging, tta_result

EPOCH_J, EVAL_J = 100.0, 10.0  # per GPU and phase


def tta_phases(epochs: int, first: int = 0, energy=None):
    """Epoch e runs [1.5 e, 1.5 e + 1], its evaluation [1.5 e + 1, 1.5 e + 1.5]; energies per GPU as given."""
    energy = energy or {UUID_A: 1.0}
    phases = []
    for e in range(first, epochs):
        phases.append({"name": "epoch", "index": e, "timed": e > 0, "start_s": 1.5 * e, "end_s": 1.5 * e + 1.0,
                       "samples": 320, "energy_j": {u: EPOCH_J * k for u, k in energy.items()}})
        phases.append({"name": "eval", "index": e, "timed": False, "start_s": 1.5 * e + 1.0, "end_s": 1.5 * e + 1.5,
                       "samples": None, "energy_j": {u: EVAL_J * k for u, k in energy.items()}})
    return phases


def power_columns(seconds: float, hz: float = 1.0):
    n = int(seconds * hz) + 1
    return columns(n, t_s=[i / hz for i in range(n)], power_w=[300.0] * n)


def tta_point(root: Path, point: int, sidecars, *, tta=3.0, epochs=2, names=None, **kwargs):
    """A converging train result (target at evaluation `epochs`) with the given sidecar documents beside it."""
    doc = converging(point, tta, epochs, **kwargs)
    doc["telemetry"] = {"status": "ok", "reason": None, "interval_ms": 1000,
                        "sidecars": names or [sidecar_name(s["node_rank"]) for s in sidecars]}
    path = write_result(root / doc["identity"]["sweep"], doc)
    for sidecar in sidecars:
        write_sidecar(path.parent, sidecar, sidecar["node_rank"])
    return {**doc, "path": str(path)}


def energy_of(doc, epochs=2):
    return result_energy_to_target(doc, epochs - 1)


# --- the formulas --------------------------------------------------------------------------------------------------

def test_olympic_by_time_averages_the_runs_the_time_score_keeps():
    times, energies = [10.0, 12.0, 11.0, 14.0, 13.0], [100.0, 90.0, 130.0, 95.0, 80.0]
    assert olympic_kept(times) == [2, 1, 4]  # 10 s (fastest) and 14 s (slowest) dropped
    assert olympic_mean_by_time(energies, times) == pytest.approx((130 + 90 + 80) / 3)  # not energy's own extremes
    assert olympic_mean_by_time(energies[:3], times[:3], not_converged=1) == pytest.approx((130 + 90) / 2)
    assert olympic_mean_by_time(energies[:3], times[:3], not_converged=2) is None  # MLPerf: invalid
    assert olympic_mean_by_time(energies[:2], times[:2]) is None  # fewer than 3 runs: undefined


def test_energy_to_target_sums_the_epochs_and_evaluations_up_to_the_target(tmp_path):
    doc = tta_point(tmp_path, 0, [sidecar_doc({UUID_A: power_columns(6.0)}, tta_phases(4))])
    e = energy_of(doc, epochs=2)  # the target at evaluation 2: epochs 0, 1 and their evaluations
    assert e.energy_j == pytest.approx(2 * EPOCH_J + 2 * EVAL_J) and e.why is None and e.gpus == 1
    assert e.window_s == pytest.approx(3.0) and e.metered_s == pytest.approx(3.0)  # [0, 3]: no gap between phases
    assert e.power_samples == 4 and e.power_hz == pytest.approx(4 / 3)  # t = 0, 1, 2, 3
    assert e.below_power_rule is True  # 4 < 60
    whole = result_energy_to_target(doc, None)  # a run that never converged: the whole run's window
    assert whole.energy_j == pytest.approx(4 * (EPOCH_J + EVAL_J)) and whole.power_samples == 7


@pytest.mark.parametrize("samples, hz, below", [(60, 1.0, False), (59, 1.0, True), (60, 0.99, True), (600, 10, False)])
def test_mlperf_power_rule_needs_60_samples_at_1_hz(samples, hz, below):
    assert EnergyToTarget(1.0, 1, 60.0, 60.0, samples, hz).below_power_rule is below


def test_a_long_enough_window_meets_the_power_rule(tmp_path):
    doc = tta_point(tmp_path, 0, [sidecar_doc({UUID_A: power_columns(61.0)}, tta_phases(41))], tta=60.0, epochs=40)
    e = energy_of(doc, epochs=40)  # window [0, 60]: samples t = 0..60
    assert (e.power_samples, e.below_power_rule) == (61, False)


# --- counted once --------------------------------------------------------------------------------------------------

def test_two_gpus_of_one_node_are_both_counted(tmp_path):
    series = {UUID_A: power_columns(3.0), UUID_B: power_columns(3.0)}
    doc = tta_point(tmp_path, 0, [sidecar_doc(series, tta_phases(2, energy={UUID_A: 1.0, UUID_B: 0.5}))])
    assert energy_of(doc).energy_j == pytest.approx(220.0 + 110.0) and energy_of(doc).gpus == 2


def test_two_nodes_are_summed_once_each(tmp_path):
    node0 = sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2, energy={UUID_A: 1.0}))
    node1 = sidecar_doc({UUID_B: power_columns(3.0)}, tta_phases(2, energy={UUID_B: 2.0}), node_rank=1, host="node1")
    doc = tta_point(tmp_path, 0, [node0, node1])
    assert energy_of(doc).energy_j == pytest.approx(220.0 + 440.0) and energy_of(doc).gpus == 2
    named_twice = tta_point(tmp_path, 1, [node0, node1], names=[sidecar_name(0), sidecar_name(1), sidecar_name(1)])
    assert energy_of(named_twice).energy_j == pytest.approx(660.0)  # a file named twice is one node


def test_two_ranks_on_one_gpu_count_it_once(tmp_path):
    """Two CUDA ordinals naming one GPU in a node's sidecar, and two SLURM nodes on one host whose samplers both read
    it (the test cluster's nodes share a machine): one UUID, counted once."""
    one = sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))
    one["gpus"].append({**one["gpus"][0], "cuda_index": 1})
    assert energy_of(tta_point(tmp_path, 0, [one])).energy_j == pytest.approx(220.0)
    same_host = sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2), node_rank=1, host="node0")
    doc = tta_point(tmp_path, 1, [sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2)), same_host])
    assert energy_of(doc).energy_j == pytest.approx(220.0) and energy_of(doc).gpus == 1


def test_the_per_epoch_energy_table_counts_a_shared_gpu_once_too(tmp_path):
    """The telemetry section's energy per timed epoch (analysis.telemetry.stats.point_energy) sums the same GPUs:
    two node sidecars of one host with the same GPU give one GPU's timed epochs (epoch 1: 100 J, its evaluation is
    not timed)."""
    from hpml.analysis.telemetry.points import gather

    node0 = sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))
    doc = tta_point(tmp_path, 0, [node0, {**node0, "node_rank": 1}])
    (point,) = gather([doc]).points
    assert point.energy.energy_j == pytest.approx(EPOCH_J) and point.energy.per_phase_j == pytest.approx(EPOCH_J)
    from hpml.analysis.telemetry.sections import energy_table

    assert energy_table([point], False).frame["gpus"].tolist() == [1]


def test_missing_parts_give_no_energy_and_say_why(tmp_path):
    resumed = tta_point(tmp_path, 0, [sidecar_doc({UUID_A: power_columns(6.0)}, tta_phases(4, first=1))])
    assert energy_of(resumed).energy_j is None and "earlier epochs are in another attempt" in energy_of(resumed).why
    phases = tta_phases(2)
    phases[1]["energy_j"][UUID_A] = None
    failed = tta_point(tmp_path, 1, [sidecar_doc({UUID_A: power_columns(3.0)}, phases)])
    assert energy_of(failed).energy_j is None and "null" in energy_of(failed).why
    node0 = sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))
    lost = tta_point(tmp_path, 2, [node0], names=[sidecar_name(0), sidecar_name(1)])  # node 1's file is missing
    assert energy_of(lost).energy_j is None and "missing" in energy_of(lost).why
    cpu = converging(3, 3.0, 2)
    cpu["telemetry"] = {"status": "unavailable", "reason": "no CUDA device (the workers run on the CPU)",
                        "interval_ms": 100, "sidecars": []}
    assert energy_of({**cpu, "path": "x"}).why == "GPU telemetry unavailable: no CUDA device (the workers run on the CPU)"


# --- per run and per row ---------------------------------------------------------------------------------------------

def test_per_sample_gpu_hours_and_cost_of_a_run(tmp_path):
    doc = converging(0, 36.0, 2, batch=16)
    doc["config"]["resources"].update(nodes=2, gpus_per_node=2)
    doc["config"]["workload"]["gpu_hour_usd"] = 3.0
    doc["measurements"]["global_batch"] = 64  # 4 workers x 16
    doc["telemetry"] = {"status": "ok", "reason": None, "interval_ms": 1000, "sidecars": [sidecar_name(0)]}
    path = write_result(tmp_path / "s", doc)
    write_sidecar(path.parent, sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2)))
    fields = run_fields({**doc, "path": str(path)}, 1, 36.0, 20)  # target after epoch 2, global step 20
    assert fields["energy_j"] == pytest.approx(220.0)
    assert fields["energy_per_sample_j"] == pytest.approx(220.0 / (20 * 64))
    assert fields["gpu_hours"] == pytest.approx(36.0 / 3600 * 4)  # 2 nodes x 2 GPUs held
    assert fields["cost_usd"] == pytest.approx(0.04 * 3.0)
    unpriced = run_fields({**doc, "path": str(path), "config": {**doc["config"], "workload": {}}}, 1, 36.0, 20)
    assert unpriced["cost_usd"] is None and unpriced["gpu_hours"] == pytest.approx(0.04)
    missed = run_fields({**doc, "path": str(path)}, None, None, None)
    assert missed["energy_j"] is None and missed["gpu_hours"] is None and missed["power_samples"] == 4


def test_the_train_workload_takes_a_price_for_its_cost_to_target(compose_values):
    from hpml.conf.schema import config_from_dict
    from hpml.conf.validation import ConfigValueError

    values = compose_values(["experiment=tta_digits", "pricing=h100_cloud"])
    assert (values["workload"]["price_name"], values["workload"]["gpu_hour_usd"]) == ("h100_cloud", 3.0)
    assert compose_values(["workload=train"])["workload"]["gpu_hour_usd"] is None  # default: no price, no cost
    with pytest.raises(ConfigValueError, match="choose a price with pricing=<name>"):
        config_from_dict(compose_values(["workload=train", "workload.gpu_hour_usd=2.5"]))
    older = compose_values(["workload=train"])  # a point's config.yaml written before the price existed
    del older["workload"]["price_name"], older["workload"]["gpu_hour_usd"]
    assert config_from_dict(older).workload.gpu_hour_usd is None  # resumes as pricing=none


def _run(tta, energy, converged=True, power=(100, 10.0)):
    return {"converged": converged, "tta_s": tta if converged else None, "energy_j": energy if converged else None,
            "energy_per_sample_j": energy / 1000 if converged else None, "gpu_hours": tta / 3600 if converged else None,
            "cost_usd": None, "energy_why": None, "gpus_counted": 1, "gpus_held": 1, "gpu_hour_usd": None,
            "power_samples": power[0], "power_hz": power[1], "below_power_rule": power[0] < 60,
            "nvml_run_j": energy, "slurm_asked": False, "slurm_energy_j": None, "slurm_plugin": None}


def test_a_row_scores_energy_over_the_runs_the_time_score_keeps():
    runs = [_run(10.0, 500.0), _run(12.0, 400.0, power=(30, 10.0)), _run(11.0, 700.0), _run(9.0, 0, False)]
    row = row_fields(runs)
    # the miss is the dropped slowest; the fastest converged (10 s, 500 J) is dropped: 11 s and 12 s stay
    assert row["energy_j_olympic"] == pytest.approx((400.0 + 700.0) / 2)
    assert row["energy_j_mean"] == pytest.approx(1600.0 / 3) and row["energy_j_runs"] == 3
    assert row["energy_j_std"] == pytest.approx(152.7525, rel=1e-6)  # sample std of 500, 400, 700
    assert row["gpu_hours_olympic"] == pytest.approx((11.0 + 12.0) / 2 / 3600)
    assert (row["power_checked"], row["power_below"], row["power_samples_min"]) == (4, 1, 30)
    assert row["cost_usd_runs"] == 0 and row["cost_usd_olympic"] != row["cost_usd_olympic"]  # NaN: no price


# --- the report ------------------------------------------------------------------------------------------------------

def test_the_report_shows_the_cost_to_target_and_flags_short_runs(tmp_path, capsys):
    for point, (tta, energy) in enumerate([(3.0, 1.0), (4.0, 2.0), (5.0, 3.0)]):
        tta_point(tmp_path / "sweeps", point, [sidecar_doc({UUID_A: power_columns(3.0)},
                                                           tta_phases(2, energy={UUID_A: energy}))], tta=tta)
    assert report_main([str(tmp_path / "sweeps"), "--out", str(tmp_path / "out")]) == 0
    with open(tmp_path / "out" / "tta_energy.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["energy_j_olympic"]) == pytest.approx(440.0)  # the 4 s run: 2 x (2 x 100 + 2 x 10)
    assert float(row["energy_j_mean"]) == pytest.approx(440.0) and row["power_below"] == "3"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| 3/3 | 0 held, 1 metered | 440.0 / 440.0 ± 220.0 (n=3) |" in report  # the factory's results: 0 GPUs held
    assert "BELOW in 3/3 runs: fewest 4 at 1.3 Hz" in report
    assert "at least 60 power samples per run at 1 Hz or more" in report


def test_cpu_runs_get_one_line_instead_of_the_table(tmp_path, capsys):
    for point in range(3):
        write_result(tmp_path / "sweeps" / "cpu", tta_result(point, top1=[0.5, 0.95], elapsed=[1.0, 2.0],
                                                             train_elapsed=[0.5, 1.0], gpu=None))
    assert report_main([str(tmp_path / "sweeps"), "--out", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert ("Energy to target: none, no run here has NVML energy (no telemetry block in result.json (written before "
            "hpml recorded GPU telemetry)).") in report
    assert not (tmp_path / "out" / "tta_energy.csv").exists()


# --- recorded sidecars: the committed H100 / H200 sweeps -----------------------------------------------------------

def _runs(folder: Path):
    docs = []
    for path in sorted(folder.rglob("points/*/result.json")):
        docs.append({**json.loads(path.read_text()), "path": str(path)})
    return [tta_run(doc) for doc in docs]


def test_committed_tta_sweeps_give_energy_to_target_per_card(committed_sweeps):
    """docs/results/tta_digits: hpml_cnn to 95 % on the digits, 5 seeds per card, one GPU each. Energy to target is
    the sum of the recorded phases' counter differences up to the target evaluation (seed 0 on the H100: epochs 0..9
    and their evaluations, 1,338.306 J); olympic over the runs the TTA olympic mean keeps."""
    from hpml.analysis.tta.energy import energy_table

    h100 = _runs(committed_sweeps("tta_digits/h100"))
    h200 = _runs(committed_sweeps("tta_digits/h200"))
    assert [round(r["energy_j"], 3) for r in h100] == [1338.306, 1264.151, 868.315, 504.43, 635.22]
    assert [round(r["energy_j"], 3) for r in h200] == [918.9, 484.048, 422.573, 385.128, 414.056]
    rows = {r["hardware"]: r for r in energy_table(h100 + h200).to_dict("records")}
    h100_row, h200_row = rows["NVIDIA H100 80GB HBM3"], rows["NVIDIA H200"]
    assert h100_row["energy_j_olympic"] == pytest.approx((1264.151 + 868.315 + 635.22) / 3)  # 922.56 J
    assert h200_row["energy_j_olympic"] == pytest.approx((484.048 + 422.573 + 414.056) / 3)  # 440.23 J
    assert h100_row["gpus_counted"] == 1 and h100_row["power_below"] == 2  # 4.4 s and 5.3 s runs: 44 and 53 samples
    assert h200_row["power_below"] == 4 and h200_row["power_samples_min"] == 32
    seed0 = h100[0]
    assert seed0["metered_share"] == pytest.approx(11.2561 / 11.2763, rel=1e-4)  # the gaps between phases: 0.2 %


def test_committed_device_path_runs_are_below_the_power_rule(committed_sweeps):
    """The device path's 1.5-1.7 s digits runs (docs/results/tta_digits_device) have 15-17 power samples at 10 Hz."""
    runs = [r for r in _runs(committed_sweeps("tta_digits_device/h100")) if r["data_placement"] == "device"]
    assert len(runs) == 10 and all(r["below_power_rule"] for r in runs)
    assert sorted({r["power_samples"] for r in runs}) == [15, 16, 17]


def test_committed_two_gpu_point_counts_both_gpus_once(committed_sweeps, tmp_path):
    """docs/results/gpu_telemetry/h100_2gpu: a 2-GPU DDP point, both GPUs in one node sidecar. Given an evaluation
    record reaching the target after epoch 3, its energy to target is both GPUs' epochs 0-2: 27,610.253 J. The same
    sidecar again as a second node of the same host (the GPUs' UUIDs repeat) changes nothing; as a second node with
    other GPUs (new UUIDs) it doubles."""
    source = next(committed_sweeps("gpu_telemetry/h100_2gpu").rglob("points/0"))
    point = tmp_path / "points" / "0"
    shutil.copytree(source, point)
    doc = json.loads((point / "result.json").read_text())
    doc["measurements"]["evaluation"] = {"epoch": [1, 2, 3], "step": [100, 200, 300], "top1": [0.5, 0.8, 0.95],
                                         "loss": [1.0] * 3, "elapsed_s": [20.5, 27.2, 33.8],
                                         "train_elapsed_s": [20.5, 27.1, 33.7], "eval_s": [0.0] * 3}
    doc["derived"]["tta"] = {"target": 0.95}
    both = (5880.232 + 3997.598 + 4046.141) + (5782.143 + 3940.22 + 3963.919)
    run = tta_run({**doc, "path": str(point / "result.json")})
    assert run["gpus_counted"] == 2 and run["energy_j"] == pytest.approx(both)
    assert run["energy_per_sample_j"] == pytest.approx(both / (300 * 512))
    sidecar = json.loads(gzip.decompress((point / sidecar_name(0)).read_bytes()))
    second = copy.deepcopy(sidecar)
    second["node_rank"] = 1
    write_sidecar(point, second, 1)
    doc["telemetry"]["sidecars"] = [sidecar_name(0), sidecar_name(1)]
    assert tta_run({**doc, "path": str(point / "result.json")})["energy_j"] == pytest.approx(both)
    renamed = json.loads(json.dumps(second).replace("GPU-0b2c", "GPU-ffff").replace("GPU-e6f5", "GPU-eeee"))
    write_sidecar(point, renamed, 1)
    assert tta_run({**doc, "path": str(point / "result.json")})["energy_j"] == pytest.approx(2 * both)


# --- SLURM's own number (item 4) -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("427_1|\n427_1.batch|\n427_1.extern|\n", {"427_1": None}),  # no energy plugin: empty
    ("428|0\n428.batch|0\n", {"428": None}),  # 0 is no reading either
    ("429|123456\n429.batch|100000\n429.0|23000\n430_2|7.5\n", {"429": 123456.0, "430_2": 7.5}),  # the job's own line
    ("", {}),
])
def test_sacct_consumed_energy_is_read_from_each_jobs_own_line(text, expected):
    from hpml.launcher.backends.slurm.energy import parse_consumed_energy

    assert parse_consumed_energy(text) == expected


def test_the_launcher_keeps_sacct_energy_beside_each_ended_point(tmp_path):
    from hpml.contract.sweep_layout import SLURM_ENERGY_FILE, SLURM_ENERGY_KEYS
    from hpml.launcher.backends.slurm.energy import not_recorded, record

    written = record(tmp_path, {0: "429", 1: "430_2", 2: "431"}, "acct_gather_energy/gpu",
                     "429|123456\n429.batch|1\n430_2|\n")
    assert written == [0, 1]  # 431: sacct did not list it (yet), asked again next time
    doc = json.loads((tmp_path / "points" / "0" / SLURM_ENERGY_FILE).read_text())
    assert tuple(doc) == SLURM_ENERGY_KEYS and doc["consumed_energy_j"] == 123456.0
    assert doc["command"] == "sacct -nP -j 429 --format=JobID,ConsumedEnergyRaw"
    assert json.loads((tmp_path / "points" / "1" / SLURM_ENERGY_FILE).read_text())["consumed_energy_j"] is None
    assert not_recorded(tmp_path, {0: "429", 1: "430_2", 2: "431"}) == {2: "431"}
    assert record(tmp_path, {2: "431"}, None, None) == []  # sacct could not be asked: nothing written


def _slurm_file(doc, joules, plugin="acct_gather_energy/gpu"):
    from hpml.contract.sweep_layout import SLURM_ENERGY_FILE

    (Path(doc["path"]).parent / SLURM_ENERGY_FILE).write_text(json.dumps(
        {"job_id": "1", "consumed_energy_j": joules, "acct_gather_energy_type": plugin, "command": "sacct", "queried_at": ""}))


def test_sacct_energy_beside_nvml_with_their_ratio(tmp_path):
    from hpml.analysis.tta.energy import energy_section, energy_table

    docs = [tta_point(tmp_path / "sweeps", p, [sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))])
            for p in range(3)]
    for doc, joules in zip(docs, (264.0, 330.0, None)):  # NVML, whole run: 2 x (100 + 10) = 220 J each
        _slurm_file(doc, joules)
    runs = [tta_run(doc) for doc in docs]
    assert [r["nvml_run_j"] for r in runs] == [220.0, 220.0, 220.0]
    table = energy_table(runs)
    (row,) = table.to_dict("records")
    assert (row["slurm_asked"], row["slurm_recorded"], row["slurm_runs"]) == (3, 2, 2)
    assert row["slurm_energy_j_mean"] == pytest.approx(297.0)
    assert row["slurm_over_nvml_mean"] == pytest.approx((1.2 + 1.5) / 2)
    section = energy_section(table, "t", "tta_energy")
    assert section.tables[0].headers[-1] == "SLURM ConsumedEnergy [J] / NVML whole run [J] (ratio)"
    assert section.tables[0].rows[0][-1] == "297.0 / 220.0 (1.350, n=2)"


def test_a_cluster_without_energy_accounting_says_so_in_one_line(tmp_path):
    from hpml.analysis.tta.energy import energy_section, energy_table

    docs = [tta_point(tmp_path / "sweeps", p, [sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))])
            for p in range(2)]
    for doc in docs:
        _slurm_file(doc, None, "acct_gather_energy/none")
    section = energy_section(energy_table([tta_run(doc) for doc in docs]), "t", "tta_energy")
    assert "SLURM" not in section.tables[0].headers[-1]  # no SLURM column
    assert section.after == "- SLURM accounting records no energy on this cluster (AcctGatherEnergyType=acct_gather_energy/none)"
    local = energy_section(energy_table([tta_run(tta_point(tmp_path / "local", 0, [
        sidecar_doc({UUID_A: power_columns(3.0)}, tta_phases(2))]))]), "t", "tta_energy")
    assert local.after == ""  # a local sweep: SLURM was never asked, nothing said
