"""The paleo part of `hpml report` (analysis/paleo/) from hand-made results: PALEO per layer with published and
measured peaks, PPP, errors, the sum of layers vs the forward, the K80 answer, the CSV/LaTeX files and the
chart; a CPU result without published peaks; an unreadable result listed, not fatal."""

from __future__ import annotations

import csv
from typing import Any, Dict, List, Optional

import pytest

from hpml.analysis.report import main as report_main
from hpml.conf.hardware.gpu_peaks import peaks_by_key
from tests.factories import envelope, write_result

N = 8192  # the matmul: 2 * 8192^3 = 1,099,511,627,776 FLOPs


def layer(name: str, kind: str, flops: int, input_bytes: int, param_bytes: int, activation_bytes: int,
          times: List[float]) -> Dict[str, Any]:
    return {"name": name, "type": kind, "kind": "other", "output_shape": [2, 1], "activations": 1,
            "activation_bytes": activation_bytes, "input_bytes": input_bytes, "params": 0,
            "param_bytes": param_bytes, "macs": flops // 2, "flops": flops, "time_s": times,
            "wall_s": [t + 5e-6 for t in times]}


def paleo_doc(point: int = 0, *, device: str = "cuda", published: Optional[str] = "h200_sxm",
              layers: Optional[List[Dict[str, Any]]] = None, ppp: float = 1.0,
              channels_last: bool = False) -> Dict[str, Any]:
    """A bf16 result of three layer calls at batch 2, chosen so every number below is computable by hand."""
    workload = {"name": "paleo", "model": "handmade", "batch_size": 2, "dtype": "bfloat16", "ppp": ppp,
                "reference_gpu": "k80"}
    doc = envelope(workload, point=point, sweep="paleo", gpus_per_node=1 if device == "cuda" else 0,
                   environment={"device": device, "backend": "nccl" if device == "cuda" else "gloo"})
    k80 = peaks_by_key("k80")
    doc["measurements"] = {
        "model": "handmade", "device_name": "NVIDIA H200" if device == "cuda" else "x86_64",
        "input_shape": [2, 3, 224, 224], "dtype": "bfloat16", "channels_last": channels_last,
        "layers": layers if layers is not None else [
            layer("conv", "Conv2d", 10_000_000_000, 1_000_000, 2_000_000, 3_000_000, [20e-6, 25e-6, 30e-6]),
            layer("relu", "ReLU", 0, 3_000_000, 0, 3_000_000, [10e-6, 10e-6, 12e-6]),
            layer("fc", "Linear", 200_000_000, 100_000, 8_000_000, 10_000, [15e-6, 14e-6, 16e-6])],
        "outside_leaf_macs": 0,
        "forward_time_s": [40e-6, 45e-6, 42e-6], "forward_wall_s": [50e-6, 55e-6, 52e-6],
        "peaks": {"dtype": "bf16",
                  "matmul": {"n": N, "dtype": "bf16", "flops": 2 * N ** 3, "times_s": [1.5e-3, 1.4e-3, 1.6e-3]},
                  "copy": {"buffer_bytes": 10 ** 9, "bytes_moved": 2 * 10 ** 9, "times_s": [0.5e-3, 0.6e-3, 0.4e-3]},
                  "published": peaks_by_key(published).as_record() if published else None,
                  "reference": {"board": k80.as_record(), "device": k80.per_device().as_record()}},
    }
    doc["derived"] = {"forward_median_s": 1.0}  # wrong on purpose: the analysis must recompute
    return doc


def rows_of(path) -> List[Dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture
def gpu_report(tmp_path):
    write_result(tmp_path, paleo_doc())
    assert report_main([str(tmp_path)]) == 0
    return tmp_path / "report"


def test_the_layer_table_predicts_with_both_peaks(gpu_report):
    # measured peaks: 1,099,511,627,776 FLOPs / 1.5 ms = 733.0078 TFLOP/s; 2e9 B / 0.5 ms = 4,000 GB/s.
    # conv: 10 GFLOP, 6 MB, measured 25 µs (median of 20, 25, 30)
    #   published (989.5 TFLOP/s, 4,800 GB/s): 10.10611 + 1.25 = 11.35611 µs, PPP 40.4 %, error -54.6 %
    #   measured: 13.64242 + 1.5 = 15.14242 µs, PPP 54.6 %, error -39.4 %
    # relu: no FLOPs, 6 MB in 10 µs: 1.25 µs (-87.5 %) and 1.5 µs (-85.0 %); no PPP
    markdown = (gpu_report / "report.md").read_text()
    assert ("| 0 | conv | Conv2d | 10 G | 6 M | 0.025 [0.02, 0.03] | 0.01136 | 40.4% | -54.6% | 0.01514 | 54.6% "
            "| -39.4% |") in markdown
    assert "| 1 | relu | ReLU | 0 | 6 M | 0.01 [0.01, 0.012] | 0.00125 | – | -87.5% | 0.0015 | – | -85.0% |" in markdown
    rows = rows_of(gpu_report / "paleo_layers.csv")
    assert [r["name"] for r in rows] == ["conv", "relu", "fc"]
    assert float(rows[0]["predicted_s_published"]) == pytest.approx(11.35611419909045e-6, rel=1e-9)
    assert float(rows[0]["ppp_measured"]) == pytest.approx(0.5456968210637569, rel=1e-9)
    assert float(rows[0]["error_measured"]) == pytest.approx(-0.3943031789362431, rel=1e-9)
    assert float(rows[2]["predicted_s_measured"]) == pytest.approx(2.3003484105318785e-06, rel=1e-9)
    assert float(rows[2]["ppp_published"]) == pytest.approx(0.013474818932120599, rel=1e-9)
    assert rows[1]["ppp_published"] == ""  # NaN: no FLOPs


def test_the_summary_sets_the_sum_of_layers_against_the_forward(gpu_report):
    # forward median 42 µs [40, 45]; layers 25 + 10 + 15 = 50 µs: ratio 1.19, (50 - 42) / 3 = 2.7 µs per call.
    # network PPP = 10.2 GFLOP / (42 µs x peak): 24.5 % (published), 33.1 % (measured)
    # PALEO total: 14.4978 µs (-65.5 %) and 18.9428 µs (-54.9 %)
    markdown = (gpu_report / "report.md").read_text()
    assert ("| 0 | handmade | 2 | bf16 | NVIDIA H200 | 0.042 [0.04, 0.045] (n=3) | 0.05 | 1.19 | 2.7 | 10.2 G "
            "| 24.5% | 33.1% | 0.0145 (-65.5%) | 0.01894 (-54.9%) |") in markdown
    (row,) = rows_of(gpu_report / "paleo_summary.csv")
    assert float(row["layer_sum_over_forward"]) == pytest.approx(50 / 42)
    assert float(row["network_ppp_published"]) == pytest.approx(0.2454342019779109, rel=1e-9)
    assert float(row["predicted_s_measured"]) == pytest.approx(1.89427689371258e-05, rel=1e-9)
    assert float(row["error_published"]) == pytest.approx(-0.654813813895105, rel=1e-9)
    assert "Why the sum of the layer times differs from the whole forward on a GPU" in markdown
    assert "launch latency" in markdown and "no two layers overlap" in markdown


def test_work_outside_every_layer_joins_the_network_prediction(tmp_path):
    # 1e9 MACs outside the leaf modules (attention's products in a ViT) = 2 GFLOP: at the published 989.5
    # TFLOP/s and PPP 1 the network's prediction grows by 2e9 / 989.5e12 = 2.021223 µs over the same result
    # without them (14.4978 µs, the test above), and the network's FLOPs count them too: 12.2 G.
    summaries = []
    for outside_macs in (0, 10 ** 9):
        doc = paleo_doc()
        doc["measurements"]["outside_leaf_macs"] = outside_macs
        folder = tmp_path / str(outside_macs)
        write_result(folder, doc)
        assert report_main([str(folder)]) == 0
        (row,) = rows_of(folder / "report" / "paleo_summary.csv")
        summaries.append(row)
    without, with_outside = summaries
    assert float(with_outside["flops"]) == 10_200_000_000 + 2 * 10 ** 9
    assert float(without["predicted_s_published"]) == pytest.approx(14.4978e-6, rel=1e-5)
    assert (float(with_outside["predicted_s_published"]) - float(without["predicted_s_published"])
            == pytest.approx(2e9 / 989.5e12, rel=1e-9))


def test_the_peaks_table_compares_measured_with_published(gpu_report):
    # 733.0 / 989.5 = 74.1 %; 4,000 / 4,800 = 83.3 %
    markdown = (gpu_report / "report.md").read_text()
    assert "| 0 | NVIDIA H200 | bf16 | 989.5 | 733 | 74.1% | 4800 | 4000 | 83.3% |" in markdown
    (row,) = rows_of(gpu_report / "paleo_peaks.csv")
    assert float(row["measured_tflops"]) == pytest.approx(733.0077518506666, rel=1e-12)


def test_the_k80_time_per_image(gpu_report):
    # 10.2 GFLOPs / batch 2 = 5.1 GFLOPs per image; / 8.73e12 = 0.5842 ms (board), / 4.365e12 = 1.168 ms;
    # / 2.91e12 = 1.753 ms, / 1.455e12 = 3.505 ms
    markdown = (gpu_report / "report.md").read_text()
    assert ("| handmade | 3×224×224 | 5.1 G | NVIDIA Tesla K80 (board of two GK210) | 0.5842 at 8.73 TFLOP/s "
            "| 1.168 at 4.365 TFLOP/s | 1.753 at 2.91 TFLOP/s | 3.505 at 1.455 TFLOP/s |") in markdown
    (row,) = rows_of(gpu_report / "paleo_reference.csv")
    assert float(row["fp32_s_per_image_board"]) == pytest.approx(0.000584192439862543, rel=1e-12)
    assert float(row["fp64_s_per_image_device"]) == pytest.approx(0.0035051546391752578, rel=1e-12)


def test_the_files_and_the_chart(gpu_report):
    for name in ("paleo_summary", "paleo_peaks", "paleo_reference", "paleo_layers"):
        assert (gpu_report / f"{name}.csv").stat().st_size > 0
        assert "\\begin{tabular}" in (gpu_report / f"{name}.tex").read_text()
    assert (gpu_report / "paleo_paleo_0.png").stat().st_size > 1000


def test_the_ppp_of_the_config_scales_the_compute_term(tmp_path):
    # PPP 0.5: the conv's published compute term doubles to 20.21223 µs; + 1.25 = 21.46223 µs
    write_result(tmp_path, paleo_doc(ppp=0.5))
    assert report_main([str(tmp_path)]) == 0
    rows = rows_of(tmp_path / "report" / "paleo_layers.csv")
    assert float(rows[0]["predicted_s_published"]) == pytest.approx(2 * 10.10611419909045e-6 + 1.25e-6, rel=1e-9)
    assert "PALEO at PPP = 0.5" in (tmp_path / "report" / "report.md").read_text()
    assert float(rows[0]["ppp_published"]) == pytest.approx(0.40424456796361796, rel=1e-9)  # achieved: unchanged


def test_a_channels_last_run_says_nhwc(tmp_path):
    write_result(tmp_path, paleo_doc(channels_last=True))
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "### point 0: handmade, batch 2, bf16, NHWC, NVIDIA H200" in markdown
    assert "| 0 | handmade | 2 | bf16, NHWC | NVIDIA H200 |" in markdown
    assert rows_of(tmp_path / "report" / "paleo_layers.csv")[0]["channels_last"] == "True"


def test_a_cpu_result_has_measured_peaks_only_and_the_cpu_text(tmp_path):
    write_result(tmp_path, paleo_doc(device="cpu", published=None))
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "PALEO ms (published)" not in markdown and "PALEO ms (measured)" in markdown
    assert "On the CPU every op runs synchronously" in markdown
    assert "on a GPU" not in markdown
    (row,) = rows_of(tmp_path / "report" / "paleo_summary.csv")
    assert row["predicted_s_published"] == "" and float(row["predicted_s_measured"]) > 0


def test_an_unreadable_result_is_listed_and_the_others_still_reported(tmp_path):
    write_result(tmp_path, paleo_doc(0))
    broken = paleo_doc(1, layers=[layer("conv", "Conv2d", 10, 1, 1, 1, [])])  # no repetitions
    write_result(tmp_path, broken)
    assert report_main([str(tmp_path)]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "### point 0: handmade" in markdown and "### point 1:" not in markdown
    assert "unreadable paleo measurements" in markdown
