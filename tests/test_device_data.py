"""The device data path's parts on the CPU (workloads/train/augment.py, device_data.py): crop, flip and Cutout
against hand-computed results, the same draws for the same seed, DistributedSampler's sharding over 2 real gloo
ranks, and the refusal of splits that do not fit."""

from __future__ import annotations

import tempfile

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from hpml.conf.schema import config_from_dict
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train.augment import (
    AugmentSpec,
    Normalization,
    augment_batch,
    crop_at,
    cutout,
    holes_mask,
    normalize,
    random_crop,
    random_flip,
)
from hpml.workloads.train.device_data import DeviceEpochs, DeviceHeldOut, HostSplit, decode_split, fit_problem
from tests.test_data import write_cifar10

CPU = torch.device("cpu")


def ctx(rank: int = 0, world: int = 1) -> DistContext:
    return DistContext(rank=rank, local_rank=rank, world_size=world, device=CPU, backend="gloo")


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_crop_takes_the_window_at_the_offset_of_the_zero_padded_image():
    image = torch.arange(1, 10, dtype=torch.uint8).view(1, 1, 3, 3)  # 1 2 3 / 4 5 6 / 7 8 9
    padded = torch.nn.functional.pad(image, (1, 1, 1, 1))
    top_left = crop_at(padded, torch.tensor([[0]]), torch.tensor([[0]]), 3, 3)
    assert top_left[0, 0].tolist() == [[0, 0, 0], [0, 1, 2], [0, 4, 5]]
    bottom_right = crop_at(padded, torch.tensor([[2]]), torch.tensor([[2]]), 3, 3)
    assert bottom_right[0, 0].tolist() == [[5, 6, 0], [8, 9, 0], [0, 0, 0]]
    centre = crop_at(padded, torch.tensor([[1]]), torch.tensor([[1]]), 3, 3)
    assert torch.equal(centre, image)


def test_each_sample_gets_its_own_crop_and_every_crop_is_a_valid_window():
    images = torch.randint(1, 256, (64, 3, 8, 8), dtype=torch.uint8, generator=generator(0))  # no zeros inside
    cropped = random_crop(images, 2, generator(1))
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    offsets = set()
    for i in range(len(images)):
        found = [(dy, dx) for dy in range(5) for dx in range(5)
                 if torch.equal(padded[i, :, dy:dy + 8, dx:dx + 8], cropped[i])]
        assert len(found) == 1, f"sample {i}: not a window of its padded image"
        offsets.add(found[0])
    assert len(offsets) > 10  # 25 possible offsets, drawn per sample


def test_flip_mirrors_about_half_of_the_samples_left_right():
    images = torch.arange(2 * 3 * 2 * 3, dtype=torch.float32).view(2, 3, 2, 3).repeat(50, 1, 1, 1)
    flipped = random_flip(images, generator(0))
    same = [torch.equal(f, x) for f, x in zip(flipped, images)]
    mirrored = [torch.equal(f, x.flip(2)) for f, x in zip(flipped, images)]
    assert all(s != m for s, m in zip(same, mirrored))  # each sample is exactly one of the two
    assert 30 <= sum(mirrored) <= 70
    assert flipped[mirrored.index(True)][0, 0].tolist() == images[mirrored.index(True)][0, 0].flip(0).tolist()


def test_cutout_covers_the_square_around_its_centre_clipped_at_the_border():
    # 8 x 8 image, size 4: a centre at (4, 4) covers rows and columns 2..5 (16 pixels); at (0, 0) only rows and
    # columns 0..1 (4 pixels: clipped); at (7, 1) rows 5..7 and columns 0..2 (9 pixels)
    cy, cx = torch.tensor([[4], [0], [7]]), torch.tensor([[4], [0], [1]])
    mask = holes_mask(cy, cx, 8, 8, 4)
    assert mask.shape == (3, 1, 8, 8)
    assert mask.sum(dim=(1, 2, 3)).tolist() == [16, 4, 9]
    assert mask[0, 0, 2:6, 2:6].all() and mask[1, 0, :2, :2].all() and mask[2, 0, 5:, :3].all()
    # two holes of one sample: the union (overlapping squares count once)
    both = holes_mask(torch.tensor([[4, 5]]), torch.tensor([[4, 4]]), 8, 8, 4)
    assert both.sum().item() == 16 + 4


def test_cutout_zeroes_the_holes_after_normalization_and_leaves_the_rest():
    images = torch.full((200, 3, 32, 32), 7.0)
    out = cutout(images, holes=1, size=16, generator=generator(0))
    zero = (out == 0).all(dim=1)  # a hole covers every channel
    assert ((out == 0) | (out == 7.0)).all() and torch.equal(zero, (out == 0).any(dim=1))
    per_sample = zero.sum(dim=(1, 2))
    assert per_sample.max().item() == 256  # a centre far from the border: the whole 16 x 16
    assert 64 <= per_sample.min().item() < 256  # a centre in a corner: one quarter at least


def test_normalize_matches_torchvisions_to_tensor_and_normalize():
    import torchvision.transforms.functional as TF

    images = torch.randint(0, 256, (4, 3, 5, 5), dtype=torch.uint8, generator=generator(0))
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 0.125)
    ours = normalize(images, Normalization.of(mean, std, CPU), torch.float32)
    theirs = torch.stack([TF.normalize(image.float() / 255, mean, std) for image in images])
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert normalize(images, Normalization.of(mean, std, CPU), torch.bfloat16).dtype == torch.bfloat16


def test_m_copies_of_a_sample_differ_and_each_is_a_valid_augmentation_of_it():
    images = torch.randint(1, 256, (2, 3, 8, 8), dtype=torch.uint8, generator=generator(0))
    labels = torch.tensor([3, 5])
    norm = Normalization.of((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), CPU)  # x / 255: a crop's pixels stay findable
    spec = AugmentSpec(crop_padding=2, flip=True)
    out, out_labels = augment_batch(images, labels, spec, norm, torch.float32, torch.contiguous_format,
                                    generator(1), copies=4)
    assert out.shape == (8, 3, 8, 8) and out_labels.tolist() == [3, 3, 3, 3, 5, 5, 5, 5]
    for sample in range(2):
        padded = torch.nn.functional.pad(images[sample].float() / 255, (2, 2, 2, 2))
        views = [padded[:, dy:dy + 8, dx:dx + 8] for dy in range(5) for dx in range(5)]
        copies = out[4 * sample:4 * sample + 4]
        for copy in copies:
            assert any(torch.allclose(copy, v, atol=1e-6) or torch.allclose(copy, v.flip(2), atol=1e-6) for v in views)
        assert len({tuple(c.flatten().tolist()) for c in copies}) > 1  # the copies are not one draw repeated


def split(n: int, classes: int = 10) -> HostSplit:
    images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8, generator=generator(n))
    return HostSplit(images, torch.arange(n) % classes, [str(c) for c in range(classes)])


def train_cfg(compose_values, *overrides):
    return config_from_dict(compose_values(["workload.dataset=cifar10", "workload.data_root=/nonexistent",
                                            "workload.data_placement=device", *overrides])).workload


def test_the_same_seed_gives_the_same_epoch_order_and_augmentations(compose_values):
    cfg = train_cfg(compose_values, "workload.augment=true", "workload.cutout_holes=1", "workload.cutout_size=4")
    first, again = (DeviceEpochs(split(50), 8, cfg, ctx(), seed=3) for _ in range(2))
    for epoch in (0, 1):
        first.sampler.set_epoch(epoch)
        again.sampler.set_epoch(epoch)
        for (a, la), (b, lb) in zip(first, again):
            assert torch.equal(a, b) and torch.equal(la, lb)
    other = DeviceEpochs(split(50), 8, cfg, ctx(), seed=4)
    first.sampler.set_epoch(0)  # DistributedSampler shuffles with seed + epoch: compare the same epoch
    assert not torch.equal(next(iter(other))[1], next(iter(first))[1])


def test_the_epoch_order_is_distributed_samplers_so_both_paths_visit_samples_alike(compose_values):
    from torch.utils.data import DistributedSampler

    cfg = train_cfg(compose_values, "workload.augment=false")
    epochs = DeviceEpochs(split(45), 4, cfg, ctx(rank=1, world=2), seed=7)
    reference = DistributedSampler(range(45), num_replicas=2, rank=1, shuffle=True, seed=7, drop_last=True)
    for epoch in (0, 5):
        epochs.sampler.set_epoch(epoch)
        reference.set_epoch(epoch)
        assert epochs.epoch_order().tolist() == list(reference)
    assert len(epochs) == 22 // 4  # 45 samples: 22 per rank (the odd one cut), 5 full batches of 4


def _shard_worker(rank: int, world: int, init_file: str, n: int, batch: int, out: dict) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    cfg = config_from_dict(out["values"]).workload
    epochs = DeviceEpochs(split(n), batch, cfg, ctx(rank, world), seed=11)
    held_out = DeviceHeldOut(split(n), batch, cfg, ctx(rank, world))
    seen = {}
    for epoch in range(2):
        epochs.sampler.set_epoch(epoch)
        order = epochs.epoch_order().tolist()
        gathered = [None] * world
        dist.all_gather_object(gathered, order)
        seen[epoch] = gathered
    labels = [None] * world
    dist.all_gather_object(labels, torch.cat([lab for _, lab in held_out]).tolist())
    if rank == 0:
        torch.save({"seen": seen, "held_out": labels}, out["path"])
    dist.destroy_process_group()


@pytest.mark.parametrize("n", [40, 41])
def test_two_gloo_ranks_cover_every_sample_once_per_epoch(compose_values, tmp_path, n):
    values = compose_values(["workload.dataset=cifar10", "workload.data_root=/nonexistent",
                             "workload.data_placement=device", "workload.augment=false"])
    init = tempfile.mktemp(dir=tmp_path)
    out = {"values": values, "path": str(tmp_path / "seen.pt")}
    mp.spawn(_shard_worker, args=(2, init, n, 4, out), nprocs=2, join=True)
    record = torch.load(out["path"])
    for epoch, (rank0, rank1) in record["seen"].items():
        assert not set(rank0) & set(rank1)
        assert len(rank0) == len(rank1) == n // 2
        covered = sorted(rank0 + rank1)
        assert covered == sorted(set(covered)) and len(covered) == 2 * (n // 2)  # n = 41: one sample cut, as
    assert record["seen"][0] != record["seen"][1]  # DistributedSampler(drop_last=True) does; a new order each epoch
    # the held-out split: every sample evaluated exactly once across the ranks, none cut or repeated
    assert sorted(record["held_out"][0] + record["held_out"][1]) == sorted((torch.arange(n) % 10).tolist())


def test_cifar10_is_decoded_once_as_uint8_in_torchvisions_layout(tmp_path, compose_values):
    write_cifar10(tmp_path)
    cfg = config_from_dict(compose_values(["workload.dataset=cifar10", f"workload.data_root={tmp_path}"])).workload
    train = decode_split(cfg, cfg.dataset, train=True)
    from hpml.workloads.common.cifar10 import local_cifar10

    reference = local_cifar10(str(tmp_path), transform=None)
    assert train.images.shape == (100, 3, 32, 32) and train.images.dtype == torch.uint8
    assert torch.equal(train.images[7].permute(1, 2, 0), torch.from_numpy(reference.data[7]))
    assert train.labels.tolist() == reference.targets and train.classes[0] == "airplane"
    assert train.nbytes == 100 * 3072 + 100 * 8


def test_splits_too_large_for_the_stated_share_are_refused_in_one_line_naming_the_key():
    problem = fit_problem(needed=153_600_000, free=200_000_000, share=0.5, device=torch.device("cuda", 0))
    assert problem is not None and "\n" not in problem
    assert "workload.device_data_share=0.5" in problem and "153.6 MB" in problem and "200.0 MB free" in problem
    assert "workload.data_placement=host" in problem
    assert fit_problem(needed=100, free=200, share=0.5, device=CPU) is None  # exactly the share fits


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_batches_are_the_cpus_order_and_the_data_phase_is_device_time(compose_values):
    from hpml.workloads.train.phases import CUDA_DEVICE_DATA_METHOD, PhaseClock

    cfg = train_cfg(compose_values, "workload.augment=true", "workload.cutout_holes=1", "workload.cutout_size=4")
    gpu = DistContext(rank=0, local_rank=0, world_size=1, device=torch.device("cuda", 0), backend="nccl")
    on_gpu, on_cpu = DeviceEpochs(split(64), 16, cfg, gpu, seed=1), DeviceEpochs(split(64), 16, cfg, ctx(), seed=1)
    assert on_gpu.epoch_order().cpu().tolist() == on_cpu.epoch_order().tolist()
    clock = PhaseClock(gpu.device, data_on_device=True)
    assert clock.method == CUDA_DEVICE_DATA_METHOD
    batches = iter(on_gpu)
    clock.start_epoch()
    for _ in range(len(on_gpu)):
        clock.begin_step()
        images, labels = next(batches)
        clock.loaded()
        assert images.is_cuda and images.dtype == torch.float32 and labels.is_cuda
        for phase in ("h2d", "forward", "backward", "optimizer"):
            clock.mark(phase)
    phases = clock.read()
    assert len(phases["data"]) == 4 and all(s > 0 for s in phases["data"])  # the slicing and augmenting kernels


@pytest.mark.parametrize("overrides, message", [
    (["workload.data_placement=device"], "workload.data_placement='device' is not allowed: host unless workload.dataset"),
    (["workload.device_data_share=0"], "workload.device_data_share=0.0 is not allowed: a fraction in (0, 1]"),
    (["workload.device_data_share=1.5"], "workload.device_data_share=1.5 is not allowed"),
    (["workload.crop_padding=-1"], "workload.crop_padding=-1 is not allowed: an integer in [0, workload.image_size=32]"),
    (["workload.cutout_holes=-2"], "workload.cutout_holes=-2 is not allowed: an integer in [0, 64]"),
    (["workload.cutout_holes=1"], "workload.cutout_holes=1 is not allowed: 0 unless workload.dataset is cifar10"),
    (["workload.dataset=cifar10", "workload.data_root=/d", "workload.cutout_holes=1", "workload.cutout_size=0"],
     "workload.cutout_size=0 is not allowed: an integer in [1, workload.image_size=32]"),
    (["workload.lr_decay=linear", "workload.warmup_epochs=2", "workload.lr_decay_epochs=2"],
     "workload.lr_decay_epochs=2.0 is not allowed: a number of epochs > workload.warmup_epochs=2.0"),
    (["workload.label_smoothing=-0.1"], "workload.label_smoothing=-0.1 is not allowed: a number in [0, 1)"),
    (["workload.parallel=none", "resources.workers_per_node=2"],
     "resources.workers_per_node='2 on 1 node(s)' is not allowed: 1 on 1 node when workload.parallel=none"),
    (["workload.parallel=none", "resources.nodes=2"], "is not allowed: 1 on 1 node when workload.parallel=none"),
])
def test_every_new_key_refuses_bad_values_naming_the_key(compose_values, overrides, message):
    from hpml.conf.validation import ConfigValueError

    with pytest.raises(ConfigValueError) as caught:
        config_from_dict(compose_values(overrides))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_image_folder_is_decoded_once_at_image_size(tmp_path, compose_values):
    import numpy as np
    from PIL import Image

    for split, count in (("train", 3), ("val", 2)):
        for cls in ("cats", "dogs"):
            (tmp_path / split / cls).mkdir(parents=True)
            for i in range(count):
                pixels = np.random.default_rng(i).integers(0, 256, (40, 48, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(tmp_path / split / cls / f"{i}.png")
    Image.fromarray(np.full((20, 20), 200, dtype=np.uint8)).save(tmp_path / "train" / "dogs" / "gray.png")
    cfg = config_from_dict(compose_values(["workload.dataset=image_folder", f"workload.data_root={tmp_path}",
                                           "workload.image_size=16", "workload.num_classes=2",
                                           "workload.batch_size=4"])).workload  # the folder holds 7 images
    train = decode_split(cfg, cfg.dataset, train=True)
    held_out = decode_split(cfg, cfg.dataset, train=False)
    assert train.images.shape == (7, 3, 16, 16) and train.images.dtype == torch.uint8
    assert held_out.images.shape == (4, 3, 16, 16) and train.classes == ["cats", "dogs"]
    assert train.labels.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert (train.images[6] == 200).all()  # the grayscale image, as RGB


def test_an_image_folder_fills_one_tensor_equal_to_stacking_the_decoded_images(tmp_path, compose_values):
    """decode_split fills a preallocated N x 3 x S x S tensor (the split held once, not a list plus its stack): the
    result is the old torch.stack of the decoded images, grey images expanded to RGB and RGBA's alpha cut."""
    import numpy as np
    import torchvision.transforms as T
    from PIL import Image
    from torchvision.datasets import ImageFolder

    rng = np.random.default_rng(0)
    shapes = {"rgb": (30, 41, 3), "grey": (25, 25), "rgba": (40, 33, 4), "small": (9, 12, 3)}  # sizes below 16 too
    for cls in ("a", "b"):
        (tmp_path / "train" / cls).mkdir(parents=True)
        for name, shape in shapes.items():
            Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).save(tmp_path / "train" / cls / f"{name}.png")
    cfg = config_from_dict(compose_values(["workload.dataset=image_folder", f"workload.data_root={tmp_path}",
                                           "workload.image_size=16", "workload.num_classes=2",
                                           "workload.batch_size=4"])).workload
    decoded = decode_split(cfg, cfg.dataset, train=True)
    transform = T.Compose([T.Resize(16), T.CenterCrop(16), T.PILToTensor()])
    stacked = torch.stack([image.expand(3, -1, -1) if image.shape[0] == 1 else image[:3]
                           for image, _ in ImageFolder(str(tmp_path / "train"), transform=transform)])
    assert decoded.images.dtype == torch.uint8 and decoded.images.shape == (8, 3, 16, 16)
    assert torch.equal(decoded.images, stacked)
    assert decoded.labels.tolist() == [0] * 4 + [1] * 4


def test_the_host_path_applies_cutout_after_normalization(tmp_path, compose_values):
    from hpml.workloads.train.data import build_dataset

    write_cifar10(tmp_path)
    cfg = config_from_dict(compose_values(["workload.dataset=cifar10", f"workload.data_root={tmp_path}",
                                           "workload.augment=false", "workload.cutout_holes=1",
                                           "workload.cutout_size=8"])).workload
    image, _ = build_dataset(cfg, seed=0)[0]
    zero = (image == 0).all(dim=0)
    assert 16 <= zero.sum().item() <= 64  # one 8 x 8 hole, clipped at the border at worst to a quarter
