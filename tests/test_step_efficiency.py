"""Issue 44: MFU and what bounds a step. The formulas against hand-computed values, FlopCounterMode's training
FLOPs counted by hand for small models, the verdict rule on hand-made inputs (each verdict and each threshold),
and both recomputed from the inputs the H100 results recorded (docs/results/step_efficiency/)."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.contract.step_efficiency import (
    COMM_BOUND_SHARE,
    DATA_BOUND_SHARE,
    GPU_BOUND_SHARE,
    bound_of_record,
    mfu,
    peak_dtype,
    step_bound,
)
from hpml.models.stats import training_flops
from hpml.models.stats.counting import model_stats
from hpml.models.stats.layers import meta_model
from hpml.models.stats.training_flops import (
    counted_training_flops_per_sample,
    training_flops_per_sample,
    training_step_flops,
)
from hpml.workloads.train import efficiency as train_efficiency
from hpml.workloads.train.efficiency import count_flops, device_peak, efficiency_record, merged_busy_us

H100_RESULTS = Path(__file__).resolve().parent.parent / "docs/results/step_efficiency/h100_1gpu/sweeps"


def on_meta(build):
    with torch.device("meta"):
        return build()


# --- FLOPs: what FlopCounterMode counts over forward + loss + backward, by hand ---------------------------------

def test_one_linear_layer_counts_forward_and_weight_gradient_only():
    # forward 2*i*o per sample; backward: the weight gradient (2*i*o); no input gradient (the input needs none);
    # the bias gradient is a sum, not a matrix product: 4*i*o per sample, not 6*i*o
    model = on_meta(lambda: nn.Linear(10, 4))
    assert training_step_flops(model, (10,), num_classes=4, batch=2) == 2 * 4 * 10 * 4


def test_two_linear_layers_add_the_second_ones_input_gradient():
    # layer 1 (10 -> 6): forward + weight gradient = 4*10*6; layer 2 (6 -> 4): forward + weight + input = 6*6*4
    model = on_meta(lambda: nn.Sequential(nn.Linear(10, 6), nn.ReLU(), nn.Linear(6, 4)))
    assert training_step_flops(model, (10,), num_classes=4, batch=2) == 2 * (4 * 10 * 6 + 6 * 6 * 4)


def test_a_convolution_counts_two_flops_per_mac_of_each_output_element():
    # conv 3 -> 5, 3x3, padding 1 on 8x8: 8*8*5 outputs x 3*9 MACs each; first layer: forward + weight gradient;
    # then Linear(320, 4): forward + weight + input gradients
    model = on_meta(lambda: nn.Sequential(nn.Conv2d(3, 5, 3, padding=1), nn.Flatten(), nn.Linear(5 * 8 * 8, 4)))
    conv_macs, linear_macs = 8 * 8 * 5 * 3 * 9, 320 * 4
    assert training_step_flops(model, (3, 8, 8), num_classes=4, batch=2) == 2 * (2 * 2 * conv_macs + 3 * 2 * linear_macs)


def test_resnet18_trains_at_three_times_its_forward_less_the_first_convolutions_input_gradient():
    model = meta_model("resnet18", 10, cifar_stem=True)
    forward = model_stats("resnet18", (3, 32, 32), 1, num_classes=10, model=model)
    first_conv_macs = forward.rows[0].macs  # 32*32*64 outputs x 3*9 MACs
    assert first_conv_macs == 32 * 32 * 64 * 27
    per_sample = counted_training_flops_per_sample("resnet18", 10, True, (3, 32, 32))
    assert per_sample == 3 * 2 * forward.totals.macs - 2 * first_conv_macs == 3_328_997_376


def test_fashion_mnist_shapes_count_the_one_channel_model_the_workload_trains():
    """A 1 x 28 x 28 input is counted on the model built for it (first layer of 1 channel), not on an RGB model
    the counter cannot feed (the H100 Fashion-MNIST run read n/a before: "Invalid channel dimensions")."""
    model = meta_model("resnet18", 10, cifar_stem=True, in_channels=1)
    forward = model_stats("resnet18", (1, 28, 28), 1, num_classes=10, model=model)
    first_conv_macs = forward.rows[0].macs
    assert first_conv_macs == 28 * 28 * 64 * 9  # 28*28*64 outputs x 1*9 MACs
    per_sample = counted_training_flops_per_sample("resnet18", 10, True, (1, 28, 28))
    assert per_sample == 3 * 2 * forward.totals.macs - 2 * first_conv_macs
    assert count_flops("resnet18", 10, True, (1, 28, 28))["error"] is None


def test_a_count_is_kept_for_later_processes_and_read_back_instead_of_counted(tmp_path, monkeypatch):
    """The worker's count is kept under hpml's cache folder (contract/model_answers.py): a later process reads it
    (about 2 s of a small CPU less a ResNet-18 worker). A kept number is what is returned (here a planted one, which
    no counting could give); a damaged file, or one that holds no count, is counted again and rewritten."""
    monkeypatch.setenv("HPML_CACHE_DIR", str(tmp_path))
    key = ("hpml_cnn", 10, False, (3, 32, 32))
    training_flops_per_sample.cache_clear()
    counted = training_flops_per_sample(*key)
    assert counted == counted_training_flops_per_sample(*key) > 0
    [kept] = (tmp_path / "training_flops").glob("*.json")
    assert kept.read_text() == str(counted)
    kept.write_text("123")
    training_flops_per_sample.cache_clear()
    assert training_flops_per_sample(*key) == 123  # read, not counted
    for damage in ("{not json", "-5", "true", "1.5", '{"flops": 1}'):
        kept.write_text(damage)
        training_flops_per_sample.cache_clear()
        assert training_flops_per_sample(*key) == counted and kept.read_text() == str(counted), damage
    # another version of torch, torchvision or hpml's model code is another file
    training_flops._code_version.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "0.0-other")  # model_answers imports it late
    training_flops_per_sample.cache_clear()
    training_flops_per_sample(*key)
    assert len(list((tmp_path / "training_flops").glob("*.json"))) == 2
    monkeypatch.undo()
    training_flops._code_version.cache_clear()
    training_flops_per_sample.cache_clear()


def test_a_model_the_counter_cannot_build_reads_na_with_the_reason():
    counted = count_flops("alexnet", 10, False, (3, 8, 8))  # too small for its pooling: torch's RuntimeError
    assert counted["flops_per_sample"] is None and counted["error"].startswith("FLOPs not counted: ")


# --- MFU ------------------------------------------------------------------------------------------------------

def test_mfu_is_model_flops_per_second_over_the_devices_peak_by_hand():
    # 1 GFLOP/sample x 100 samples / 0.01 s = 10 TFLOP/s; 2 devices x 50 TFLOP/s = 100: MFU 0.1
    out = mfu(1e9, 100, 0.01, devices=2, peak_tflops_per_device=50.0)
    assert out == {"achieved_tflops": pytest.approx(10.0), "peak_tflops": 100.0, "mfu": pytest.approx(0.1),
                   "na": None}


@pytest.mark.parametrize("flops, peak, reason, expected", [
    (1e9, None, None, "no peak for this device and precision"),
    (None, 50.0, None, "the model's FLOPs were not counted"),
    (1e9, None, "CPU: none", "CPU: none"),
])
def test_mfu_without_a_peak_or_flops_is_none_with_the_reason(flops, peak, reason, expected):
    out = mfu(flops, 100, 0.01, 1, peak, reason)
    assert out["mfu"] is None and out["peak_tflops"] is None and out["na"] == expected


@pytest.mark.parametrize("precision, tf32, dtype", [
    ("fp32", False, "fp32"), ("fp32", True, "tf32"), ("tf32", False, "tf32"), ("bf16", True, "bf16"),
    ("fp16", False, "fp16"),
])
def test_the_peak_follows_the_precision_and_tf32(precision, tf32, dtype):
    assert peak_dtype(precision, tf32) == dtype


def test_h100_dense_peaks_are_the_whitepapers():
    h100 = peaks_for_device("NVIDIA H100 80GB HBM3")
    assert (h100.tflops["bf16"], h100.tflops["fp16"], h100.tflops["tf32"]) == (989.4, 989.4, 494.7)


def test_a_cpu_has_no_peak_and_says_so():
    peak = device_peak(torch.device("cpu"), "fp32", False)
    assert peak["peak_tflops_per_device"] is None and peak["na"].startswith("CPU:")


# --- what bounds the step -------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, comm, busy, verdict", [
    (0.0, None, 0.9, "GPU-bound"),
    (0.3, None, 0.9, "GPU-bound"),  # a busy GPU first: the host that runs ahead blocks anywhere, next(loader) too
    (0.3, None, 0.5, "data-bound"),
    (0.3, None, None, "data-bound"),
    (0.0, 0.4, 0.5, "communication-bound"),
    (0.0, 0.4, None, "communication-bound"),
    (0.0, None, None, "CPU-bound"),
    (0.0, 0.1, None, "CPU-bound"),
    (0.0, None, 0.3, "host-bound"),
    (0.1, 0.1, 0.5, "host-bound"),
])
def test_the_verdict_on_hand_made_shares(data, comm, busy, verdict):
    step = 0.010
    out = step_bound(step, data * step, None if comm is None else comm * step, None if busy is None else busy * step,
                     per_device_batch=128)
    assert out["verdict"] == verdict
    assert out["shares"]["data"] == pytest.approx(data)


def test_each_threshold_is_inclusive():
    assert step_bound(1.0, DATA_BOUND_SHARE, None, None, 8)["verdict"] == "data-bound"
    assert step_bound(1.0, 0.0, COMM_BOUND_SHARE, None, 8)["verdict"] == "communication-bound"
    assert step_bound(1.0, 0.0, None, GPU_BOUND_SHARE, 8)["verdict"] == "GPU-bound"
    assert step_bound(1.0, 0.0, None, GPU_BOUND_SHARE - 1e-9, 8)["verdict"] == "host-bound"


def test_the_host_bound_knob_names_the_batch_and_the_graph_options():
    knob = step_bound(0.012, 0.0, None, 0.003, per_device_batch=128)["knob"]
    assert knob.startswith("per-GPU batch 128 is host-bound") and "workload.cuda_graphs=true" in knob


BF16_NHWC = {"precision": "bf16", "channels_last": True}


@pytest.mark.parametrize("settings, named, not_named", [
    (None, ["workload.precision=bf16", "workload.channels_last=true", "workload.compile=max_autotune"], []),
    ({**BF16_NHWC, "compile": "none", "cuda_graphs": False}, ["workload.compile=max_autotune"],
     ["precision=", "channels_last="]),
    # inside the whole-step graph only compile=default can go: max_autotune replays torch's own graphs (refused)
    ({**BF16_NHWC, "compile": "none", "cuda_graphs": True}, ["workload.compile=default"], ["max_autotune"]),
    ({**BF16_NHWC, "compile": "default", "cuda_graphs": True}, ["more GPUs"], ["workload."]),
    ({"precision": "fp32", "channels_last": False, "compile": "max_autotune", "cuda_graphs": False},
     ["workload.precision=bf16", "workload.channels_last=true"], ["compile="]),
])
def test_the_gpu_bound_knob_names_only_what_the_run_does_not_use(settings, named, not_named):
    knob = step_bound(0.010, 0.0, None, 0.009, 512, settings=settings)["knob"]
    assert all(n in knob for n in named) and not any(n in knob for n in not_named), knob


def test_the_host_bound_knob_of_a_graphed_step_asks_for_a_larger_batch_only():
    graphed = step_bound(0.003, 0.0, None, 0.002, 128, settings={**BF16_NHWC, "compile": "none", "cuda_graphs": True})
    assert graphed["verdict"] == "host-bound" and graphed["knob"].endswith(
        "a larger batch per GPU (at this global batch, fewer GPUs)")
    compiled = step_bound(0.003, 0.0, None, 0.002, 128, settings={"compile": "reduce_overhead", "cuda_graphs": False})
    assert compiled["knob"].endswith("a larger batch per GPU or workload.cuda_graphs=true")


def test_a_step_time_of_zero_is_refused():
    with pytest.raises(ValueError):
        step_bound(0.0, 0.0, None, None, 1)


def test_the_busy_share_is_the_probes_kernel_time_over_the_probes_own_wall_time():
    # issue 44: the probe ran 10 ms a step with the GPU busy 6 ms of it (0.6: host-bound); the training's median
    # step, measured at another time (the host shared), was 5 ms: 6 / 5 = 1.2 read GPU-bound before
    out = step_bound(0.005, 0.001, None, 0.006, per_device_batch=128, busy_wall_s=0.010)
    assert out["shares"]["busy"] == pytest.approx(0.6) and out["verdict"] == "host-bound"
    assert out["shares"]["data"] == pytest.approx(0.2)  # the loader wait stays over the training's step
    assert step_bound(0.005, 0.001, None, 0.006, per_device_batch=128)["shares"]["busy"] == pytest.approx(1.2)
    # 12 ms busy in a 15 ms probe step: 0.8, the threshold, GPU-bound whatever the training's step was
    assert step_bound(0.030, 0.0, None, 0.012, 128, busy_wall_s=0.015)["verdict"] == "GPU-bound"
    with pytest.raises(ValueError):
        step_bound(0.005, 0.0, None, 0.006, 128, busy_wall_s=0.0)


def test_a_record_written_before_busy_wall_s_keeps_the_verdict_it_had():
    old = {"step_s": 0.005, "data_s": 0.001, "comm_s": None, "busy_s": 0.006, "per_device_batch": 128}
    assert bound_of_record(old)["shares"]["busy"] == pytest.approx(1.2)  # busy_s / step_s, as then
    assert bound_of_record(old)["verdict"] == "GPU-bound"
    assert bound_of_record({**old, "busy_wall_s": 0.010})["verdict"] == "host-bound"  # 0.6
    assert bound_of_record({**old, "busy_s": None, "busy_wall_s": None})["verdict"] == "CPU-bound"


def test_the_record_takes_the_busy_share_from_the_probes_own_steps():
    busy = {"steps": 10, "kernels": 500, "busy_s_per_step": 0.006, "any_kernel_s_per_step": 0.0065,
            "steps_wall_s_per_step": 0.010, "profiled_wall_s_per_step": 0.031, "method": "m"}
    record = efficiency_record(
        flops={"flops_per_sample": 1e9, "error": None}, peak={"peak_tflops_per_device": 100.0, "na": None},
        step_time_s=[[0.9, 0.9], [0.005, 0.005, 0.005]], data_time_s=[[0.0, 0.0], [0.001, 0.001, 0.001]],
        timed=[1], samples_per_step=128, devices=1, per_device_batch=128, comm_s=None, busy=busy)
    assert record["bound_inputs"] == {"step_s": 0.005, "data_s": 0.001, "comm_s": None, "busy_s": 0.006,
                                      "busy_wall_s": 0.010, "per_device_batch": 128}
    assert record["bound"]["shares"]["busy"] == pytest.approx(0.6) and record["bound"]["verdict"] == "host-bound"
    assert bound_of_record(record["bound_inputs"]) == record["bound"]
    cpu = efficiency_record(
        flops={"flops_per_sample": 1e9, "error": None}, peak={"peak_tflops_per_device": None, "na": "CPU"},
        step_time_s=[[0.005]], data_time_s=[[0.0]], timed=[0], samples_per_step=8, devices=1, per_device_batch=8,
        comm_s=None, busy=None)
    assert cpu["bound_inputs"]["busy_wall_s"] is None and cpu["bound"]["verdict"] == "CPU-bound"


class FakeClock:
    """time.perf_counter for the probe: advances only where the fake profiler and the fake steps say."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


def test_the_probes_wall_time_leaves_the_profilers_start_and_stop_out(monkeypatch):
    """The busy share's denominator is the steps' own wall time, timed inside the profiler: its start and stop
    (0.2 s each here; on the H100 the whole window read up to 3.7x the step) are not the steps' time."""
    from torch.autograd import DeviceType

    clock = FakeClock()

    class Range:
        def __init__(self, start, end):
            self.start, self.end = start, end

    class Event:
        def __init__(self, name, start, end):
            self.name, self.device_type, self.time_range = name, DeviceType.CUDA, Range(start, end)

    class FakeProfile:
        def __init__(self, activities):
            pass

        def __enter__(self):
            clock.now += 0.2  # the profiler starting
            return self

        def __exit__(self, *exc):
            clock.now += 0.2  # the profiler stopping and collecting its trace
            return False

        def events(self):  # per step: kernels [0, 4) and [3, 6) ms overlap -> 6 ms busy; an NCCL kernel 2 ms
            return [e for k in range(4) for e in (Event("gemm", 10_000 * k, 10_000 * k + 4_000),
                                                   Event("relu", 10_000 * k + 3_000, 10_000 * k + 6_000),
                                                   Event("ncclAllReduce", 10_000 * k + 6_000, 10_000 * k + 8_000))]

    def run_steps(steps):
        clock.now += 0.010 * steps  # 10 ms a step

    monkeypatch.setattr(torch.profiler, "profile", FakeProfile)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(train_efficiency, "time", clock)
    probe = train_efficiency.device_busy_probe(run_steps, 4)
    assert probe["steps_wall_s_per_step"] == pytest.approx(0.010)
    assert probe["profiled_wall_s_per_step"] == pytest.approx(0.010 + 0.4 / 4)  # the whole window, as before
    assert probe["busy_s_per_step"] == pytest.approx(0.006) and probe["any_kernel_s_per_step"] == pytest.approx(0.008)


def test_busy_time_is_the_union_of_kernel_intervals():
    # [0,4) and [2,6) overlap -> [0,6); [8,9) apart; [8.5,8.7) inside it: 6 + 1 = 7
    assert merged_busy_us([(8, 9), (0, 4), (2, 6), (8.5, 8.7)]) == 7
    assert merged_busy_us([]) == 0


# --- the H100 results recompute from their recorded inputs --------------------------------------------------------

def h100_results():
    return {(r["config"]["workload"]["model"], r["config"]["workload"]["compile"], r["config"]["workload"]["cuda_graphs"]): r
            for r in (json.loads(p.read_text()) for p in sorted(H100_RESULTS.glob("*/points/*/result.json")))}


def test_h100_mfu_recomputes_from_the_recorded_flops_batch_step_and_peak():
    results = h100_results()
    assert len(results) == 5
    for result in results.values():
        e = result["measurements"]["efficiency"]
        step = e["bound_inputs"]["step_s"]
        assert e["peak"]["peak_tflops_per_device"] == 989.4 and e["peak"]["dtype"] == "bf16"
        assert e["mfu"] == pytest.approx(e["flops"]["flops_per_sample"] * e["samples_per_step"] / step / 989.4e12)


def test_h100_verdicts_recompute_from_the_recorded_inputs():
    results = h100_results()
    # written before busy_wall_s: their busy share is busy_s / step_s, the verdicts they recorded
    assert not any("busy_wall_s" in r["measurements"]["efficiency"]["bound_inputs"] for r in results.values())
    verdicts = {key: bound_of_record(r["measurements"]["efficiency"]["bound_inputs"])["verdict"]
                for key, r in results.items()}
    assert verdicts[("resnet18", "none", False)] == "host-bound"  # eager: kernels 27 % of the step
    assert verdicts[("resnet18", "reduce_overhead", False)] == "host-bound"  # 63 %
    assert verdicts[("resnet18", "none", True)] == "GPU-bound"  # the whole-step graph: 95 %
    assert verdicts[("resnet50", "none", True)] == "GPU-bound"
    assert verdicts[("resnet50", "none", False)] == "host-bound"


# --- the reports ------------------------------------------------------------------------------------------------

def test_compare_has_mfu_as_a_headline_recomputed_from_the_inputs():
    from hpml.analysis.compare.metrics import HEADLINES

    [metric] = [m for m in HEADLINES["train"] if m.name == "MFU"]
    assert metric.unit == "%" and metric.better == "higher"
    graphed = h100_results()[("resnet18", "none", True)]
    e = graphed["measurements"]["efficiency"]
    assert metric.value(graphed) == pytest.approx(100 * 3_328_997_376 * 128 / e["bound_inputs"]["step_s"] / 989.4e12)
    version1 = {"measurements": {k: v for k, v in graphed["measurements"].items() if k != "efficiency"}}
    assert metric.value(version1) is None  # written before MFU: not compared, not zero


def test_a_result_without_the_record_reads_not_recorded():
    from hpml.analysis.train.efficiency import NOT_RECORDED, efficiency_of

    found = efficiency_of({"epoch_time_s": [1.0, 1.0]})
    assert found["mfu"] is None and found["mfu_na"] == NOT_RECORDED and found["bound"] is None


def test_the_h100_report_puts_each_points_mfu_and_verdict_in_the_technique_table(tmp_path):
    from tests.conftest import hpml_here

    out = tmp_path / "report"
    done = hpml_here(["report", str(H100_RESULTS), "--out", str(out)], cwd=tmp_path)  # its table is the claim
    assert done.returncode == 0, done.stderr
    text = (out / "report.md").read_text()
    start = text.index("## Step efficiency by technique")
    table = text[start:text.index("\n## ", start + 1)]
    rows = [line for line in table.splitlines() if line.startswith("| step_efficiency") or line.startswith("| tta")]
    assert len(rows) == 5
    graphed = next(r for r in rows if r.startswith("| step_efficiency_graphs"))
    cells = [c.strip() for c in graphed.strip("|").split("|")]
    assert cells[1:6] == ["resnet18", "bf16", "yes", "none", "yes"]
    assert cells[8:12] == ["3.12", "136.7", "13.8 %", "GPU-bound"]
    assert "How far from the GPU's limit" not in text  # one table per report: the techniques one here
    assert (out / "step_efficiency.csv").is_file()


def test_the_second_h100_call_recorded_the_verdict_the_rule_gives():
    # written by the worker of this branch (the GPU asked first): GPU-bound, and the analysis agrees
    [path] = sorted((H100_RESULTS.parent.parent / "h100_1gpu_call2/sweeps").glob("*/points/*/result.json"))
    result = json.loads(path.read_text())
    e = result["measurements"]["efficiency"]
    assert result["derived"]["bound"] == e["bound"]["verdict"] == bound_of_record(e["bound_inputs"])["verdict"] == "GPU-bound"
    assert e["busy_probe"]["busy_s_per_step"] <= e["busy_probe"]["any_kernel_s_per_step"]
