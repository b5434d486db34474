"""workloads/synthetic/: its config (protocol, collective and pricing groups, presets), and real runs on
CPU: torchrun with 2 gloo workers, and `hpml launch` of the presets end to end, then `hpml report`."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from hpml.analysis.results import load_results
from hpml.analysis.synthetic.runs import synthetic_runs
from hpml.analysis.synthetic.tables import paired_table, protocol_table
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.synthetic import NcclAlgo, SyntheticConfig
from hpml.launcher.torchrun import FORK_ENV
from hpml.workloads.synthetic.nccl_algo import nccl_algo_value, set_nccl_algo
from hpml.workloads.synthetic.protocol import horovod_numbers
from hpml.workloads.synthetic.steps import ddp_bucket_cap_mb
from tests.conftest import hpml_here, torchrun_as_a_job_runs_it

TINY = ["experiment=synthetic_horovod"]
# Less work per launch for the real runs below, which assert counts, rates and report sections but nothing about
# the input size or the warm-up: ResNet-18 on 16x16 images (about a quarter of the tiny protocol's 32x32 compute, the
# same parameters and gradients) after 1 warm-up batch instead of 2 (issue 41)
LIGHTER = ["workload.image_size=16", "workload.num_warmup_batches=1"]


# --- config ------------------------------------------------------------------------------------------


def test_defaults_are_horovods_protocol(compose_values):
    cfg = config_from_dict(compose_values(["workload=synthetic"])).workload
    assert isinstance(cfg, SyntheticConfig)
    assert (cfg.model, cfg.image_size, cfg.num_classes, cfg.batch_size) == ("resnet50", 224, 1000, 32)
    assert (cfg.num_warmup_batches, cfg.num_batches_per_iter, cfg.num_iters) == (10, 10, 10)
    assert (cfg.fusion_threshold_mb, cfg.fp16_allreduce, cfg.backward_passes_per_step) == (64.0, False, 1)
    assert cfg.ddp_broadcast_buffers is True and cfg.paired_rounds == 0  # torch's DDP default; no side-by-side check
    assert (cfg.backend.value, cfg.nccl_algo.value, cfg.price_name, cfg.gpu_hour_usd) == ("auto", "auto", "none",
                                                                                         None)


@pytest.mark.parametrize("collective, backend, algo", [("gloo", "gloo", "auto"), ("nccl", "nccl", "auto"),
                                                       ("nccl_ring", "nccl", "Ring"), ("nccl_tree", "nccl", "Tree")])
def test_the_collective_group_sets_backend_and_algorithm_together(compose_values, collective, backend, algo):
    values = compose_values(["workload=synthetic", f"collective={collective}", "resources.gpus_per_node=2"])
    assert (values["workload"]["backend"], values["workload"]["nccl_algo"]) == (backend, algo)
    config_from_dict(values)


def test_the_pricing_group_puts_the_price_into_the_resolved_config(compose_values):
    values = compose_values(["workload=synthetic", "pricing=h200_cloud"])
    assert (values["workload"]["price_name"], values["workload"]["gpu_hour_usd"]) == ("h200_cloud", 4.0)


def test_presets_run_small_and_protocol_horovod_brings_resnet50_back(compose_values):
    for preset in ("synthetic_horovod", "synthetic_scaling", "synthetic_allreduce"):
        values = compose_values([f"experiment={preset}"])
        assert values["sweep"]["name"] == preset
        assert (values["workload"]["model"], values["workload"]["image_size"]) == ("resnet18", 32)
        config_from_dict(values)
    values = compose_values(["experiment=synthetic_horovod", "protocol=horovod", "resources.gpus_per_node=4",
                             "resources.workers_per_node=4", "collective=nccl_ring"])
    cfg = config_from_dict(values).workload
    assert (cfg.model, cfg.image_size, cfg.num_iters, cfg.nccl_algo) == ("resnet50", 224, 10, NcclAlgo.Ring)


@pytest.mark.parametrize("overrides, message", [
    (["collective=nccl_ring"], "workload.backend='nccl' is not allowed: gloo or auto when the workers have no GPUs"),
    (["workload.nccl_algo=Tree"], "workload.nccl_algo='Tree' is not allowed: auto unless the backend is nccl"),
    (["workload.backend=gloo", "workload.nccl_algo=Ring", "resources.gpus_per_node=2"],
     "workload.nccl_algo='Ring' is not allowed"),
    (["workload.scaling=strong", "workload.batch_size=30", "resources.workers_per_node=4"],
     "workload.batch_size=30 is not allowed: a multiple of the world size 4"),
    (["workload.gpu_hour_usd=2.5"], "choose a price with pricing=<name>"),
    (["workload.fusion_threshold_mb=-1"], "workload.fusion_threshold_mb=-1.0 is not allowed"),
    (["workload.num_iters=0"], "workload.num_iters=0 is not allowed"),
    (["workload.paired_rounds=-1"], "workload.paired_rounds=-1 is not allowed: an integer >= 0"),
])
def test_bad_values_name_the_field(compose_values, overrides, message):
    with pytest.raises(ConfigValueError, match=message.replace("(", r"\(").replace("*", r"\*")):
        config_from_dict(compose_values(["workload=synthetic"] + overrides))


def test_a_bad_combination_fails_before_anything_runs(tmp_path):
    # through cli.main in this process (a Python start less, issue 41); test_launch_checks.py runs the command itself
    # for each class of bad value
    done = hpml_here(["launch", "experiment=synthetic_allreduce", "collective=nccl_tree"], tmp_path)
    assert done.returncode == 2
    assert "hpml: error: workload.backend='nccl' is not allowed" in done.stderr
    assert not (tmp_path / "sweeps").exists()


def test_nccl_algo_reaches_the_environment_for_the_all_reduce_only(monkeypatch):
    monkeypatch.delenv("NCCL_ALGO", raising=False)
    assert set_nccl_algo(NcclAlgo.auto, (2, 28, 9)) is None and "NCCL_ALGO" not in os.environ
    monkeypatch.setenv("NCCL_ALGO", "Tree")
    assert set_nccl_algo(NcclAlgo.auto, (2, 28, 9)) == "Tree"  # auto leaves the user's environment alone
    assert set_nccl_algo(NcclAlgo.Ring, (2, 28, 9)) == "allreduce:ring" == os.environ["NCCL_ALGO"]
    assert set_nccl_algo(NcclAlgo.Tree, (2, 24, 3)) == "allreduce:tree"


def test_nccl_before_2_24_gets_a_bare_ring_and_refuses_tree():
    # a bare NCCL_ALGO=Tree applies to every collective, and NCCL has no tree all-gather
    assert nccl_algo_value(NcclAlgo.Ring, (2, 21, 5)) == "Ring"
    with pytest.raises(RuntimeError, match="needs NCCL >= 2.24"):
        nccl_algo_value(NcclAlgo.Tree, (2, 21, 5))


def test_no_fusion_gives_ddp_a_one_byte_bucket_cap():
    # torch 2.11's DDP refuses bucket_cap_mb=0; a 1-byte cap puts every gradient in a bucket of its own.
    assert int(ddp_bucket_cap_mb(0) * 1024 * 1024) == 1
    assert ddp_bucket_cap_mb(25) == 25


def test_the_workloads_own_horovod_numbers_match_hand_computed_ones():
    numbers = horovod_numbers([100, 110, 95], world_size=4)
    assert numbers["per_gpu_pm"] == pytest.approx(12.22276, rel=1e-5)
    assert numbers["total_mean"] == pytest.approx(406.666667)


# --- real runs ----------------------------------------------------------------------------------------


def run_torchrun(values: dict, folder: Path, workers: int):
    folder.mkdir(parents=True)
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(values, sort_keys=False))
    command = torchrun_as_a_job_runs_it(workers, "hpml.workloads.synthetic", "--config", str(config))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **FORK_ENV})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((folder / "result.json").read_text()), done.stdout


@pytest.fixture(scope="module")
def horovod_result(tmp_path_factory, compose_values):
    """2 gloo workers, Horovod-style with fp16 compression, 2 backward passes per step, 1 MiB buckets; then 3
    rounds of DDP and Horovod-style side by side with the same knobs (LIGHTER: 16x16 images, 1 warm-up batch)."""
    values = compose_values(TINY + LIGHTER + ["resources.workers_per_node=2", "workload.data_parallel=horovod",
                                    "workload.fp16_allreduce=true", "workload.backward_passes_per_step=2",
                                    "workload.fusion_threshold_mb=1", "workload.batch_size=4",
                                    "workload.paired_rounds=3"])
    return run_torchrun(values, tmp_path_factory.mktemp("synthetic") / "points" / "0", 2)


def test_torchrun_run_keeps_every_ranks_rates_raw(horovod_result):
    result, stdout = horovod_result
    assert result["status"] == "ok" and result["identity"]["workload"] == "synthetic"
    m = result["measurements"]
    assert m["per_worker_batch"] == 4 and m["global_batch"] == 8
    assert m["images_per_iteration_per_rank"] == 4 * 2 * 2  # batch x batches per iteration x passes
    assert [len(r) for r in m["iteration_time_s_per_rank"]] == [3, 3]
    assert [len(r) for r in m["host_iteration_time_s_per_rank"]] == [3, 3]
    for times, loop in zip(m["iteration_time_s_per_rank"], m["loop_time_s_per_rank"]):
        assert all(t > 0 for t in times) and sum(times) <= loop
    assert m["gradient_bytes"] == 4 * m["parameters"]  # float32 gradients
    assert "perf_counter" in result["timing"]["iteration"]
    assert "Img/sec per CPU" in stdout and "Total img/sec on 2 CPU(s)" in stdout


def test_torchrun_run_derived_numbers_equal_the_analysis(horovod_result):
    result, _ = horovod_result
    m, derived = result["measurements"], result["derived"]
    rates = [[m["images_per_iteration_per_rank"] / t for t in r] for r in m["iteration_time_s_per_rank"]]
    assert derived["horovod"]["per_gpu_mean"] == pytest.approx(statistics.fmean(rates[0]), rel=1e-12)
    assert derived["horovod"]["total_mean"] == pytest.approx(2 * statistics.fmean(rates[0]), rel=1e-12)
    row = protocol_table(synthetic_runs([result]).rows).iloc[0]
    assert row["throughput_median"] == pytest.approx(derived["total_images_per_s_median"], rel=1e-12)
    assert row["throughput_cv"] == pytest.approx(derived["total_images_per_s_cv"], rel=1e-12)
    assert row["horovod_total_mean"] == pytest.approx(derived["horovod"]["total_mean"], rel=1e-12)


def test_torchrun_run_times_ddp_and_horovod_style_side_by_side(horovod_result):
    result, _ = horovod_result
    paired = result["measurements"]["paired"]
    assert paired["rounds"] == 3 and paired["order"] == ["ddp", "horovod", "horovod", "ddp", "ddp", "horovod"]
    assert paired["images_per_iteration_per_rank"] == 4 * 2 * 2
    for method in ("ddp", "horovod"):
        times = paired["iteration_time_s_per_rank"][method]
        assert [len(rank) for rank in times] == [3, 3] and all(t > 0 for rank in times for t in rank)
    row = paired_table(synthetic_runs([result]).rows).iloc[0]
    ddp, horovod = ([sum(16 / rank[r] for rank in paired["iteration_time_s_per_rank"][m]) for r in range(3)]
                    for m in ("ddp", "horovod"))
    assert row["ratio_median"] == pytest.approx(statistics.median(h / d for d, h in zip(ddp, horovod)), rel=1e-12)


def test_hpml_launch_strong_and_weak_scaling_end_to_end(hpml, tmp_path):
    """The synthetic_scaling preset as written (its batch 8, its 3 iterations), weak and strong x 1 and 2 workers,
    with LIGHTER work and 1 batch an iteration (nothing here counts images); then `hpml report`."""
    done = hpml("launch", "experiment=synthetic_scaling", *LIGHTER, "workload.num_batches_per_iter=1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[synthetic_scaling] 4/4 done" in done.stdout
    sweep = tmp_path / "sweeps" / "latest"
    loaded = load_results(sweep)
    assert loaded.problems == [] and len(loaded.rows) == 4
    batches = sorted((d["config"]["workload"]["scaling"], d["environment"]["world_size"],
                      d["measurements"]["per_worker_batch"]) for d in loaded.rows)
    assert batches == [("strong", 1, 8), ("strong", 2, 4), ("weak", 1, 8), ("weak", 2, 8)]
    report = hpml_here(["report", str(sweep)], tmp_path)  # in this process: its text is the claim (issue 41)
    assert report.returncode == 0, report.stderr
    assert "resnet18, strong scaling (global batch fixed)" in report.stdout
    assert "resnet18, weak scaling (per-worker batch fixed)" in report.stdout
    assert "efficiency (speedup / (N / N_base))" in report.stdout and "efficiency (t_base / t_N)" in report.stdout
    assert (sweep / "report" / "synthetic_throughput.png").stat().st_size > 0


def test_hpml_launch_compares_ddp_and_horovod_style(hpml, tmp_path):
    """The synthetic_allreduce preset with its bucket sweep cut to one value: DDP vs Horovod-style on 2 gloo
    workers, compared in one table (LIGHTER work, 1 batch an iteration: nothing here counts images)."""
    done = hpml("launch", "experiment=synthetic_allreduce", "workload.fusion_threshold_mb=0",
                "workload.ddp_broadcast_buffers=false", *LIGHTER, "workload.num_batches_per_iter=1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[synthetic_allreduce] 2/2 done" in done.stdout
    report = hpml_here(["report", str(tmp_path / "sweeps" / "latest")], tmp_path)
    assert report.returncode == 0, report.stderr
    assert "All-reduce implementations compared: N = 2 (1 × 2)" in report.stdout
    rows = [line for line in report.stdout.splitlines() if line.startswith("| gloo | auto |")]
    assert len(rows) == 2 and {row.split(" | ")[2] for row in rows} == {"ddp", "horovod"}


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
@pytest.mark.parametrize("collective", ["nccl_ring", "nccl_tree"])
def test_nccl_on_two_gpus_with_a_forced_algorithm(tmp_path, compose_values, collective):
    values = compose_values(TINY + ["resources.gpus_per_node=2", "resources.workers_per_node=2",
                                    f"collective={collective}", "workload.data_parallel=horovod"])
    result, _ = run_torchrun(values, tmp_path / "points" / "0", 2)
    assert result["status"] == "ok" and result["environment"]["backend"] == "nccl"
    algo = "allreduce:" + values["workload"]["nccl_algo"].lower()  # the all-reduce only (NCCL >= 2.24)
    assert result["measurements"]["nccl_algo_env"] == algo and result["environment"]["env"]["NCCL_ALGO"] == algo
    assert "CUDA events" in result["timing"]["iteration"]
