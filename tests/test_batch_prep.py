"""workload.batch_prep=epoch (workloads/train/device_data.py): the whole epoch's batches made at its start, a step
a slice of them. The same samples in the same order as batch_prep=step, each image a valid augmentation of its
sample, one buffer reused, its bytes counted in the memory check; the config's refusal; the knob that names it."""

from __future__ import annotations

import pytest
import torch

from hpml.conf.schema import config_from_dict
from hpml.contract.step_efficiency import step_bound
from hpml.workloads.train.device_data import EPOCH_CHUNK, DeviceEpochs, HostSplit, epoch_buffer_nbytes
from tests.test_device_data import ctx, split, train_cfg


def epochs_of(compose_values, prep: str, *overrides, n: int = 50, batch: int = 8, world: int = 1, copies: int = 1):
    cfg = train_cfg(compose_values, f"workload.batch_prep={prep}", *overrides)
    return DeviceEpochs(split(n), batch, cfg, ctx(0, world), seed=3, copies=copies, ahead=prep == "epoch")


@pytest.mark.parametrize("copies", [1, 3])
def test_without_augmentation_both_preps_give_the_same_batches_every_epoch(compose_values, copies):
    step, ahead = (epochs_of(compose_values, prep, "workload.augment=false", copies=copies) for prep in ("step", "epoch"))
    for epoch in (0, 1, 2):
        step.sampler.set_epoch(epoch)
        ahead.sampler.set_epoch(epoch)
        pairs = list(zip(step, ahead))
        assert len(pairs) == len(step) == 50 // 8
        for (a, la), (b, lb) in pairs:
            assert a.shape == b.shape == (8 * copies, 3, 8, 8)
            assert torch.equal(a, b) and torch.equal(la, lb)


def test_with_crop_and_flip_each_image_is_a_valid_augmentation_of_the_step_paths_sample(compose_values):
    overrides = ("workload.augment=true", "workload.crop_padding=2")
    step, ahead = (epochs_of(compose_values, prep, *overrides, n=24, batch=4) for prep in ("step", "epoch"))
    plain = epochs_of(compose_values, "step", "workload.augment=false", n=24, batch=4)  # the same order, unaugmented
    for loader in (step, ahead, plain):
        loader.sampler.set_epoch(1)
    norm = plain.norm
    for (a, la), (b, lb), (source, ls) in zip(step, ahead, plain):
        assert torch.equal(la, lb) and torch.equal(la, ls)  # the same samples, in the same order
        for made, original in zip(b, source):
            raw = (original - norm.shift[0]) / norm.scale[0]  # back to the uint8 scale, then padded with zeros
            padded = torch.nn.functional.pad(raw, (2, 2, 2, 2)) * norm.scale[0] + norm.shift[0]
            views = [padded[:, dy:dy + 8, dx:dx + 8] for dy in range(5) for dx in range(5)]
            assert any(torch.allclose(made, v, atol=1e-5) or torch.allclose(made, v.flip(2), atol=1e-5)
                       for v in views)
    assert not all(torch.equal(a, b) for (a, _), (b, _) in zip(step, ahead))  # the draws are taken in another order


def test_the_epochs_buffer_is_made_once_and_each_step_is_a_view_of_it(compose_values):
    ahead = epochs_of(compose_values, "epoch", "workload.augment=true", "workload.crop_padding=2", n=40)
    first = [images for images, _ in ahead]
    buffer = ahead.made_images
    assert buffer.shape[0] == 40 // 8 * 8
    assert all(images.data_ptr() == buffer[i * 8:].data_ptr() for i, images in enumerate(first))
    ahead.sampler.set_epoch(1)
    list(ahead)
    assert ahead.made_images is buffer  # reused, not allocated again


def test_an_epoch_larger_than_one_chunk_is_made_in_chunks_of_whole_batches(compose_values):
    n, batch = EPOCH_CHUNK + 3 * 1000 + 17, 1000  # 8 whole batches in the first chunk, then 3, the tail dropped
    cfg = train_cfg(compose_values, "workload.augment=false", "workload.batch_prep=epoch")
    images = torch.arange(n, dtype=torch.int64).remainder(256).to(torch.uint8).view(n, 1, 1, 1).expand(n, 3, 2, 2)
    data = HostSplit(images.contiguous(), torch.arange(n) % 10, [str(c) for c in range(10)])
    ahead = DeviceEpochs(data, batch, cfg, ctx(), seed=5, ahead=True)
    order = ahead.epoch_order()
    labels = torch.cat([lab for _, lab in ahead])
    assert len(labels) == n // batch * batch and torch.equal(labels, data.labels[order[:len(labels)]])


def test_the_epoch_buffer_bytes_are_a_ranks_whole_batches_times_copies_in_the_input_dtype():
    # 100 samples over 2 ranks: 50 each, 6 batches of 8 (48 samples), 2 copies: 96 rows of 1 x 32 x 32 bf16 (2,048 B)
    # and an int64 label (8 B): 96 x 2,056 = 197,376 B
    data = HostSplit(torch.zeros(100, 1, 32, 32, dtype=torch.uint8), torch.zeros(100, dtype=torch.int64), ["a"])
    assert epoch_buffer_nbytes(data, batch=8, world=2, copies=2, dtype=torch.bfloat16) == 197_376
    assert epoch_buffer_nbytes(data, batch=8, world=1, copies=1, dtype=torch.float32) == 96 * (4096 + 8)


def test_batch_prep_epoch_on_the_host_path_is_refused_in_one_line(compose_values):
    from hpml.conf.validation import ConfigValueError

    with pytest.raises(ConfigValueError) as caught:
        config_from_dict(compose_values(["workload.batch_prep=epoch"]))
    message = str(caught.value)
    assert "workload.batch_prep='epoch' is not allowed: step unless workload.data_placement=device" in message
    assert "\n" not in message


def test_a_graphed_host_bound_step_that_makes_its_batch_each_step_is_told_batch_prep_epoch():
    graphs = {"precision": "bf16", "channels_last": True, "compile": "none", "cuda_graphs": True}
    per_step = step_bound(0.003, 0.0, None, 0.002, 128, settings={**graphs, "batch_prep": "step"})
    assert per_step["verdict"] == "host-bound"
    assert "workload.batch_prep=epoch" in per_step["knob"] and "a larger batch per GPU" in per_step["knob"]
    for prep in ("epoch", None):  # made ahead already, or the host path: only the batch is left
        knob = step_bound(0.003, 0.0, None, 0.002, 128, settings={**graphs, "batch_prep": prep})["knob"]
        assert "batch_prep" not in knob and knob.endswith("a larger batch per GPU (at this global batch, fewer GPUs)")


def test_a_launched_point_makes_its_epochs_batches_ahead_and_says_so(tmp_path):
    """The worker as users run it (hpml launch, torchrun, a real CIFAR-10 layout of 100 images on the device path):
    the result records batch_prep=epoch, and each epoch trained on its whole batches."""
    import json

    from tests.conftest import run_hpml
    from tests.test_data import write_cifar10

    write_cifar10(tmp_path / "cifar")
    done = run_hpml(["launch", "experiment=tiny/train", "workload.model=hpml_cnn", "workload.dataset=cifar10",
                     f"workload.data_root={tmp_path / 'cifar'}", "workload.data_placement=device",
                     "workload.batch_prep=epoch", "workload.batch_size=16", "workload.eval_every=1"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "sweeps" / "latest" / "points" / "0" / "result.json").read_text())
    m = result["measurements"]
    assert result["status"] == "ok" and m["data_placement"] == "device" and m["batch_prep"] == "epoch"
    assert [len(steps) for steps in m["step_time_s"]] == [100 // 16] * 2  # 6 whole batches an epoch, the tail dropped
    assert len(m["evaluation"]["top1"]) == 2


def test_the_report_recomputes_that_knob_from_what_a_result_recorded():
    """analysis.train.efficiency.efficiency_of: the techniques from the config, batch_prep from the measurements."""
    from hpml.analysis.train.efficiency import efficiency_of, techniques_of

    def doc(prep):
        inputs = {"step_s": 0.003, "data_s": 0.0, "comm_s": None, "busy_s": 0.002, "busy_wall_s": 0.003,
                  "per_device_batch": 128}
        efficiency = {"bound_inputs": inputs, "samples_per_step": 512, "devices": 4,
                      "flops": {"flops_per_sample": 3.3e9, "error": None},
                      "peak": {"peak_tflops_per_device": 989.0, "na": None}}
        workload = {"precision": "bf16", "channels_last": True, "compile": "none", "cuda_graphs": True}
        return {"config": {"workload": workload}, "measurements": {"efficiency": efficiency, "batch_prep": prep}}

    made_per_step, made_ahead = (efficiency_of(d["measurements"], techniques_of(d)) for d in (doc("step"), doc("epoch")))
    assert made_per_step["bound"] == made_ahead["bound"] == "host-bound"  # busy 2 of 3 ms: under the 80 % rule
    assert "workload.batch_prep=epoch" in made_per_step["knob"] and "batch_prep" not in made_ahead["knob"]
    # MFU by hand: 3.3e9 FLOPs x 512 samples / 0.003 s / (4 x 989e12 FLOP/s) = 14.2 %
    assert made_per_step["mfu"] == pytest.approx(3.3e9 * 512 / 0.003 / (4 * 989e12))


def test_a_point_config_written_before_the_key_reads_as_step(compose_values):
    """`hpml resume` of an older sweep: its config.yaml has no workload.batch_prep; those runs made batches per step."""
    from hpml.conf.workload.train_choices import BatchPrep

    values = compose_values(["workload.dataset=cifar10", "workload.data_root=/nonexistent",
                             "workload.data_placement=device"])
    del values["workload"]["batch_prep"]
    assert config_from_dict(values).workload.batch_prep == BatchPrep.step
