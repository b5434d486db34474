"""The train workload's parts against hand-computed values: LR schedule, phase clock, batches, gradient
bytes, NCCL kernel sums, batch probe, comm probe and overhead check (CPU, gloo, world size 1)."""

from __future__ import annotations

import socket
import statistics

import pytest
import torch
import torch.distributed as dist

from hpml.conf.data_on_disk import cifar10_on_disk
from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.train import Dataset, check_data_parallel
from hpml.conf.workload.train_choices import LrScaling, Parallel
from hpml.conf.workload_contract import Scaling
from hpml.workloads.common.worker import is_out_of_memory
from hpml.workloads.train import lr_schedule, overhead, parallel, phases
from hpml.workloads.train.batch_probe import probe_max_batch
from hpml.workloads.train.data import DeviceBatches, per_worker_batch, resolve_dataset
from hpml.workloads.train.model import build_model, cudnn_benchmark_in_force, gradient_bytes

# --- learning rate (Goyal et al.) ---------------------------------------------------------------------

def test_linear_scaling_rule():
    assert lr_schedule.target_lr(0.1, LrScaling.linear, 1024, 128) == pytest.approx(0.8)  # 0.1 x 8
    assert lr_schedule.target_lr(0.1, LrScaling.linear, 64, 128) == pytest.approx(0.05)
    assert lr_schedule.target_lr(0.1, LrScaling.none, 1024, 128) == 0.1


def test_gradual_warmup_ramps_linearly_per_step_then_holds():
    # 2 warm-up epochs of 10 steps: 20 steps from 0.1 to 0.8, i.e. +0.035 per step.
    at = [lr_schedule.lr_at_step(s, 10, 0.1, 0.8, 2) for s in (0, 1, 10, 19, 20, 50)]
    assert at == pytest.approx([0.1, 0.135, 0.45, 0.765, 0.8, 0.8])


def test_warmup_only_rises_and_zero_epochs_is_off():
    assert lr_schedule.lr_at_step(0, 10, 0.1, 0.05, 2) == pytest.approx(0.05)  # target below lr: flat
    assert lr_schedule.lr_at_step(0, 10, 0.1, 0.8, 0) == pytest.approx(0.8)
    assert lr_schedule.lr_at_step(5, 10, 0.1, 0.8, 0.5) == pytest.approx(0.8)  # half an epoch = 5 steps


def test_warmup_from_zero_then_linear_decay_to_zero_is_the_triangular_schedule():
    # 1 warm-up epoch of 10 steps from 0 to 0.05, then down to 0 at the end of epoch 6 (step 60), then 0
    at = [lr_schedule.lr_at_step(s, 10, 0.05, 0.05, 1, warmup_from_zero=True, decay_epochs=6)
          for s in (0, 5, 10, 35, 59, 60, 80)]
    assert at == pytest.approx([0.0, 0.025, 0.05, 0.025, 0.001, 0.0, 0.0])
    # without warm-up the fall starts at step 0: 0.1 x (1 - 15 / 20)
    assert lr_schedule.lr_at_step(15, 10, 0.1, 0.1, 0, decay_epochs=2) == pytest.approx(0.025)


# --- batches and devices -----------------------------------------------------------------------------

class _Cfg:
    def __init__(self, batch_size, scaling, devices_per_worker=1):
        self.batch_size, self.scaling, self.devices_per_worker = batch_size, scaling, devices_per_worker


def test_per_worker_batch_weak_strong_and_data_parallel():
    assert per_worker_batch(_Cfg(32, Scaling.weak), 4) == 32
    assert per_worker_batch(_Cfg(32, Scaling.weak, devices_per_worker=4), 1) == 128  # DP: 32 per GPU
    assert per_worker_batch(_Cfg(256, Scaling.strong), 4) == 64
    assert per_worker_batch(_Cfg(256, Scaling.strong, devices_per_worker=4), 1) == 256  # DP splits it


def test_gradient_bytes_counts_trainable_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1, bias=False))
    model[1].weight.requires_grad_(False)
    assert gradient_bytes(model) == (3 * 2 + 2) * 4


def test_cifar_stem_replaces_the_imagenet_stem():
    class Cfg:
        model, num_classes, cifar_stem, channels_last, activation_checkpointing = "resnet18", 10, True, False, False
        input_channels = 3

    model = build_model(Cfg(), torch.device("cpu"))
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert isinstance(model.maxpool, torch.nn.Identity)
    assert gradient_bytes(model) == 4 * sum(p.numel() for p in model.parameters())
    Cfg.model = "mobilenet_v3_small"
    with pytest.raises(ValueError, match="cifar_stem=true needs a ResNet"):
        build_model(Cfg(), torch.device("cpu"))


def test_auto_dataset_takes_cifar10_only_when_every_file_is_there(tmp_path):
    class Cfg:
        dataset, data_root, image_size, num_classes, synthetic_samples = Dataset.auto, str(tmp_path), 32, 10, 64
        max_samples = None

    kind, note = resolve_dataset(Cfg())
    assert kind == Dataset.synthetic and "found no CIFAR-10" in note and "3x32x32" in note
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
        (folder / name).write_bytes(b"")
    assert cifar10_on_disk(str(tmp_path))
    assert resolve_dataset(Cfg()) == (Dataset.cifar10, None)


def test_device_batches_cycle_a_small_pool():
    batches = DeviceBatches(steps=5, batch=4, num_classes=3, image_size=8, device=torch.device("cpu"), seed=0)
    items = list(batches)
    assert len(batches) == 5 and len(items) == 5
    assert items[0][0].shape == (4, 3, 8, 8) and items[0][1].shape == (4,)
    assert items[2][0] is items[0][0]  # pool of 2


# --- config checks of the study's keys ---------------------------------------------------------------

def _resources(workers=1, gpus=0, nodes=1):
    return ResourcesConfig(nodes=nodes, workers_per_node=workers, gpus_per_node=gpus, cpus_per_worker=1,
                           mem_gb=0, time_min=5)


class _DpCfg:
    def __init__(self, dp_devices):
        self.dp_devices, self.parallel = dp_devices, Parallel.dp


@pytest.mark.parametrize("resources, dp_devices, message", [
    (_resources(workers=2, gpus=2), 2, "resources.workers_per_node='2 on 1 node(s)' is not allowed: 1 on 1 node"),
    (_resources(gpus=2), 4, "workload.dp_devices=4 is not allowed: at most resources.gpus_per_node=2"),
    (_resources(gpus=0), 2, "workload.dp_devices=2 is not allowed: 1 without GPUs"),
])
def test_data_parallel_checks_name_the_field(resources, dp_devices, message):
    with pytest.raises(ConfigValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_data_parallel(_DpCfg(dp_devices), resources)


def test_study_keys_compose_and_validate(compose_values):
    from hpml.conf.schema import config_from_dict

    values = compose_values(["workload.parallel=dp", "resources.gpus_per_node=4", "workload.dp_devices=4"])
    assert config_from_dict(values).workload.devices_per_worker == 4
    with pytest.raises(ConfigValueError, match="workload.dp_devices=2 is not allowed: 1 when workload.parallel=ddp"):
        config_from_dict(compose_values(["workload.dp_devices=2"]))
    with pytest.raises(ConfigValueError, match="a multiple of the 4 devices"):
        config_from_dict(compose_values(["workload.parallel=dp", "resources.gpus_per_node=4", "workload.dp_devices=4",
                                         "workload.scaling=strong", "workload.batch_size=30"]))
    hardware = compose_values(["hardware=h200_nvlink"])["workload"]
    assert (hardware["link"], hardware["link_peak_GBps"]) == ("h200_nvlink", 450.0)


@pytest.mark.parametrize("overrides, in_force", [
    ([], True),                                                                    # DDP: as configured
    (["workload.cudnn_benchmark=false"], False),
    (["workload.parallel=dp", "resources.gpus_per_node=1"], True),                 # one GPU: no replica threads
    (["workload.parallel=dp", "resources.gpus_per_node=2", "workload.dp_devices=2"], False),
])
def test_cudnn_benchmark_is_off_only_under_data_parallel_over_several_gpus(compose_values, overrides, in_force):
    from hpml.conf.schema import config_from_dict

    assert cudnn_benchmark_in_force(config_from_dict(compose_values(overrides)).workload) is in_force


# --- phase clock ---------------------------------------------------------------------------------------

def test_phase_clock_on_cpu_reads_hand_set_times(monkeypatch):
    # perf_counter readings in call order: epoch start, then per step: begin, loaded (host), loaded mark,
    # h2d, forward, backward, optimizer.
    ticks = iter([0.0,
                  1.0, 1.5, 1.5, 1.75, 2.75, 4.75, 5.0,
                  5.5, 5.5, 5.5, 5.5, 6.0, 7.0, 7.25])
    monkeypatch.setattr(phases.time, "perf_counter", lambda: next(ticks))
    clock = phases.PhaseClock(torch.device("cpu"))
    clock.start_epoch()
    for _ in range(2):
        clock.begin_step()
        clock.loaded()
        for phase in phases.DEVICE_PHASES:
            clock.mark(phase)
    out = clock.read()
    assert out["data"] == pytest.approx([0.5, 0.0])
    assert out["h2d"] == pytest.approx([0.25, 0.0])
    assert out["forward"] == pytest.approx([1.0, 0.5])
    assert out["backward"] == pytest.approx([2.0, 1.0])
    assert out["optimizer"] == pytest.approx([0.25, 0.25])
    assert out["step"] == pytest.approx([5.0, 2.25])  # 0 -> 5.0 -> 7.25
    assert phases.train_seconds(out) == pytest.approx([3.5, 1.75])


def test_phase_clock_refuses_phases_out_of_order():
    clock = phases.PhaseClock(torch.device("cpu"))
    clock.start_epoch()
    clock.begin_step()
    clock.loaded()
    with pytest.raises(RuntimeError, match="out of order"):
        clock.mark("forward")


def test_nccl_seconds_sums_only_nccl_kernels():
    kernels = [("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1500.0), ("sm90_xmma_gemm", 9000.0),
               ("ncclKernel_Broadcast", 500.0)]
    assert parallel.nccl_seconds(kernels) == pytest.approx(0.002)


# --- out of memory -----------------------------------------------------------------------------------

def test_out_of_memory_errors_of_cuda_and_cpu():
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried ..."))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_batch_probe_doubles_until_out_of_memory():
    def make_batch(batch):
        if batch >= 16:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return torch.randn(batch, 4), torch.randint(0, 2, (batch,))

    probe = probe_max_batch(lambda: torch.nn.Linear(4, 2), make_batch, torch.device("cpu"), start=2, limit=64,
                            autocast=lambda: torch.autocast("cpu", enabled=False))
    assert [t["batch"] for t in probe["tried"]] == [2, 4, 8, 16]
    assert [t["fits"] for t in probe["tried"]] == [True, True, True, False]
    assert (probe["largest_fitting"], probe["first_oom"]) == (8, 16)
    no_limit_hit = probe_max_batch(lambda: torch.nn.Linear(4, 2), make_batch, torch.device("cpu"), start=2,
                                   limit=4, autocast=lambda: torch.autocast("cpu", enabled=False))
    assert (no_limit_hit["largest_fitting"], no_limit_hit["first_oom"]) == (4, None)


# --- comm probe and overhead check (gloo, one rank) ---------------------------------------------------

@pytest.fixture
def gloo_world_of_one():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_comm_probe_times_no_sync_and_synced_blocks(gloo_world_of_one):
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))

    def forward_backward():
        model.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()

    probe = parallel.comm_probe(model, forward_backward, torch.device("cpu"), steps=3, rounds=2)
    assert len(probe["no_sync_step_s"]) == 6 and len(probe["sync_step_s"]) == 6
    assert probe["no_sync_median_s"] == statistics.median(probe["no_sync_step_s"])
    assert probe["exposed_comm_s"] == pytest.approx(probe["sync_median_s"] - probe["no_sync_median_s"])
    assert parallel.ddp_bucket_bytes(model) == [(8 * 2 + 2) * 4]


def test_overhead_check_alternates_blocks_and_computes_the_ratio(gloo_world_of_one, monkeypatch):
    # Block wall times in the order they run: round 0 plain 2 s, instrumented 2.5 s; round 1 (instrumented
    # first) 2.5 s, plain 2 s; round 2 plain 2 s, instrumented 2.5 s.
    durations = iter([2.0, 2.5, 2.5, 2.0, 2.0, 2.5])
    now = [0.0]

    def fake_perf_counter():
        return now[0]

    calls = []

    def run_steps(clock, steps):
        calls.append(type(clock).__name__)
        now[0] += next(durations)

    monkeypatch.setattr(overhead.time, "perf_counter", fake_perf_counter)
    monkeypatch.setattr(phases.time, "perf_counter", fake_perf_counter)
    check = overhead.overhead_check(run_steps, torch.device("cpu"), steps=10, rounds=3, samples_per_step=32)
    assert calls == ["NullClock", "PhaseClock", "PhaseClock", "NullClock", "NullClock", "PhaseClock"]
    assert check["plain_block_s"] == [2.0, 2.0, 2.0] and check["instrumented_block_s"] == [2.5, 2.5, 2.5]
    assert check["plain_median_samples_per_s"] == pytest.approx(160.0)  # 10 x 32 / 2
    assert check["instrumented_median_samples_per_s"] == pytest.approx(128.0)
    assert check["overhead"] == pytest.approx(0.2)


def casts_in(run) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return sum(e.count for e in prof.key_averages() if e.key == "aten::_to_copy")


def test_the_evaluation_casts_each_weight_once_a_pass_not_once_a_batch(gloo_world_of_one):
    """bf16 autocast caches a weight's cast within one context: the held-out pass is one context, so a batch more
    costs its own casts (input, logits, sums), never the model's 20 weight and bias casts again."""
    from types import SimpleNamespace

    from hpml.conf.workload.train_choices import Precision
    from hpml.workloads.common.distributed import DistContext
    from hpml.workloads.train.evaluation import evaluate

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(9)], torch.nn.Linear(16, 4))
    cfg = SimpleNamespace(precision=Precision.bf16, channels_last=False)
    ctx = DistContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"), backend="gloo")
    batches = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(6)]
    two, six = (casts_in(lambda n=n: evaluate(model, batches[:n], cfg, ctx)) for n in (2, 6))
    per_batch = (six - two) / 4
    assert 0 < per_batch < 20, (two, six)  # 20: every weight and bias again
    top1, loss = evaluate(model, batches, cfg, ctx)
    assert 0 <= top1 <= 1 and loss > 0
