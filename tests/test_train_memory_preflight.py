"""The train preflight's lower bound of one step's memory (conf/train_memory.py): the count against a hand count on
hpml_cnn, a launch far beyond any machine refused in one line with nothing written, and the presets not refused."""

from __future__ import annotations

import pytest
import torch

from hpml.conf.schema import config_from_dict
from hpml.conf.train_memory import host_memory, step_memory
from hpml.conf.workload.train import per_worker_batch
from hpml.conf.workload.train_data import on_disk
from hpml.launcher.backends import place
from hpml.launcher.preflight import config_problems

# hpml_cnn (models/small_cnn.py) on 3 x 32 x 32, 10 classes, counted by hand.
# Parameters: conv 3->32 3x3 no bias 864, BN 2x32; conv 32->64 18,432, BN 2x64; conv 64->128 73,728, BN 2x128;
# Linear 128->10 1,280 + 10.
PARAMS = 864 + 64 + 18_432 + 128 + 73_728 + 256 + 1_290  # 94,762
# Buffers: BN running mean and var 2 x (32 + 64 + 128) fp32, and 3 num_batches_tracked int64.
STATE_BYTES = PARAMS * 4 + 2 * (32 + 64 + 128) * 4 + 3 * 8
# Leaf outputs kept for backward, per sample: conv 32x32x32 (BN saves it), BN 32x32x32 (the in-place ReLU writes
# into it and keeps it; the max-pool reads it), pool 32x16x16 (the next conv saves it); the same for 64x16x16 and
# 64x8x8; conv and BN 128x8x8 (the global pool saves its input), pool 128 (Linear saves it). The Linear's 10 logits
# are read by the loss, which keeps its own output: not counted.
KEPT = 2 * 32 * 32 * 32 + 32 * 16 * 16 + 2 * 64 * 16 * 16 + 64 * 8 * 8 + 2 * 128 * 8 * 8 + 128  # 127,104
INPUT = 3 * 32 * 32  # elements per sample


def placed(values):
    """The point's config as the launcher's preflight checks it: built, then placed where its backend runs it."""
    config = config_from_dict(values)
    place(config)
    return config


def bound(cfg, world_size: int = 1):
    return step_memory(cfg, per_worker_batch(cfg, world_size), on_disk(cfg))


def memory_problem(cfg):
    """The train preflight's one problem, or None: every other check passes on these points."""
    problems = cfg.preflight_problems()
    assert len(problems) <= 1, problems
    return problems[0] if problems else None


def hpml_cnn(compose_values, *overrides):
    return placed(compose_values(["experiment=tiny/train", "workload.model=hpml_cnn", "workload.batch_size=8",
                                  "workload.momentum=0.9", *overrides])).workload


def test_hpml_cnns_bound_is_the_hand_count(compose_values):
    assert PARAMS == 94_762 and KEPT == 127_104
    memory = bound(hpml_cnn(compose_values))
    assert (memory.weights, memory.gradients, memory.momentum) == (STATE_BYTES, PARAMS * 4, PARAMS * 4)
    assert memory.activations == KEPT * 8 * 4
    assert memory.inputs == 8 * INPUT * 4 and memory.data == 0
    # the end of the forward (activations, no gradients yet) is the larger moment here
    assert memory.total == STATE_BYTES + PARAMS * 4 + KEPT * 8 * 4 + 8 * INPUT * 4


@pytest.mark.parametrize("overrides, momentum, forward_samples, step_samples, element, chunks", [
    (["workload.momentum=0"], 0, 8, 8, 4, 1),  # plain SGD keeps no momentum buffer
    (["workload.precision=bf16"], 1, 8, 8, 2, 1),  # autocast: activations and inputs in 2 bytes, weights fp32
    (["workload.precision=fp16"], 1, 8, 8, 2, 1),
    (["workload.accumulation_chunks=4"], 1, 2, 8, 4, 4),  # a forward keeps one chunk's activations, and the
    (["workload.dataset=auto", "workload.batch_augmentation=2", "workload.accumulation_chunks=2"], 1, 8, 16, 4, 2),
    (["workload.scaling=strong", "resources.workers_per_node=2"], 1, 4, 4, 4, 1),  # the global batch split over 2
])
def test_each_key_changes_its_part_of_the_bound(compose_values, overrides, momentum, forward_samples, step_samples,
                                                element, chunks):
    cfg = hpml_cnn(compose_values, *overrides)
    memory = bound(cfg, 2 if "resources.workers_per_node=2" in overrides else 1)
    assert (memory.weights, memory.momentum) == (STATE_BYTES, momentum * PARAMS * 4)
    assert memory.activations == KEPT * forward_samples * element
    assert memory.inputs == step_samples * INPUT * element
    gradients_meanwhile = PARAMS * 4 if chunks > 1 else 0  # the earlier chunks' gradients, during a later forward
    assert memory.total == STATE_BYTES + momentum * PARAMS * 4 + memory.inputs + memory.activations + gradients_meanwhile


def test_without_activations_the_end_of_the_backward_is_the_larger_moment(compose_values):
    memory = bound(hpml_cnn(compose_values, "workload.activation_checkpointing=true"))
    assert memory.activations == 0 and memory.inputs == 8 * INPUT * 4
    assert memory.total == STATE_BYTES + 2 * PARAMS * 4 + 8 * INPUT * 4  # weights, momentum, gradients, inputs


def test_leaf_outputs_that_autograd_frees_are_not_counted():
    """ResNet-50's four downsample BatchNorm outputs are read only by the residual add (which keeps nothing): the
    count is every leaf output's new storage less exactly those."""
    from hpml.conf.model_input import meta_forward
    from hpml.models.stats.layers import layer_rows, meta_model

    rows = layer_rows(meta_model("resnet50", 10), (3, 224, 224), batch=1)
    new_storages = sum(r.activations for r in rows if r.type != "ReLU")  # every ReLU of it is in place
    logits = 10
    downsample = 256 * 56 * 56 + 512 * 28 * 28 + 1024 * 14 * 14 + 2048 * 7 * 7
    assert meta_forward("resnet50", 224, 10).saved_leaf_outputs == new_storages - logits - downsample


def test_the_device_data_path_adds_the_decoded_training_split(compose_values, digits_data):
    cfg = hpml_cnn(compose_values, "workload.dataset=cifar10", f"workload.data_root={digits_data / 'cifar'}",
                   "workload.data_placement=device")
    assert bound(cfg).data == 1438 * (3 * 32 * 32 + 8)  # uint8 images, int64 labels
    host = hpml_cnn(compose_values, "workload.dataset=cifar10", f"workload.data_root={digits_data / 'cifar'}")
    assert bound(host).data == 0


FAR_BEYOND = ["workload.model=resnet50", "workload.image_size=224", "workload.batch_size=16384",
              "workload.synthetic_samples=16384"]  # input 9.19 GiB (under the 64 GiB bound), 1,277 GiB kept for backward


def test_a_step_far_beyond_the_host_is_refused_in_one_line_before_anything_is_written(hpml, tmp_path):
    done = hpml("launch", "experiment=tiny/train", *FAR_BEYOND)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("hpml: error: 16,384 images a step on one device (workload.batch_size=16384) of "
                               "workload.image_size=224 through workload.model=resnet50: one training step needs at "
                               "least 1 worker(s) x "), lines[0]
    assert "GiB on the node (weights 0." in lines[0] and "of this host's MemTotal + SwapTotal;" in lines[0]
    assert not (tmp_path / "sweeps").exists()  # no sweep folder, no manifest, nothing run


def test_the_refusal_names_the_nodes_memory_on_slurm_and_checks_nothing_it_cannot_know(compose_values):
    def problem(*overrides):
        return memory_problem(placed(compose_values(["experiment=tiny/train", *FAR_BEYOND, *overrides])).workload)

    refused = problem("cluster=slurm", "resources.mem_gb=512")
    assert "more than the 512.00 GiB of resources.mem_gb=512;" in refused and "\n" not in refused
    assert problem("cluster=slurm") is None  # mem_gb=0: the cluster's default, unknown on the login node
    assert problem("cluster=slurm", "resources.gpus_per_node=1") is None  # the compute node's GPU, not this host's
    assert problem("resources.gpus_per_node=1", "cluster.assume_gpus=1") is None  # planning for another machine


def test_cpu_workers_of_a_node_share_its_memory(compose_values):
    # hpml_cnn at batch 1000: (127,114 + 3,072) x 4 B x 1000 = 0.485 GiB per worker, and 1.1 MB of model state
    overrides = ["experiment=tiny/train", "workload.model=hpml_cnn", "workload.batch_size=1000",
                 "workload.synthetic_samples=4000", "cluster=slurm", "resources.mem_gb=1"]
    assert memory_problem(placed(compose_values(overrides)).workload) is None
    three = memory_problem(placed(compose_values(overrides + ["resources.workers_per_node=3"])).workload)
    assert three is not None and "3 worker(s) x 0.49 GiB on the node" in three
    assert "more than the 1.00 GiB of resources.mem_gb=1;" in three


def test_a_schema_built_without_its_point_is_not_checked(compose_values):
    from dataclasses import asdict

    from hpml.conf.workload.train import TrainConfig

    whole = placed(compose_values(["experiment=tiny/train", *FAR_BEYOND])).workload
    assert memory_problem(whole) is not None
    assert memory_problem(TrainConfig(**asdict(whole))) is None  # no resources: nothing to compare with


@pytest.mark.parametrize("preset", ["tiny/train", "quickstart"])
def test_the_presets_pass(compose_values, preset):
    assert config_problems([config_from_dict(compose_values([f"experiment={preset}"]))]) == []


def test_host_memory_is_memtotal_and_swap(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000 kB\nMemFree:         100 kB\nSwapTotal:       2000 kB\n")
    assert host_memory(meminfo) == 18000 * 1024
    meminfo.write_text("MemFree: 100 kB\n")
    assert host_memory(meminfo) is None


@pytest.mark.gpu
def test_a_gpu_point_beyond_this_hosts_gpu_is_refused_naming_it(compose_values):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    refused = memory_problem(placed(compose_values(["experiment=tiny/train", *FAR_BEYOND,
                                                    "resources.gpus_per_node=1"])).workload)
    assert refused is not None and "GiB on one GPU" in refused and "of this host's GPU 0 (" in refused


@pytest.mark.gpu
@pytest.mark.parametrize("overrides", [
    ["workload.model=resnet50", "workload.image_size=224", "workload.batch_size=64"],  # 0.96 of the peak on an H200
    ["workload.model=resnet50", "workload.image_size=224", "workload.batch_size=64", "workload.precision=bf16"],
    ["workload.model=vit_b_16", "workload.image_size=224", "workload.batch_size=32", "workload.precision=fp16"],
    ["workload.model=hpml_cnn", "workload.batch_size=512", "workload.accumulation_chunks=4"],
])
def test_the_floor_stays_below_a_real_steps_peak_on_a_gpu(compose_values, overrides):
    """One real step of the bare model (the worker's DDP, buckets and loader only add to it): its
    torch.cuda.max_memory_allocated() after a first step (the momentum buffers exist) is at least the floor."""
    import torch

    from hpml.models.build import build_classifier

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    cfg = config_from_dict(compose_values(["experiment=tiny/train", "workload.synthetic_samples=1024",
                                           "workload.num_classes=1000", "resources.gpus_per_node=1",
                                           *overrides])).workload
    model = build_classifier(cfg.model, cfg.num_classes).cuda().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=cfg.momentum)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.precision.value, torch.float32)

    def step() -> None:
        images = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device="cuda").to(dtype)
        labels = torch.randint(0, cfg.num_classes, (cfg.batch_size,), device="cuda")
        optimizer.zero_grad(set_to_none=True)
        for k in range(cfg.accumulation_chunks):
            chunk = slice(k, None, cfg.accumulation_chunks)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
                loss = torch.nn.functional.cross_entropy(model(images[chunk].contiguous()), labels[chunk])
            (loss / cfg.accumulation_chunks).float().backward()  # a scaler changes no memory worth counting here
        optimizer.step()

    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    assert bound(cfg).total <= torch.cuda.max_memory_allocated()


@pytest.mark.parametrize("overrides, made_of, lower", [
    # issue 33: the copies made the number, and the refusal said only workload.batch_size=64
    (["workload.batch_size=64", "workload.batch_augmentation=1024"],
     "65,536 images a step on one device (workload.batch_size=64 x workload.batch_augmentation=1024 copies of each) ",
     "lower workload.batch_augmentation, workload.batch_size or workload.image_size"),
    (["workload.batch_size=128", "workload.batch_augmentation=1024", "workload.scaling=strong",
      "resources.workers_per_node=2", "workload.accumulation_chunks=4"],
     "65,536 images a step on one device (workload.batch_size=128 (global, over 2 workers: workload.scaling=strong) x "
     "workload.batch_augmentation=1024 copies of each), 16,384 per forward (workload.accumulation_chunks=4) ",
     "lower workload.batch_augmentation, workload.batch_size or workload.image_size"),
])
def test_a_refusal_names_every_key_that_made_its_number(compose_values, digits_data, overrides, made_of, lower):
    config = placed(compose_values(["experiment=tiny/train", "workload.dataset=cifar10",
                                    f"workload.data_root={digits_data / 'cifar'}", "workload.model=resnet152",
                                    "resources.mem_gb=8", "cluster=slurm", *overrides]))
    refused = memory_problem(config.workload)
    assert refused.startswith(made_of) and lower in refused and "\n" not in refused, refused


def test_batch_prep_epoch_adds_the_epochs_made_batches_as_the_worker_sizes_them(compose_values, digits_data):
    from hpml.workloads.train.device_data import HostSplit, epoch_buffer_nbytes

    device = ["workload.dataset=cifar10", f"workload.data_root={digits_data / 'cifar'}",
              "workload.data_placement=device"]
    same = [*device, "workload.precision=bf16", "workload.batch_augmentation=2"]
    cfg = hpml_cnn(compose_values, *same, "workload.batch_prep=epoch")
    # 1,438 training digits in whole batches of 8: 1,432 samples, 2 copies each, bf16 3x32x32 images, int64 labels
    assert bound(cfg).epoch_batches == 1432 * 2 * (INPUT * 2 + 8)
    split = HostSplit(images=torch.zeros(1438, 3, 32, 32, dtype=torch.uint8),
                      labels=torch.zeros(1438, dtype=torch.int64), classes=[str(c) for c in range(10)])
    assert epoch_buffer_nbytes(split, 8, 1, 2, torch.bfloat16) == bound(cfg).epoch_batches  # the worker's own count
    step = bound(hpml_cnn(compose_values, *same))  # batch_prep=step makes no such buffer
    assert step.epoch_batches == 0 and bound(cfg).total - step.total == bound(cfg).epoch_batches
