"""The multi-node path of the Horovod-style study on the 2-node localhost SLURM cluster (tests/slurm/): the
synthetic benchmark (DDP and Horovod-style) and the all-reduce benchmark over 2 nodes, one torchrun per
node, then `hpml report`. Needs the cluster up (`bash tests/slurm/cluster.sh up`, or `bash tests/run.sh`)."""

from __future__ import annotations

import json

import pytest
from test_slurm import QUICK_LOOKS, slurm_cluster, sweep_dir_of  # noqa: F401  (autouse: fails with what to do if the cluster is down)

from tests.conftest import hpml_here

pytestmark = pytest.mark.slurm  # tests/run.sh runs these one at a time (one cluster), beside the parallel pass


def results_of(sweep):
    return [json.loads(path.read_text()) for path in sorted((sweep / "points").glob("*/result.json"))]


def test_synthetic_ddp_and_horovod_style_over_two_nodes(hpml, tmp_path):
    # 16x16 images and 1 warm-up batch (as tests/test_synthetic.py): ResNet-18 keeps its gradients, and the 3
    # iterations of 2 batches every rank times are kept
    done = hpml("launch", "experiment=synthetic_horovod", "cluster=slurm", "resources.nodes=2",
                "resources.workers_per_node=1", "workload.image_size=16", "workload.num_warmup_batches=1",
                *QUICK_LOOKS)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    results = results_of(sweep)
    assert sorted(r["config"]["workload"]["data_parallel"] for r in results) == ["ddp", "horovod"]
    for result in results:
        assert result["status"] == "ok" and result["environment"]["world_size"] == 2
        assert sorted(rank["slurm_node"] for rank in result["environment"]["ranks"]) == ["n1", "n2"]
        assert len(result["measurements"]["iteration_time_s_per_rank"]) == 2  # both nodes' ranks kept
    report = hpml_here(["report", str(sweep)], tmp_path)  # in this process: its text is the claim
    assert report.returncode == 0, report.stderr
    assert "All-reduce implementations compared: N = 2 (2 × 1)" in report.stdout


def test_allreduce_over_two_nodes_side_by_side_with_the_bare_loop(hpml, tmp_path):
    done = hpml("launch", "experiment=allreduce_vs_bare", "cluster=slurm", "resources.nodes=2",
                "resources.workers_per_node=1", "workload.max_bytes=65536", *QUICK_LOOKS)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = sweep_dir_of(tmp_path)
    for result in results_of(sweep):
        assert result["status"] == "ok" and result["derived"]["all_correct"] is True
        assert sorted(rank["slurm_node"] for rank in result["environment"]["ranks"]) == ["n1", "n2"]
    report = hpml_here(["report", str(sweep)], tmp_path)  # in this process: its text is the claim
    assert report.returncode == 0, report.stderr
    assert "hpml's timed loop vs a bare all_reduce loop" in report.stdout
    assert (sweep / "report" / "allreduce_busbw.png").exists()
