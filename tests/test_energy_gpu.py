"""Issue 36 on a 2-GPU machine (`pytest -m gpu tests/test_energy_gpu.py`; skipped without 2 CUDA devices): a 2-GPU DDP
time-to-accuracy point on the digits, launched as a user launches it with a price. Each GPU's energy is counted once:
its sidecar lists two distinct UUIDs, the energy to target is both GPUs' epochs and evaluations up to the target, and
the report's row says 2 GPUs held, 2 metered; GPU-hours and cost follow from the TTA."""

from __future__ import annotations

import csv
import json

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                                                  reason="needs 2 CUDA devices")]


def test_a_two_gpu_ddp_point_counts_each_gpu_once_to_the_target(tmp_path, hpml_in, digits_data):
    done = hpml_in(tmp_path, "launch", "experiment=tta_digits", f"workload.data_root={digits_data / 'cifar'}",
                   "resources.gpus_per_node=2", "resources.workers_per_node=2", "workload.parallel=ddp",
                   "workload.target_accuracy=0.9", "workload.save_model=false", "pricing=h100_cloud",
                   "hydra.sweeper.params={sweep.seed: '0,1,2'}", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = (tmp_path / "sweeps" / "latest").resolve()
    from hpml.analysis.tta.runs import tta_run
    from hpml.workloads.common.telemetry.sidecar import read_sidecar

    for folder in sorted((sweep / "points").iterdir()):
        result = json.loads((folder / "result.json").read_text())
        assert result["status"] == "ok", result["reason"]
        sidecar = read_sidecar(folder / "telemetry.node0.json.gz")
        uuids = {gpu["uuid"] for gpu in sidecar["gpus"]}
        assert len(uuids) == 2 == len(sidecar["gpus"])
        run = tta_run({**result, "path": str(folder / "result.json")})
        assert run["converged"] and run["gpus_counted"] == 2 and run["gpus_held"] == 2
        last = run["epochs_to_target"] - 1
        by_hand = sum(phase["energy_j"][uuid] for phase in sidecar["phases"] for uuid in uuids
                      if phase["name"] in ("epoch", "eval") and phase["index"] <= last)
        print(f"\n{folder.name}: TTA {run['tta_s']:.3f} s, {run['epochs_to_target']} epochs, energy to target "
              f"{run['energy_j']:.1f} J over {sorted(uuids)}, {run['power_samples']} power samples")
        assert run["energy_j"] == pytest.approx(by_hand)
        assert run["gpu_hours"] == pytest.approx(run["tta_s"] / 3600 * 2)
        assert run["cost_usd"] == pytest.approx(run["gpu_hours"] * 3.0)
    report = hpml_in(tmp_path, "report", str(sweep))
    assert report.returncode == 0, report.stderr
    (row,) = list(csv.DictReader(open(sweep / "report" / "tta_energy.csv")))
    assert (row["gpus_held"], row["gpus_counted"], row["runs"]) == ("2", "2", "3")
    assert "2 held, 2 metered" in (sweep / "report" / "report.md").read_text()
