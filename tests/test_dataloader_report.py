"""The data-loader study's report against hand-made results: known epoch times -> the expected mean ± std (ddof=1),
samples/s, speedup vs PyTorch's defaults, the fastest setting named, "is the default optimal?" answered, the device
path apart, repeats pooled, groups kept apart, the plot drawn; unreadable measurements listed, not tabulated."""

from __future__ import annotations

import math

import pytest

from hpml.analysis.report import build_report, write_report
from tests.factories import write_result
from tests.factories.dataloader import dataloader_result

SAMPLES = 1000  # per epoch


def study(root, sweep="loader", dataset="cifar10", first_point=0):
    """Epoch 1 of each list is warm-up. Timed epochs, by hand:
    default          2.0, 2.2, 1.8  mean 2.0  std sqrt((0 + 0.04 + 0.04) / 2) = 0.2
    2 workers        1.0, 1.0, 1.0 and (repeat 1) 1.2, 0.8, 1.0: pooled mean 1.0, std sqrt(0.08 / 5) = 0.126491
    2 w, persistent, prefetch 4  0.5, 0.7, 0.6  mean 0.6  std sqrt((0.01 + 0.01 + 0) / 2) = 0.1
    device path      0.4, 0.4, 0.4  mean 0.4  std 0
    """
    p = first_point
    docs = [dataloader_result(p, [9.0, 2.0, 2.2, 1.8], first_batch_s=[0.3, 0.01, 0.02, 0.03]),
            dataloader_result(p + 1, [5.0, 1.0, 1.0, 1.0], workers=2),
            dataloader_result(p + 2, [5.0, 1.2, 0.8, 1.0], workers=2, repeat=1),
            dataloader_result(p + 3, [5.0, 0.5, 0.7, 0.6], workers=2, persistent=True, prefetch=4),
            dataloader_result(p + 4, [3.0, 0.4, 0.4, 0.4], workers=None, placement="device")]
    for doc in docs:
        doc["identity"]["sweep"] = doc["config"]["sweep"]["name"] = sweep
        doc["config"]["workload"]["dataset"] = doc["measurements"]["dataset"] = dataset
        write_result(root, doc)
    return docs


def table_of(report, dataset="cifar10"):
    sections = [s for s in report.sections if "data loader" in s.title and dataset in s.title]
    assert len(sections) == 1
    return sections[0], sections[0].tables[0].frame.set_index(["placement", "workers", "persistent_workers"],
                                                            drop=False)


def test_means_spreads_rates_speedups_and_the_fastest_by_hand(tmp_path):
    study(tmp_path)
    section, frame = table_of(build_report(tmp_path))
    default = frame.loc[("host", 0, False)]
    assert (default["n"], default["runs"], bool(default["default"])) == (3, 1, True)
    assert default["epoch_time_mean_s"] == pytest.approx(2.0) and default["epoch_time_std_s"] == pytest.approx(0.2)
    rates = [SAMPLES / 2.0, SAMPLES / 2.2, SAMPLES / 1.8]  # 500, 454.55, 555.56 samples/s
    mean_rate = sum(rates) / 3
    assert default["samples_per_s_mean"] == pytest.approx(mean_rate)
    assert default["samples_per_s_std"] == pytest.approx(math.sqrt(sum((r - mean_rate) ** 2 for r in rates) / 2))
    assert default["first_batch_mean_s"] == pytest.approx(0.02)  # (0.01 + 0.02 + 0.03) / 3, warm-up's 0.3 left out
    assert default["speedup_vs_default"] == pytest.approx(1.0)

    pooled = frame.loc[("host", 2, False)]
    assert (pooled["n"], pooled["runs"], pooled["prefetch_factor"]) == (6, 2, 2)  # PyTorch's 2, as it ran
    assert pooled["epoch_time_mean_s"] == pytest.approx(1.0)
    assert pooled["epoch_time_std_s"] == pytest.approx(math.sqrt(0.08 / 5))
    assert pooled["speedup_vs_default"] == pytest.approx(2.0)

    tuned = frame.loc[("host", 2, True)]
    assert tuned["epoch_time_mean_s"] == pytest.approx(0.6) and tuned["epoch_time_std_s"] == pytest.approx(0.1)
    assert tuned["speedup_vs_default"] == pytest.approx(2.0 / 0.6) and not bool(tuned["fastest"])

    device = frame[frame["placement"] == "device"].iloc[0]
    assert device["speedup_vs_default"] == pytest.approx(5.0) and bool(device["fastest"])
    assert device["samples_per_s_mean"] == pytest.approx(2500.0) and device["samples_per_s_std"] == 0.0
    assert frame["fastest"].sum() == 1 and frame["default"].sum() == 1


def test_the_text_names_the_fastest_and_answers_whether_the_default_is_optimal(tmp_path):
    study(tmp_path)
    section, _ = table_of(build_report(tmp_path))
    # |2.0 - 0.6| = 1.4 > 2 sqrt(0.2^2/3 + 0.1^2/3) = 0.258
    assert section.after == (
        "Default (0 workers): 2.000 ± 0.200 s (n=3). Fastest DataLoader setting: 2 workers, persistent, prefetch 4, "
        "0.600 ± 0.100 s (n=3), 3.33x the default's speed. Is the default optimal? No: the difference exceeds the "
        "spread (|Δ| > 2·sqrt(s²/n + s²/n)). The device path (no DataLoader: the split decoded once onto the device): "
        "0.400 ± 0.000 s (n=3), 5.00x the default's speed; the fastest of all.")
    rows = section.tables[0].rows
    assert rows[0][:5] == ["host", "0", "False", "False", "–"] and rows[0][-1] == "default"
    assert rows[0][5] == "2.000 ± 0.200 (n=3)" and rows[0][7] == "1.00x"
    assert rows[-1][0] == "device" and rows[-1][1:5] == ["–"] * 4 and rows[-1][-1] == "fastest"
    assert "1-minute load average 1.00 to 1.50" in section.markdown  # the factory's loads, before and after


def test_a_default_within_the_spread_or_fastest_or_missing(tmp_path):
    # within: |2.0 - 1.9| = 0.1 <= 2 sqrt(0.04/3 + 0.04/3) = 0.327
    write_result(tmp_path / "a", dataloader_result(0, [9.0, 2.0, 2.2, 1.8], sweep="within"))
    write_result(tmp_path / "a", dataloader_result(1, [9.0, 1.9, 2.1, 1.7], workers=1, sweep="within"))
    # fastest: the default beats 1 worker
    write_result(tmp_path / "b", dataloader_result(0, [9.0, 1.0, 1.0], sweep="best"))
    write_result(tmp_path / "b", dataloader_result(1, [9.0, 2.0, 2.0], workers=1, sweep="best"))
    # missing: no 0-worker point
    write_result(tmp_path / "c", dataloader_result(0, [9.0, 1.0, 1.0], workers=1, sweep="nodefault"))
    texts = {s.title.split(" ")[0]: s.after for s in build_report(tmp_path).sections if "data loader" in s.title}
    assert texts["within"].endswith("Is the default optimal? Not distinguishable: the difference is within the spread "
                                    "(|Δ| ≤ 2·sqrt(s²/n + s²/n)).")
    assert "1 worker, prefetch 2, 1.900 ± 0.200 s (n=3), 1.05x" in texts["within"]
    assert texts["best"] == ("Default (0 workers): 1.000 ± 0.000 s (n=2). Is the default optimal? Yes: no other "
                             "DataLoader setting measured was faster.")
    assert texts["nodefault"].startswith("Is the default optimal? Not measured: the default setting")


def test_groups_are_kept_apart_and_the_plot_is_drawn(tmp_path):
    study(tmp_path / "one", dataset="cifar10")
    study(tmp_path / "two", dataset="image_folder", first_point=10)
    report = build_report(tmp_path)
    _, cifar = table_of(report, "cifar10")
    _, jpeg = table_of(report, "image_folder")
    assert len(cifar) == len(jpeg) == 4  # two groups of the same sweep, never pooled together
    written = {path.name for path in write_report(report, tmp_path / "report")}
    assert {"dataloader.csv", "dataloader.tex", "dataloader_workers.png"} <= written
    assert (tmp_path / "report" / "dataloader_workers.png").stat().st_size > 10_000


def test_unreadable_measurements_are_listed_not_tabulated(tmp_path):
    doc = dataloader_result(0, [9.0, 2.0, 2.0])
    doc["measurements"]["epoch_time_s"] = [9.0, 2.0, 1.0]  # not the slowest rank's of epoch_time_s_per_rank
    write_result(tmp_path, doc)
    write_result(tmp_path, dataloader_result(1, [9.0, 1.0, 1.0], workers=1))
    report = build_report(tmp_path)
    assert [len(s.tables[0].rows) for s in report.sections if "data loader" in s.title] == [1]
    assert len(report.left_out) == 1 and "slowest rank" in str(report.left_out[0])
