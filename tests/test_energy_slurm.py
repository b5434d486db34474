"""Issue 36 on the 2-node localhost SLURM cluster (tests/slurm/): a 2-node time-to-accuracy point on the CPU. There is
no NVML energy on a CPU and the cluster has no energy plugin, so what is tested is what can be: `hpml launch` keeps
sacct's answer beside the point (slurm_energy.json, ConsumedEnergy null, AcctGatherEnergyType recorded at
submission), and the report's energy-to-target section says in one line each that there is no NVML energy and that
SLURM records none. Needs the cluster up (`bash tests/slurm/cluster.sh up`)."""

from __future__ import annotations

import json

import pytest
from test_slurm import QUICK_LOOKS, slurm_cluster, sweep_dir_of  # noqa: F401  (autouse: fails with what to do if the cluster is down)

from hpml.contract.sweep_layout import SLURM_ENERGY_FILE
from tests.conftest import hpml_here

pytestmark = pytest.mark.slurm  # tests/run.sh runs these one at a time (one cluster), beside the parallel pass


def test_a_two_node_cpu_point_reports_that_neither_nvml_nor_slurm_measured_energy(hpml, tmp_path):
    # the data and the report through cli.main in this process (conftest's hpml_here): their output is the claim,
    # the launch is the real command (issue 41)
    data = hpml_here(["data", "digits", "--root", str(tmp_path / "digits")], tmp_path)
    assert data.returncode == 0, data.stderr
    done = hpml("launch", "experiment=tta_digits", f"workload.data_root={tmp_path / 'digits'}", "cluster=slurm",
                "resources.nodes=2", "resources.workers_per_node=1", "workload.parallel=ddp",
                "workload.target_accuracy=0.5", "workload.save_model=false", "resources.time_min=5",
                "hydra.sweeper.params={sweep.seed: '0'}", *QUICK_LOOKS)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    point = sweep / "points" / "0"
    result = json.loads((point / "result.json").read_text())
    assert result["status"] == "ok" and result["environment"]["world_size"] == 2
    assert result["telemetry"]["status"] == "unavailable"
    kept = json.loads((point / SLURM_ENERGY_FILE).read_text())
    assert kept["job_id"] == json.loads((sweep / "manifest.json").read_text())["points"][0]["job_id"]
    assert kept["consumed_energy_j"] is None and kept["acct_gather_energy_type"] == "acct_gather_energy/none"
    report = hpml_here(["report", str(sweep)], tmp_path)
    assert report.returncode == 0, report.stderr
    text = (sweep / "report" / "report.md").read_text()
    assert "Energy to target: none, no run here has NVML energy (GPU telemetry unavailable: no CUDA device" in text
    assert "SLURM accounting records no energy on this cluster (AcctGatherEnergyType=acct_gather_energy/none)" in text
