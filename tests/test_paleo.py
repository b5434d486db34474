"""The paleo workload (workloads/paleo/, conf/workload/paleo.py): its config and one-line errors, the per-layer
timing on the CPU (same calls as models.stats' rows, hooks removed after), and on a GPU (`pytest -m gpu`):
TF32 as configured, CUDA-event layer times, the published peaks of the device, the tiny preset end to end.
The tiny CPU preset runs under torchrun in tests/test_study_contract.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from hpml.conf.dtypes import DType
from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload.paleo import PaleoConfig
from hpml.contract.sweep_layout import RESULT_FILE, point_dir
from hpml.models.build import build_classifier
from hpml.models.stats.layers import layer_rows
from hpml.workloads.paleo.__main__ import configure_backends, measure, peak_dtype
from hpml.workloads.paleo.timing import CallOrderChanged, LayerTimes, check_call_order, run_rounds, time_layers
from tests.conftest import GROSS, timed_against

TINY = dict(name="paleo", device="auto", backend="auto", model="hpml_cnn", num_classes=10, image_size=32,
            batch_size=2, dtype=DType.float32, tf32=False, channels_last=False, cudnn_benchmark=True,
            warmup_iters=1, repetitions=2, peak_matmul_n=64, peak_copy_bytes=65536, peak_repetitions=2, peak_warmup=1,
            peak_window_s=0.0, ppp=1.0, reference_gpu="k80")


# --- config --------------------------------------------------------------------------------------------


def test_the_defaults_time_vgg19_at_batch_1_in_fp32_without_tf32(compose_values):
    cfg = config_from_dict(compose_values(["workload=paleo"]))
    w = cfg.workload
    assert isinstance(w, PaleoConfig)
    assert (w.model, w.batch_size, w.image_size, w.dtype, w.tf32) == ("vgg19", 1, 224, DType.float32, False)
    assert w.reference_gpu == "k80" and w.ppp == 1.0


def test_the_tiny_preset_is_a_small_cpu_point(compose_values):
    cfg = config_from_dict(compose_values(["experiment=tiny/paleo"]))
    assert cfg.workload.model == "hpml_cnn" and cfg.resources.gpus_per_node == 0


def test_the_study_preset_sweeps_two_models_two_batches_two_dtypes_on_one_gpu(hpml, tmp_path):
    done = hpml("launch", "--dry-run", "experiment=paleo", "cluster.assume_gpus=1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "8 point(s)" in lines[0]
    points = lines[1:]
    for value in ("workload.model=vgg19", "workload.model=resnet50", "workload.batch_size=1",
                  "workload.batch_size=64", "workload.dtype=float32", "workload.dtype=bfloat16"):
        assert sum(value in line for line in points) == 4, value
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize("overrides, message", [
    (["workload.batch_size=0"], "workload.batch_size=0 is not allowed: an integer >= 1"),
    (["workload.repetitions=0"], "workload.repetitions=0 is not allowed: an integer >= 1"),
    (["workload.ppp=0"], "workload.ppp=0.0 is not allowed: a number in (0, 1]"),
    (["workload.ppp=1.5"], "workload.ppp=1.5 is not allowed: a number in (0, 1]"),
    (["workload.reference_gpu=k8"], "workload.reference_gpu='k8' is not allowed: one of k80, v100_sxm2"),
    (["workload.peak_copy_bytes=6"], "workload.peak_copy_bytes=6 is not allowed: a positive multiple of 4"),
    (["workload.dtype=bfloat16", "workload.tf32=true"], "workload.tf32=True is not allowed: false unless "
                                                        "workload.dtype=float32"),
    (["workload.tf32=true"], "workload.tf32=True is not allowed: false on the CPU"),
    (["resources.workers_per_node=2", "resources.gpus_per_node=2"],
     "resources.workers_per_node=2 is not allowed: 1 on 1 node"),
])
def test_bad_values_name_the_field(compose_values, overrides, message):
    with pytest.raises(ConfigValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        config_from_dict(compose_values(["workload=paleo"] + overrides))


@pytest.mark.parametrize("override, expected", [
    ("workload.model=vgg91", "hpml: error: workload.model=vgg91: neither one of hpml's models (hpml_cnn, "
                             "cifar_resnet8, cifar_resnet20, cifar_resnet32, cifar_resnet44, cifar_resnet56, "
                             "cifar_resnet110) nor a torchvision classification model"),
    ("workload.batch_size=0", "hpml: error: workload.batch_size=0 is not allowed: an integer >= 1"),
    ("workload.dtype=float64", "hpml: error: workload.dtype: Invalid value 'float64', expected one of "
                               "[float32, bfloat16, float16]"),
    ("workload.tf32=true", "hpml: error: workload.tf32=True is not allowed: false on the CPU"),
])
def test_a_bad_override_is_one_line_and_nothing_is_written(hpml, tmp_path, override, expected):
    done, composed, ratios = timed_against(lambda: hpml("launch", "experiment=tiny/paleo", override),
                                           lambda: hpml("launch", "--cfg", "job", "experiment=tiny/paleo"))
    assert composed.returncode == 0, composed.stderr
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), done.stderr
    assert min(ratios) < GROSS, ratios  # as fast as composing the config: nothing ran
    assert not list(tmp_path.glob("sweeps/*/points/*/config.yaml"))


@pytest.mark.parametrize("model, size, expected", [
    ("vgg19", 8, "hpml: error: workload.image_size=8: vgg19 cannot run on a 3x8x8 input (Given input size: "
                 "(512x1x1). Calculated output size: (512x0x0)"),
    ("vit_b_16", 64, "hpml: error: workload.image_size=64: vit_b_16 cannot run on a 3x64x64 input (Wrong image "
                     "height! Expected 224 but got 64!)"),
])
def test_an_input_the_model_cannot_take_is_one_line_before_anything_runs(hpml, tmp_path, model, size, expected):
    done = hpml("launch", "experiment=tiny/paleo", f"workload.model={model}", f"workload.image_size={size}")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), done.stderr
    assert not list(tmp_path.glob("sweeps/*/points/*/config.yaml"))


def test_the_peak_dtype_follows_the_run_dtype_and_tf32():
    config = PaleoConfig(**TINY)
    assert peak_dtype(config) == "fp32"
    assert peak_dtype(replace(config, tf32=True)) == "tf32"
    assert peak_dtype(replace(config, dtype=DType.bfloat16)) == "bf16"
    assert peak_dtype(replace(config, dtype=DType.float16)) == "fp16"


# --- the worker's parts on the CPU ----------------------------------------------------------------------


def test_layer_timing_times_every_call_models_stats_counts_and_removes_its_hooks():
    model = build_classifier("resnet18", num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32)
    expected = [row.name for row in layer_rows(model, (3, 32, 32), batch=1)]
    assert "layer1.0.relu#2" in expected  # BasicBlock calls its one ReLU twice: two rows, two timings
    with torch.inference_mode():
        timed = time_layers(model, x)
    assert timed.names == expected
    assert len(timed.seconds) == len(expected) and all(t > 0 for t in timed.seconds)
    assert timed.wall_seconds == timed.seconds  # on the CPU the device time is the host's
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_rounds_keep_every_repetition():
    model = build_classifier("hpml_cnn", num_classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    names = [row.name for row in layer_rows(model, (3, 32, 32), batch=2)]
    with torch.inference_mode():
        rounds = run_rounds(model, x, names, warmup=1, repetitions=3)
    assert len(rounds["forward_s"]) == 3 and len(rounds["layer_s"]) == 3
    assert all(len(times) == len(names) for times in rounds["layer_s"])
    assert all(t > 0 for t in rounds["forward_s"])


def test_a_forward_that_calls_other_layers_than_counted_fails_with_the_first_difference():
    timed = LayerTimes()
    timed.names = ["conv", "relu", "fc"]
    check_call_order(["conv", "relu", "fc"], timed, 0)
    with pytest.raises(CallOrderChanged, match="repetition 4: the timed forward's leaf call 1 is relu, the "
                                               r"counted forward's pool \(3 vs 3 calls\)"):
        check_call_order(["conv", "pool", "fc"], timed, 4)


@pytest.mark.parametrize("dtype", [DType.bfloat16, DType.float16])
def test_half_precision_runs_on_the_cpu(dtype):
    """bfloat16 and float16 convolutions both run on the CPU (torch 2.x), so neither is refused there."""
    result = measure(PaleoConfig(**{**TINY, "dtype": dtype}), torch.device("cpu"), seed=0)
    assert result["dtype"] == dtype.value
    assert result["peaks"]["dtype"] == {"bfloat16": "bf16", "float16": "fp16"}[dtype.value]
    assert result["peaks"]["published"] is None and result["tf32_cudnn"] is None
    # bytes at 2 per element: hpml_cnn's first convolution reads a 2x3x32x32 input
    assert result["layers"][0]["input_bytes"] == 2 * 3 * 32 * 32 * 2


def test_the_result_records_the_reference_gpu_per_board_and_per_device():
    result = measure(PaleoConfig(**TINY), torch.device("cpu"), seed=0)
    reference = result["peaks"]["reference"]
    assert reference["board"]["tflops"]["fp32"] == 8.73 and reference["device"]["tflops"]["fp32"] == 4.365
    assert sum(layer["flops"] for layer in result["layers"]) == 2 * sum(layer["macs"] for layer in result["layers"])
    assert configure_backends(PaleoConfig(**TINY), torch.device("cpu"))["cudnn_benchmark"] is None


# --- on a GPU --------------------------------------------------------------------------------------------



@pytest.mark.parametrize("tf32", [False, True])
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_fp32_means_fp32_unless_tf32_is_asked_for(tf32):
    """With TF32 off the fp32 matmul cannot beat the published non-tensor fp32 peak; with it on it must (tensor
    cores). Layer times are CUDA-event times; at batch 1 the synchronized layers add up to more than the forward."""
    cfg = PaleoConfig(**{**TINY, "model": "resnet18", "num_classes": 1000, "image_size": 224, "batch_size": 1,
                         "tf32": tf32, "repetitions": 5, "peak_matmul_n": 4096, "peak_copy_bytes": 1 << 28,
                         "peak_repetitions": 5})
    result = measure(cfg, torch.device("cuda"), seed=0)
    assert result["tf32_matmul"] is tf32 and result["tf32_cudnn"] is tf32 and result["cudnn_benchmark"] is True
    published = peaks_for_device(torch.cuda.get_device_name())
    assert result["peaks"]["published"] == (published.as_record() if published else None)
    matmul = result["peaks"]["matmul"]
    tflops = matmul["flops"] / sorted(matmul["times_s"])[len(matmul["times_s"]) // 2] / 1e12
    if published is not None:
        assert (tflops > published.tflops["fp32"]) is tf32, tflops
    layer_sum = sum(sorted(layer["time_s"])[2] for layer in result["layers"])
    forward = sorted(result["forward_time_s"])[2]
    assert all(min(layer["time_s"]) > 0 for layer in result["layers"])
    assert layer_sum > forward
    assert all(w >= t * 0.9 for layer in result["layers"] for t, w in zip(layer["time_s"], layer["wall_s"]))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_tiny_preset_end_to_end_with_published_peaks(hpml, tmp_path):
    done = hpml("launch", "experiment=tiny/paleo", "resources.gpus_per_node=1", "workload.dtype=bfloat16",
                "workload.channels_last=true", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = (tmp_path / "sweeps" / "latest").resolve()
    doc = json.loads((point_dir(sweep, 0) / RESULT_FILE).read_text())
    assert doc["status"] == "ok" and doc["environment"]["device"] == "cuda"
    assert "CUDA event" in doc["timing"]["layer"]
    assert hpml("report", str(sweep)).returncode == 0
    markdown = (sweep / "report" / "report.md").read_text()
    assert "on a GPU" in markdown
    if peaks_for_device(torch.cuda.get_device_name()) is not None:
        assert "PALEO ms (published)" in markdown
