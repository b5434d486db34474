"""hpml.models.stats: per-layer counts against published numbers (torchvision's metadata and the literal values
of the FLOPs facts in DESIGN.md) and hand-computed VGG19 rows; the leaf-call naming the PALEO workload shares.
Everything runs on the meta device: the whole file takes seconds."""

from __future__ import annotations

import pytest
import torch
import torchvision

from hpml.models.stats.counting import model_stats
from hpml.models.stats.layers import layer_rows, leaf_calls, meta_model

# name: (parameters with biases, published MACs in G): DESIGN.md "FLOPs", torchvision's model docs
PUBLISHED = {"alexnet": (61_100_840, 0.714), "vgg16": (138_357_544, 15.47), "vgg19": (143_667_240, 19.63),
             "resnet50": (25_557_032, 4.09)}


@pytest.fixture(scope="module")
def stats():
    return {name: model_stats(name) for name in PUBLISHED}


@pytest.fixture(scope="module")
def vgg19_no_bias():
    return model_stats("vgg19", bias=False)


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameters_match_the_published_counts(stats, name):
    assert stats[name].totals.params == PUBLISHED[name][0]
    assert stats[name].totals.params == torchvision.models.get_model_weights(name).DEFAULT.meta["num_params"]


@pytest.mark.parametrize("name", PUBLISHED)
def test_macs_within_half_a_percent_of_torchvisions_metadata(stats, name):
    macs = stats[name].totals.macs
    ops_gmacs = torchvision.models.get_model_weights(name).DEFAULT.meta["_ops"]  # "GFLOPS" there are MACs
    assert macs == pytest.approx(ops_gmacs * 1e9, rel=0.005)
    assert macs == pytest.approx(PUBLISHED[name][1] * 1e9, rel=0.005)
    assert stats[name].totals.flops == 2 * macs


@pytest.mark.parametrize("name", PUBLISHED)
def test_rows_are_two_flops_per_mac_and_sum_to_the_totals(stats, name):
    s = stats[name]
    assert all(row.flops == 2 * row.macs for row in s.rows)
    assert sum(row.macs for row in s.rows) + s.totals.macs_outside_rows == s.totals.macs
    assert sum(row.params for row in s.rows) + s.totals.params_outside_rows == s.totals.params
    assert s.totals.macs_outside_rows == 0  # these four models do all their products inside leaf modules


def test_vgg16_convolutions_hold_99_2_percent_of_the_macs(stats):
    assert stats["vgg16"].totals.conv_flops_share == pytest.approx(0.992, abs=0.0005)
    # VGG16's three FC layers: 25088*4096 + 4096 + 4096*4096 + 4096 + 4096*1000 + 1000
    fc = 25088 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 1000 + 1000
    assert stats["vgg16"].totals.fc_params_share == pytest.approx(fc / 138_357_544)


# VGG19 without biases, as the study's table lays it out: (row name, output HxWxC, activations, parameters)
VGG19_ROWS = [
    ("features.0", (224, 224, 64), 224 * 224 * 64, 3 * 3 * 3 * 64),         # CONV3-64: 3,211,264 ("3.2 M"), 1,728
    ("features.2", (224, 224, 64), 224 * 224 * 64, 3 * 3 * 64 * 64),        # CONV3-64: 36,864
    ("features.4", (112, 112, 64), 112 * 112 * 64, 0),                      # POOL2: 802,816
    ("features.5", (112, 112, 128), 112 * 112 * 128, 3 * 3 * 64 * 128),     # CONV3-128: 73,728
    ("features.7", (112, 112, 128), 112 * 112 * 128, 3 * 3 * 128 * 128),    # CONV3-128: 147,456
    ("features.10", (56, 56, 256), 56 * 56 * 256, 3 * 3 * 128 * 256),       # CONV3-256: 294,912
    ("features.16", (56, 56, 256), 56 * 56 * 256, 3 * 3 * 256 * 256),       # 4th CONV3-256: 589,824
    ("features.19", (28, 28, 512), 28 * 28 * 512, 3 * 3 * 256 * 512),       # CONV3-512: 1,179,648
    ("features.25", (28, 28, 512), 28 * 28 * 512, 3 * 3 * 512 * 512),       # 4th CONV3-512: 2,359,296
    ("features.34", (14, 14, 512), 14 * 14 * 512, 3 * 3 * 512 * 512),       # last CONV3-512: 100,352 acts
    ("features.36", (7, 7, 512), 7 * 7 * 512, 0),                           # POOL2: 25,088
]


@pytest.mark.parametrize("name, hwc, activations, params", VGG19_ROWS)
def test_vgg19_conv_and_pool_rows_without_biases(vgg19_no_bias, name, hwc, activations, params):
    row = next(row for row in vgg19_no_bias.rows if row.name == name)
    height, width, channels = hwc
    assert row.output_shape == (1, channels, height, width)
    assert (row.activations, row.params) == (activations, params)
    assert row.activation_bytes == 4 * activations and row.param_bytes == 4 * params


def test_vgg19_fully_connected_rows_without_biases(vgg19_no_bias):
    fc = [row for row in vgg19_no_bias.rows if row.type == "Linear"]
    assert [row.params for row in fc] == [7 * 7 * 512 * 4096, 4096 * 4096, 4096 * 1000]
    assert fc[0].params == 102_760_448 and fc[1].params == 16_777_216 and fc[2].params == 4_096_000
    assert [row.activations for row in fc] == [4096, 4096, 1000]
    assert [row.macs for row in fc] == [row.params for row in fc]  # one multiply-add per weight at batch 1


def test_vgg19_macs_by_hand(vgg19_no_bias):
    first = vgg19_no_bias.rows[0]
    assert first.macs == 224 * 224 * 64 * 3 * 3 * 3 == 86_704_128
    conv = [row for row in vgg19_no_bias.rows if row.type == "Conv2d"]
    assert conv[1].macs == 224 * 224 * 64 * 3 * 3 * 64
    assert conv[-1].macs == 14 * 14 * 512 * 3 * 3 * 512
    # total parameters without the 5,504 conv and 9,192 FC biases
    assert vgg19_no_bias.totals.params == 143_667_240 - (2 * 64 + 2 * 128 + 4 * 256 + 8 * 512) - (4096 + 4096 + 1000)
    assert vgg19_no_bias.totals.macs == model_stats("vgg19").totals.macs  # biases are not multiplies


def test_one_row_per_call_of_a_module_called_more_than_once():
    names = [row.name for row in layer_rows(meta_model("resnet50"))]
    assert names[:4] == ["conv1", "bn1", "relu", "maxpool"]
    assert [n for n in names if n.startswith("layer1.0.relu")] == ["layer1.0.relu", "layer1.0.relu#2",
                                                                   "layer1.0.relu#3"]
    assert len(names) == 158  # 53 conv + 53 bn + 49 relu calls + maxpool + avgpool + fc


def test_leaf_calls_name_the_calls_like_the_rows():
    model = meta_model("resnet18")
    rows = layer_rows(model, (3, 64, 64))
    calls = leaf_calls(model, torch.zeros(1, 3, 64, 64, device="meta"))
    assert [name for name, _ in calls] == [row.name for row in rows]
    assert calls[0][1] is model.conv1


def test_batch_scales_activations_and_macs_not_parameters():
    one, four = model_stats("alexnet"), model_stats("alexnet", batch=4)
    assert four.totals.activations == 4 * one.totals.activations
    assert four.totals.macs == 4 * one.totals.macs
    assert four.totals.params == one.totals.params
    assert four.rows[0].output_shape == (4, 64, 55, 55)


@pytest.mark.parametrize("dtype, size", [(torch.bfloat16, 2), (torch.float16, 2), (torch.float64, 8)])
def test_dtype_sets_the_byte_sizes(dtype, size):
    rows = layer_rows(meta_model("hpml_cnn"), (3, 32, 32), dtype=dtype)
    assert all(row.activation_bytes == size * row.activations for row in rows)
    assert all(row.param_bytes == size * row.params for row in rows)
    assert rows[0].input_bytes == size * 3 * 32 * 32


def test_a_real_cpu_model_counts_like_the_meta_one():
    torch.manual_seed(0)
    real = layer_rows(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval(), (3, 10, 10), batch=2)
    assert [(r.output_shape, r.macs, r.params) for r in real] == [((2, 8, 8, 8), 2 * 8 * 8 * 8 * 27, 8 * 27 + 8),
                                                                  ((2, 8, 8, 8), 0, 0)]


def test_hpml_cnn_by_hand():
    stats = model_stats("hpml_cnn", (3, 32, 32), num_classes=10)
    # three convs without bias, their batch norms (scale and shift), the linear layer
    convs, norms, linear = 27 * 32 + 9 * 32 * 64 + 9 * 64 * 128, 2 * (32 + 64 + 128), 128 * 10 + 10
    assert stats.totals.params == convs + norms + linear == 94_762
    assert stats.rows[0].macs == 32 * 32 * 32 * 27


def test_operations_outside_leaf_modules_are_given_apart():
    """ViT's attention runs in nn.MultiheadAttention's functional forward (its out_proj is never called as
    a module): its MACs and its in_proj weights, the class token and the position embedding are in no row."""
    stats = model_stats("vit_b_16")
    assert stats.totals.macs == pytest.approx(17.564e9, rel=0.005)  # torchvision's _ops for vit_b_16
    assert stats.totals.macs_outside_rows > 0 and stats.totals.params_outside_rows > 0
    assert sum(row.macs for row in stats.rows) + stats.totals.macs_outside_rows == stats.totals.macs
    assert stats.totals.params == 86_567_656


def test_a_model_whose_constructor_reads_tensor_values_still_builds_on_meta():
    stats = model_stats("regnet_x_400mf")  # RegNet computes its widths with tensors: .tolist()
    assert stats.totals.params == torchvision.models.get_model_weights("regnet_x_400mf").DEFAULT.meta["num_params"]
    assert all(p.device.type == "meta" for p in meta_model("regnet_x_400mf").parameters())
