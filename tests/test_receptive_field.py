"""Receptive fields: the recurrence r_out = r_in + (k-1) j_in, j_out = j_in s against hand-computed values,
the closed form N*F - N + 1 of stacked stride-1 convolutions against the recurrence, and the per-layer
column for chain models (published: AlexNet 195, VGG16 pool5 212; Araujo et al., Distill 2019, Table 1)."""

from __future__ import annotations

import pytest
from torch import nn

from hpml.models.stats.counting import model_stats
from hpml.models.stats.layers import layer_rows
from hpml.models.stats.receptive_field import chain, model_receptive_fields, next_field, stacked_convs


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 10])
@pytest.mark.parametrize("kernel", [1, 3, 5, 7])
def test_closed_form_of_stacked_stride_1_convs_matches_the_recurrence(count, kernel):
    assert chain([(kernel, 1, 1)] * count)[-1] == (stacked_convs(count, kernel), 1)


def test_closed_form_by_hand():
    assert [stacked_convs(n, 3) for n in (1, 2, 3)] == [3, 5, 7]   # three 3x3 see what one 7x7 sees
    assert stacked_convs(2, 5) == 9 and stacked_convs(4, 1) == 1


def test_recurrence_by_hand():
    # AlexNet's start: 11x11 stride 4, then 3x3 max pool stride 2, then 5x5 stride 1
    assert chain([(11, 4, 1), (3, 2, 1), (5, 1, 1)]) == [(11, 4), (11 + 2 * 4, 8), (19 + 4 * 8, 8)]
    assert next_field(1, 1, kernel=3, stride=1, dilation=2) == (5, 1)   # a dilated 3x3 spans 5
    assert chain([(2, 2, 1)] * 3) == [(2, 2), (4, 4), (8, 8)]            # 2x2 stride-2 pools tile the input


def _sizes(name):
    stats = model_stats(name)
    return {row.name: (None if field is None else field.size[0]) for row, field in
            zip(stats.rows, stats.receptive_fields)}


def test_vgg16_fields():
    sizes = _sizes("vgg16")
    assert sizes["features.0"] == 3 and sizes["features.2"] == 5 and sizes["features.4"] == 6   # conv, conv, pool
    assert sizes["features.28"] == 196 and sizes["features.30"] == 212                         # conv5_3, pool5
    assert sizes["classifier.0"] is None                                                      # whole input


def test_vgg19_and_alexnet_fields():
    vgg19 = _sizes("vgg19")
    assert vgg19["features.34"] == 252 and vgg19["features.36"] == 268
    alexnet = _sizes("alexnet")
    assert alexnet["features.12"] == 195 and alexnet["avgpool"] == 195  # the adaptive pool keeps 6x6: a no-op


def test_models_with_branches_get_no_column():
    assert model_stats("resnet18").receptive_fields is None
    assert model_stats("squeezenet1_0").receptive_fields is None


def test_adaptive_pool_with_an_even_split_is_a_pooling():
    model = nn.Sequential(nn.Conv2d(1, 1, 3, padding=1), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(16, 2))
    fields = model_receptive_fields(model, layer_rows(model, (1, 16, 16)), (1, 16, 16))
    assert [f.size if f else None for f in fields] == [(3, 3), (3 + 3 * 1, 3 + 3 * 1), None, None]
    assert fields[1].jump == (4, 4)


def test_non_square_kernels_give_a_field_per_axis():
    model = nn.Sequential(nn.Conv2d(1, 1, (1, 7), padding=(0, 3)), nn.Conv2d(1, 1, (7, 1), padding=(3, 0)))
    fields = model_receptive_fields(model, layer_rows(model, (1, 9, 9)), (1, 9, 9))
    assert [f.size for f in fields] == [(1, 7), (7, 7)]
