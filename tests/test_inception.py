"""GoogLeNet's inception (3a) module (Szegedy et al. 2015, Table 1) naive vs with 1x1 reductions: output
sizes and multiplies by hand, by the formula, and by torch's counter on the built modules."""

from __future__ import annotations

import pytest

from hpml.models.stats.inception import INCEPTION_3A, compare

NAIVE = 1024 * 256 * (64 + 9 * 128 + 25 * 32)
REDUCED = 1024 * (256 * 64 + 256 * 96 + 96 * 9 * 128 + 256 * 16 + 16 * 25 * 32 + 256 * 32)


def test_filter_counts_of_inception_3a():
    assert INCEPTION_3A == {"1x1": 64, "3x3 reduce": 96, "3x3": 128, "5x5 reduce": 16, "5x5": 32, "pool proj": 32}


def test_naive_vs_reduced_at_32x32x256():
    c = compare((256, 32, 32))
    assert NAIVE == 528_482_304 and REDUCED == 180_879_360
    assert (c.naive.output_shape, c.reduced.output_shape) == ((480, 32, 32), (256, 32, 32))  # 64+128+32+256
    assert (c.naive.multiplies, c.reduced.multiplies) == (NAIVE, REDUCED)
    assert (c.naive.counted_multiplies, c.reduced.counted_multiplies) == (NAIVE, REDUCED)
    assert c.saving == pytest.approx(1 - 180_879_360 / 528_482_304) and round(100 * c.saving, 1) == 65.8
    assert c.naive.weights == 256 * 64 + 9 * 256 * 128 + 25 * 256 * 32 == 516_096
    assert c.reduced.weights == REDUCED // 1024 == 176_640


def test_at_googlenets_own_3a_input_it_matches_the_papers_table():
    """Table 1's inception (3a) row: input 28x28x192, output 28x28x256, 128M ops (multiplies). Its 159K params
    are not what these filter counts give (163,328 weights; see docs/studies/model-analysis.md)."""
    c = compare((192, 28, 28))
    assert c.reduced.output_shape == (256, 28, 28)
    assert c.reduced.multiplies == c.reduced.counted_multiplies == 128_049_152
    assert c.reduced.weights == 192 * 64 + 192 * 96 + 96 * 9 * 128 + 192 * 16 + 16 * 25 * 32 + 192 * 32 == 163_328
