"""Batch augmentation with Cutout (issue 23) on the CPU: He et al.'s CIFAR ResNets and their parameter counts, Cutout's
area and count, the M copies on both data paths, chunked gradient accumulation against the whole step (one process
and two gloo ranks under DDP), the phase clock over chunks, the step learning-rate schedule, every new key's
refusal and the Cutout figure. The digits preset end to end and the report: tests/test_batch_augmentation_report.py."""

from __future__ import annotations

import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.models.build import build_classifier
from hpml.models.cifar_resnet import ZeroPadShortcut, blocks_per_stage
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train import accumulation, lr_schedule
from hpml.workloads.train.augment import cutout, holes_mask
from hpml.workloads.train.device_data import DeviceEpochs, HostSplit
from hpml.workloads.train.epochs import Stepper
from hpml.workloads.train.phases import NullClock, PhaseClock
from tests.conftest import run_hpml
from tests.test_data import write_cifar10

CPU = torch.device("cpu")
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def ctx(rank: int = 0, world: int = 1) -> DistContext:
    return DistContext(rank=rank, local_rank=rank, world_size=world, device=CPU, backend="gloo")


def cfg_of(compose_values, *overrides):
    return config_from_dict(compose_values(list(overrides))).workload


# --- CIFAR ResNets (He et al. 2016, sec. 4.2, Table 6) -----------------------------------------------------------

def hand_count(n: int, classes: int = 10) -> int:
    """Parameters of the 6n+2 network, counted by hand: stem conv 3*16*9 = 432 and its BN 2*16 = 32; stage 1: n blocks
    of two 16->16 3x3 convs (2 * 2304) and two BNs (2 * 32) = 4,672; stage 2: a first block 16->32 and 32->32 (4,608 +
    9,216 + 128 = 13,952), n - 1 blocks of 2 * 9,216 + 128 = 18,560; stage 3: 32->64 and 64->64 (18,432 + 36,864 +
    256 = 55,552), n - 1 blocks of 2 * 36,864 + 256 = 73,984; the classifier 64 * classes + classes. Option A
    shortcuts add nothing. For 10 classes: 97,216 n - 21,926."""
    return (464 + 4672 * n + 13952 + 18560 * (n - 1) + 55552 + 73984 * (n - 1) + 64 * classes + classes)


@pytest.mark.parametrize("depth, published_m, digits", [(20, 0.27, 2), (32, 0.46, 2), (44, 0.66, 2), (56, 0.85, 2),
                                                        (110, 1.7, 1)])
def test_cifar_resnets_have_he_et_al_s_parameter_counts(depth, published_m, digits):
    model = build_classifier(f"cifar_resnet{depth}", num_classes=10)
    count = sum(p.numel() for p in model.parameters())
    n = (depth - 2) // 6
    assert count == hand_count(n) == 97216 * n - 21926
    assert round(count / 1e6, digits) == published_m  # Table 6, which rounds to 2 digits (110: 1.7 M)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) + 1 == depth and all(c.kernel_size == (3, 3) for c in convs)  # no 1x1 projection: option A
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_resnet8_is_the_same_network_with_one_block_per_stage_and_odd_depths_are_refused():
    assert sum(p.numel() for p in build_classifier("cifar_resnet8", 10).parameters()) == hand_count(1) == 75290
    assert blocks_per_stage(44) == 7
    with pytest.raises(ValueError, match="6n \\+ 2 layers"):
        blocks_per_stage(45)


def test_option_a_shortcut_subsamples_and_pads_zero_channels_on_both_sides():
    x = torch.arange(2 * 4 * 4, dtype=torch.float32).view(1, 2, 4, 4)
    out = ZeroPadShortcut(2, 6, stride=2)(x)
    assert out.shape == (1, 6, 2, 2)
    assert out[0, 0].abs().sum() == 0 and out[0, 1].abs().sum() == 0 and out[0, 4:].abs().sum() == 0
    assert out[0, 2].tolist() == [[0.0, 2.0], [8.0, 10.0]]  # channel 0, rows and columns 0 and 2
    assert out[0, 3].tolist() == [[16.0, 18.0], [24.0, 26.0]]


# --- Cutout: area and count ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [4, 5, 16])
def test_cutout_covers_the_size_square_around_every_centre_clipped_at_the_border(size):
    """Every centre of a 12 x 10 image: the hole is rows [cy - size // 2, cy - size // 2 + size) x the same for
    columns, intersected with the image; its area is the product of the two clipped lengths."""
    height, width = 12, 10
    cy, cx = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    cy, cx = cy.reshape(-1, 1), cx.reshape(-1, 1)
    mask = holes_mask(cy, cx, height, width, size)[:, 0]
    for i in range(len(cy)):
        top, left = int(cy[i]) - size // 2, int(cx[i]) - size // 2
        rows = range(max(top, 0), min(top + size, height))
        cols = range(max(left, 0), min(left + size, width))
        expected = torch.zeros(height, width, dtype=torch.bool)
        expected[rows.start:rows.stop, cols.start:cols.stop] = True
        assert torch.equal(mask[i], expected), (int(cy[i]), int(cx[i]))
        assert int(mask[i].sum()) == len(rows) * len(cols)
    # the centre pixel is always covered, so a size-1 hole is one pixel (DeVries & Taylor's code covers none)
    assert holes_mask(torch.tensor([[3]]), torch.tensor([[4]]), 8, 8, 1).sum() == 1


def test_cutout_makes_as_many_holes_as_asked_each_zeroing_every_channel():
    images = torch.full((300, 3, 32, 32), 5.0)
    for holes in (1, 2, 3):
        out = cutout(images, holes=holes, size=4, generator=torch.Generator().manual_seed(holes))
        zero = (out == 0).all(dim=1)
        assert torch.equal(zero, (out == 0).any(dim=1))  # a hole covers all three channels
        covered = zero.sum(dim=(1, 2))
        assert covered.max() == 16 * holes  # some sample has its holes apart and inside the image
        assert covered.min() >= 4  # at least one hole, clipped to a quarter at worst
        assert (covered <= 16 * holes).all()
    assert torch.equal(cutout(images, 0, 16, None), images)  # 0 holes: unchanged


# --- M copies: device path ----------------------------------------------------------------------------------------

def test_device_copies_differ_and_each_is_the_sample_with_one_hole(compose_values):
    cfg = cfg_of(compose_values, "experiment=batch_augmentation_digits", "workload.data_root=/nonexistent",
                 "workload.batch_augmentation=4", "workload.cutout_size=8")
    images = torch.randint(1, 256, (20, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    epochs = DeviceEpochs(HostSplit(images, torch.arange(20) % 10, [str(c) for c in range(10)]), 5, cfg, ctx(),
                          seed=0, copies=cfg.batch_augmentation)
    epochs.sampler.set_epoch(0)
    order = epochs.epoch_order()
    batch, labels = next(iter(epochs))
    assert batch.shape == (20, 3, 32, 32) and labels.tolist() == (torch.arange(20) % 10)[order[:5]].repeat_interleave(4).tolist()
    normalized = ((images.float() / 255 - torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1))
                  / torch.tensor(CIFAR_STD).view(1, 3, 1, 1))
    for i in range(5):
        copies = batch[4 * i:4 * i + 4]
        original = normalized[order[i]]
        holes = (copies == 0).all(dim=1)
        assert len({tuple(h.flatten().tolist()) for h in holes}) > 1  # each copy its own hole
        for copy, hole in zip(copies, holes):
            assert 16 <= int(hole.sum()) <= 64  # one 8 x 8 hole, clipped to a quarter at worst
            assert torch.allclose(copy[:, ~hole], original[:, ~hole], atol=1e-5)  # the sample itself elsewhere


# --- M copies: host path (the DataLoader's workers) ---------------------------------------------------------------

def valid_views(image_uint8: torch.Tensor, padding: int):
    """Every crop window of the zero-padded image, plain and mirrored, normalized as the host path normalizes."""
    padded = F.pad(image_uint8, (padding,) * 4).float() / 255
    padded = (padded - torch.tensor(CIFAR_MEAN).view(3, 1, 1)) / torch.tensor(CIFAR_STD).view(3, 1, 1)
    side = image_uint8.shape[-1]
    windows = [padded[:, dy:dy + side, dx:dx + side] for dy in range(2 * padding + 1) for dx in range(2 * padding + 1)]
    return windows + [w.flip(2) for w in windows]


@pytest.mark.parametrize("workers", [0, 1])
def test_host_copies_are_made_in_the_loader_and_each_is_a_valid_augmentation(tmp_path, compose_values, workers):
    from hpml.workloads.train.data import build_loader

    # the transforms draw from torch's global generator (the workers' seeds too): seeded, so that the assertion
    # below never meets two equal draws by chance (an unseeded CI run drew two equal copies of a flat image)
    torch.manual_seed(0)
    write_cifar10(tmp_path, per_batch=4)
    cfg = cfg_of(compose_values, "workload.dataset=cifar10", f"workload.data_root={tmp_path}",
                 "workload.batch_augmentation=3", "workload.batch_size=4", "workload.cutout_holes=1",
                 "workload.cutout_size=8", "workload.crop_padding=2", f"workload.loader_workers={workers}")
    loader = build_loader(cfg, seed=0, ctx=ctx(), kind=cfg.dataset)
    images, labels = next(iter(loader))
    assert images.shape == (12, 3, 32, 32) and len(loader) == 20 // 4
    raw = loader.dataset.dataset  # the CIFAR-10 reader under the copies wrapper, its transform taken over
    order = list(loader.sampler)[:4]
    assert labels.tolist() == torch.tensor([raw.targets[i] for i in order]).repeat_interleave(3).tolist()
    for i, index in enumerate(order):
        views = valid_views(torch.from_numpy(raw.data[index]).permute(2, 0, 1), padding=2)
        copies = images[3 * i:3 * i + 3]
        assert len({tuple(c.flatten().tolist()) for c in copies}) == 3  # three draws, not one repeated
        for copy in copies:
            hole = (copy == 0).all(dim=0)
            assert 16 <= int(hole.sum()) <= 64
            assert any(torch.allclose(copy[:, ~hole], v[:, ~hole], atol=1e-5) for v in views)


# --- chunked accumulation: the same update as the whole step -----------------------------------------------------

def no_batchnorm_model() -> torch.nn.Module:
    """BatchNorm is the one layer whose output depends on the rest of the batch (chunks normalize on their own
    statistics), so the exact comparison uses a model without it."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(32, 10))


def one_step(model, cfg, images, labels, steps: int = 2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    stepper = Stepper(model, optimizer, cfg, ctx(), lambda step: 0.1)
    for _ in range(steps):  # the second step uses the momentum buffers the first left
        stepper(iter([(images, labels)]), NullClock())
    return stepper, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("chunks", [2, 4, 8])
def test_chunked_accumulation_gives_the_whole_steps_parameters(compose_values, chunks):
    """Tolerance: 1e-6 relative to each parameter's scale (the sums are the same terms added in another order in
    float32, about 1e-7 apart); loss and accuracy sums of the epoch record agree to the same precision."""
    images = torch.randn(32, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(2))
    whole, whole_params = one_step(no_batchnorm_model(), cfg_of(compose_values), images, labels)
    split, split_params = one_step(no_batchnorm_model(), cfg_of(compose_values, f"workload.accumulation_chunks={chunks}"),
                                   images, labels)
    for a, b in zip(whole_params, split_params):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-6 * a.abs().max().item())
    assert not torch.equal(whole_params[0], no_batchnorm_model()[0].weight)  # the steps did change the weights
    assert split.samples == whole.samples == 64
    assert split.correct.item() == whole.correct.item()
    assert split.loss_sum.item() == pytest.approx(whole.loss_sum.item(), rel=1e-6)


def test_chunk_k_takes_every_chunks_th_row_so_each_chunk_holds_copies_of_every_sample():
    images = torch.arange(12, dtype=torch.float32).view(12, 1, 1, 1)  # 3 samples x M = 4 copies, sample-major
    labels = torch.tensor([0, 1, 2]).repeat_interleave(4)
    parts = list(accumulation.chunks(images, labels, 2))
    assert [p.images.flatten().tolist() for p in parts] == [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 11]]
    assert [p.labels.tolist() for p in parts] == [[0, 0, 1, 1, 2, 2]] * 2  # every sample in every chunk
    assert [p.last for p in parts] == [False, True]
    (whole,) = accumulation.chunks(images, labels, 1)
    assert whole.images is images and whole.last


def _ddp_worker(rank: int, world: int, init_file: str, values: dict, out: str) -> None:
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    cfg = config_from_dict(values).workload
    images = torch.randn(32, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(2))
    model = DistributedDataParallel(no_batchnorm_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    stepper = Stepper(model, optimizer, cfg, ctx(rank, world), lambda step: 0.1)
    for _ in range(2):
        stepper(iter([(images[rank::world], labels[rank::world])]), NullClock())
    if rank == 0:
        torch.save([p.detach() for p in model.module.parameters()], out)
    dist.destroy_process_group()


def test_under_ddp_the_chunks_all_reduce_once_and_match_the_whole_step(compose_values, tmp_path):
    """Two gloo ranks, each half of the batch in 4 chunks (no_sync for the first 3): the parameters after two steps
    are one process's whole step on the full batch (equal halves: the mean of the ranks' means is the mean)."""
    values = compose_values(["workload.accumulation_chunks=4"])
    out = str(tmp_path / "params.pt")
    mp.spawn(_ddp_worker, args=(2, tempfile.mktemp(dir=tmp_path), values, out), nprocs=2, join=True)
    images = torch.randn(32, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(2))
    _, whole = one_step(no_batchnorm_model(), cfg_of(compose_values), images, labels)
    for a, b in zip(whole, torch.load(out)):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-6 * a.abs().max().item())


def test_the_phase_clock_sums_forward_and_backward_over_the_chunks_and_refuses_other_orders():
    clock = PhaseClock(CPU)
    clock.start_epoch()
    clock.begin_step()
    clock.loaded()
    for phase in ("h2d", "forward", "backward", "forward", "backward", "optimizer"):
        clock.mark(phase)
    marks = clock._marks[0]
    phases = clock.read()
    # forward = (mark 2 - mark 1) + (mark 4 - mark 3); backward = (mark 3 - mark 2) + (mark 5 - mark 4)
    assert phases["forward"] == [pytest.approx((marks[2] - marks[1]) + (marks[4] - marks[3]))]
    assert phases["backward"] == [pytest.approx((marks[3] - marks[2]) + (marks[5] - marks[4]))]
    device = sum(phases[p][0] for p in ("h2d", "forward", "backward", "optimizer"))
    assert device == pytest.approx(marks[-1] - marks[0])  # the phases still add up to the step's device time
    clock.begin_step()
    clock.loaded()
    clock.mark("h2d")
    with pytest.raises(RuntimeError, match="'optimizer' marked out of order after h2d"):
        clock.mark("optimizer")


# --- the step schedule ---------------------------------------------------------------------------------------------

def test_step_decay_multiplies_by_gamma_at_each_milestone_epoch():
    # 10 steps per epoch, milestones at epochs 2 and 3: 0.1 for steps 0-19, 0.01 for 20-29, 0.001 from step 30
    at = [lr_schedule.lr_at_step(s, 10, 0.1, 0.1, 0, milestones=(2, 3), gamma=0.1) for s in (0, 19, 20, 29, 30, 500)]
    assert at == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    # after a warm-up from 0 over epoch 1; a fractional milestone (2.5 epochs = step 25); DeVries & Taylor's 0.2
    at = [lr_schedule.lr_at_step(s, 10, 0.1, 0.1, 1, warmup_from_zero=True, milestones=(2.5,), gamma=0.2)
          for s in (0, 5, 10, 24, 25)]
    assert at == pytest.approx([0.0, 0.05, 0.1, 0.1, 0.02])


def test_the_presets_schedule_is_he_et_al_s_at_50_and_75_percent(compose_values):
    values = compose_values(["experiment=batch_augmentation", "workload.data_root=/d"])
    cfg = config_from_dict(values).workload
    rate = lr_schedule.schedule(cfg, steps_per_epoch=781, target=cfg.lr)  # 50,000 // 64
    assert [rate(s) for s in (0, 50 * 781 - 1, 50 * 781, 75 * 781 - 1, 75 * 781)] == pytest.approx(
        [0.1, 0.1, 0.01, 0.01, 0.001])
    assert (cfg.model, cfg.momentum, cfg.weight_decay, cfg.batch_size, cfg.epochs) == ("cifar_resnet44", 0.9, 1e-4, 64, 100)
    assert (cfg.cutout_holes, cfg.cutout_size, cfg.crop_padding, cfg.augment) == (1, 16, 4, True)


# --- bad values -----------------------------------------------------------------------------------------------------

CIFAR = ["workload.dataset=cifar10", "workload.data_root=/d"]


@pytest.mark.parametrize("overrides, message", [
    (["workload.batch_augmentation=0"], "workload.batch_augmentation=0 is not allowed: an integer in [1, 1024]"),
    (["workload.batch_augmentation=2"],
     "workload.batch_augmentation=2 is not allowed: 1 unless workload.dataset is cifar10, image_folder or auto"),
    (["workload.dataset=synthetic_device", "workload.batch_augmentation=2"],
     "workload.batch_augmentation=2 is not allowed: 1 unless"),
    (["workload.accumulation_chunks=0"], "workload.accumulation_chunks=0 is not allowed: an integer >= 1"),
    ([*CIFAR, "workload.batch_size=32", "workload.batch_augmentation=2", "workload.accumulation_chunks=3"],
     "workload.accumulation_chunks=3 is not allowed: a divisor of the 2 x 32 = 64 samples of a worker's step"),
    (["workload.lr_decay=step"], "workload.lr_milestones=[] is not allowed: increasing epochs"),
    (["workload.lr_decay=step", "workload.lr_milestones=[75,50]"], "workload.lr_milestones=[75.0, 50.0] is not allowed"),
    (["workload.epochs=20", "workload.lr_decay=step", "workload.warmup_epochs=5", "workload.lr_milestones=[5,10]"],
     "workload.lr_milestones=[5.0, 10.0] is not allowed: increasing epochs, each > workload.warmup_epochs=5.0"),
    (["workload.lr_milestones=[50]"], "workload.lr_milestones=[50.0] is not allowed: [] unless workload.lr_decay=step"),
    (["workload.epochs=100", "workload.lr_decay=step", "workload.lr_milestones=[50]", "workload.lr_gamma=0"],
     "workload.lr_gamma=0.0 is not allowed: a factor in (0, 1]"),
    (["workload.epochs=100", "workload.lr_decay=step", "workload.lr_milestones=[50]", "workload.lr_gamma=1.5"],
     "workload.lr_gamma=1.5 is not allowed"),
    # values that would be accepted and never take effect, or blow up at run time: refused by their class
    (["workload.epochs=30", "workload.lr_decay=step", "workload.lr_milestones=[15,30]"],
     "workload.lr_milestones=[15.0, 30.0] is not allowed: increasing epochs, each > workload.warmup_epochs=0.0 and "
     "< workload.epochs=30 (a later one would never apply)"),
    (["workload.epochs=4", "workload.warmup_epochs=4"], "workload.warmup_epochs=4.0 is not allowed: fewer than "
     "workload.epochs=4 (else the whole run is warm-up)"),
    ([*CIFAR, "workload.epochs=4", "workload.eval_every=5"],
     "workload.eval_every=5 is not allowed: at most workload.epochs=4 (0: never), else no evaluation would run"),
    ([*CIFAR, "workload.batch_augmentation=1025"], "workload.batch_augmentation=1025 is not allowed: an integer in "
     "[1, 1024]"),
    ([*CIFAR, "workload.batch_augmentation=2", "workload.augment=false"],
     "workload.batch_augmentation=2 is not allowed: 1 when there is no augmentation to draw per copy"),
    ([*CIFAR, "workload.cutout_holes=65"], "workload.cutout_holes=65 is not allowed: an integer in [0, 64]"),
    ([*CIFAR, "workload.crop_padding=33"], "workload.crop_padding=33 is not allowed: an integer in [0, "
     "workload.image_size=32]"),
    ([*CIFAR, "workload.image_size=64"], "workload.image_size=64 is not allowed: 32 when workload.dataset=cifar10"),
    (["workload.loader_workers=1000000", "resources.cpus_per_worker=2"], "workload.loader_workers=1000000 is not "
     "allowed: at most resources.cpus_per_worker=2"),
    (["workload.model=resnet18", "workload.batch_size=1"], "workload.batch_size=1 is not allowed: a batch giving "
     "each forward pass at least 2 samples per device for resnet18 (it has BatchNorm"),
    ([*CIFAR, "workload.model=resnet18", "workload.batch_size=4", "workload.accumulation_chunks=4"],
     "4 per worker / 1 device(s) x 1 copies / 4 chunks = 1"),
])
def test_every_new_key_refuses_bad_values_in_one_line_naming_the_key(compose_values, overrides, message):
    with pytest.raises(ConfigValueError) as caught:
        config_from_dict(compose_values(overrides))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_one_sample_per_forward_is_refused_only_for_a_model_with_batchnorm(compose_values):
    # vgg11 has no BatchNorm (vgg11_bn has): one sample per forward trains
    config_from_dict(compose_values(["workload.model=vgg11", "workload.batch_size=1"]))
    with pytest.raises(ConfigValueError, match="for vgg11_bn .it has BatchNorm"):
        config_from_dict(compose_values(["workload.model=vgg11_bn", "workload.batch_size=1"]))


def test_a_bad_value_stops_hpml_launch_before_anything_runs(tmp_path):
    done = run_hpml(["launch", "experiment=batch_augmentation_digits_tiny", "workload.data_root=/nonexistent",
                     "workload.accumulation_chunks=0", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(
        "hpml: error: workload.accumulation_chunks=0 is not allowed: an integer >= 1"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "sweeps").exists()


# --- the Cutout figure (tools/cutout_figure.py) --------------------------------------------------------------------

def test_the_cutout_figure_uses_the_training_codes_cutout(tmp_path):
    write_cifar10(tmp_path, per_batch=2)
    done = run_hpml_tool(["tools/cutout_figure.py", "--data-root", str(tmp_path), "--out", str(tmp_path / "c.png"),
                          "--indices", "0", "3", "--size", "8", "--seed", "1"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("training image 0: Cutout covers ") and lines[1].startswith("training image 3: ")
    assert all(16 <= int(line.split("covers ")[1].split(" px")[0]) <= 64 for line in lines[:2])
    assert (tmp_path / "c.png").stat().st_size > 1000


def run_hpml_tool(args):
    import subprocess
    import sys

    from tests.conftest import REPO

    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
