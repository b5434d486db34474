"""Schema of the `quantize` workload (conf/workload/quantize.yaml; the worker: workloads/quantize/).

Post-training quantization of a small CNN to 8-bit fixed point, stage by stage (float, W8, W8A8, W8A8B32, then
the integer-only inference of the last stage), with held-out accuracy after each, checked against PyTorch's own
eager-mode post-training static quantization (torch.ao.quantization). docs/studies/quantization.md.

Its rules against the resources: one worker on the CPU (the stages are evaluated in one process; PyTorch's
quantized int8 kernels are CPU kernels). Its preflight: the data set on disk, the saved model (workload.model_path)
readable and of the configured model, the quantized engine present in the installed torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import List, Optional

from hpml.conf.data_on_disk import (
    OnDisk,
    cifar10_contents,
    classes_problem,
    missing_cifar10_files,
    unreadable_cifar10,
)
from hpml.conf.resources import ResourcesConfig
from hpml.conf.validation import MISSING, require, require_classes, require_repeats
from hpml.conf.workload_contract import WorkloadConfig, check_one_process
from hpml.contract.idx_data import IDX_DATASETS, idx_problem

# The networks the workload can quantize: chains of convolutions and linear layers (batch norm folded into the
# convolution before it), ReLU, max- and average-pooling (workloads/quantize/plan.py). hw5_cnn: the homework's
# CNN (models/hw5_cnn.py); hpml_cnn: the time-to-accuracy presets' model (models/small_cnn.py), so a model.pt kept
# by `experiment=tta_digits` can be quantized.
QUANTIZABLE_MODELS = ("hw5_cnn", "hpml_cnn")
DIGITS_CLASSES = 10  # dataset=digits: the digits 0-9


class Engine(str, Enum):
    """torch.backends.quantized.engine of the cross-check; auto: the first of x86, fbgemm, onednn, qnnpack that
    computes full-range int8 sums exactly on this CPU (workloads/quantize/torch_ao.choose_engine)."""

    auto = "auto"
    x86 = "x86"
    fbgemm = "fbgemm"
    qnnpack = "qnnpack"
    onednn = "onednn"


class QuantDataset(str, Enum):
    cifar10 = "cifar10"  # CIFAR-10's python files under data_root (e.g. `hpml data digits --root DIR`)
    digits = "digits"  # scikit-learn's digits built in memory, the same images `hpml data digits` writes (seed 0)
    # torchvision's FashionMNIST / MNIST from data_root (`hpml data fashion-mnist|mnist`): 1 channel, 28x28, zero-
    # padded to 32x32 for hw5_cnn (its 400-input layer is 16 x 5 x 5 of a 32x32 input)
    fashion_mnist = "fashion_mnist"
    mnist = "mnist"


class ScaleMethod(str, Enum):
    maxabs = "maxabs"  # range r = max |x|
    sigma = "sigma"  # range r = min(max |x|, |mean| + k * std), k = sigma_k: outliers clipped


class Granularity(str, Enum):
    per_tensor = "per_tensor"  # one weight scale per layer
    per_channel = "per_channel"  # one weight scale per output channel (per output feature of a linear layer)


class Requantize(str, Enum):
    # int32 accumulator x int32 multiplier M0 (M = M0 * 2^-shift, M0 in [2^30, 2^31)), then a rounding right
    # shift: integer arithmetic only (gemmlowp's scheme); with power_of_two scales M0 = 2^30 and it is a shift
    fixed_point = "fixed_point"
    float = "float"  # the int32 accumulator times M in float32, then rounded (fbgemm's requantization)


@dataclass
class QuantizeConfig(WorkloadConfig):
    """Post-training quantization stages and the torch.ao cross-check (workloads/quantize/)."""

    model: str = MISSING  # one of QUANTIZABLE_MODELS; with model_path, the model the file holds
    num_classes: int = MISSING
    dataset: QuantDataset = MISSING
    data_root: Optional[str] = None  # dataset=cifar10: the folder holding cifar-10-batches-py/; digits: null
    model_path: Optional[str] = None  # a model.pt kept by the train workload (save_model=true); null: train here
    # --- the float model, when trained here (seeded by sweep.seed) ---
    epochs: int = MISSING
    batch_size: int = MISSING
    lr: float = MISSING
    momentum: float = MISSING
    weight_decay: float = MISSING
    # --- quantization ---
    calibration_samples: int = MISSING  # training images the activation ranges are measured on (seeded draw)
    scale_method: ScaleMethod = MISSING
    sigma_k: float = MISSING  # k of scale_method=sigma (and the k sigma marked on every histogram)
    power_of_two: bool = MISSING  # every scale rounded up to a power of two: requantization is a shift
    weight_granularity: Granularity = MISSING
    requantize: Requantize = MISSING  # how the integer-only inference rescales an int32 accumulator to int8
    histogram_bins: int = MISSING  # bins of each weight and activation histogram in the result
    # --- measuring ---
    eval_batch_size: int = MISSING  # held-out images per forward pass
    timing_warmup: int = MISSING  # untimed held-out passes per stage before the timed ones
    timing_repetitions: int = MISSING  # timed held-out passes per stage
    torch_ao: bool = MISSING  # cross-check with torch.ao.quantization's eager-mode static quantization
    torch_ao_engine: Engine = MISSING

    def __post_init__(self) -> None:
        require(self.model in QUANTIZABLE_MODELS, "workload.model",
                f"one of {', '.join(QUANTIZABLE_MODELS)} (chains of conv / linear, ReLU, pooling)", self.model)
        require_classes(self.num_classes)
        require(self.dataset == QuantDataset.digits or bool(self.data_root), "workload.data_root",
                f"a directory holding the data set when workload.dataset={self.dataset.value} (cifar-10-batches-py/, "
                "FashionMNIST/raw/, MNIST/raw/)", self.data_root)
        require(self.dataset != QuantDataset.digits or self.num_classes == DIGITS_CLASSES, "workload.num_classes",
                f"{DIGITS_CLASSES} when workload.dataset=digits (the digits 0-9)", self.num_classes)
        require(self.dataset != QuantDataset.digits or self.data_root is None, "workload.data_root",
                "null when workload.dataset=digits (the digits are built in memory)", self.data_root)
        require(self.model_path is None or bool(self.model_path), "workload.model_path",
                "a model.pt kept by the train workload, or null to train here", self.model_path)
        for key in ("epochs", "batch_size", "calibration_samples", "eval_batch_size", "timing_repetitions"):
            require(getattr(self, key) >= 1, f"workload.{key}", "an integer >= 1", getattr(self, key))
        require(self.timing_warmup >= 0, "workload.timing_warmup", "an integer >= 0", self.timing_warmup)
        require_repeats(self, ("timing_warmup", "timing_repetitions"), epochs=("epochs",))
        require(self.lr > 0, "workload.lr", "a number > 0", self.lr)
        require(0 <= self.momentum < 1, "workload.momentum", "a number in [0, 1)", self.momentum)
        require(self.weight_decay >= 0, "workload.weight_decay", "a number >= 0", self.weight_decay)
        require(0 < self.sigma_k <= 100, "workload.sigma_k", "a number in (0, 100] (the k of k sigma)", self.sigma_k)
        require(2 <= self.histogram_bins <= 1000, "workload.histogram_bins", "an integer from 2 to 1000",
                self.histogram_bins)

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        check_one_process(resources, "workload quantize evaluates its stages in one process; sweep sweep.seed for repeats")
        require(self.runs_on_cpu(resources), "workload.device",
                "cpu (or auto with resources.gpus_per_node=0): the int8 kernels it compares with are CPU kernels",
                self.device.value)

    def preflight_problems(self) -> List[str]:
        problems = [data_problem(self), saved_model_problem(self), engine_problem(self)]
        return [problem for problem in problems if problem]


def data_problem(cfg: QuantizeConfig) -> Optional[str]:
    idx = IDX_DATASETS.get(cfg.dataset.value)
    if idx:
        problem = idx_problem(cfg.data_root, idx)
        return f"workload.data_root={cfg.data_root}: {problem}" if problem else classes_problem(
            cfg.num_classes, cfg.data_root, OnDisk(60000, len(idx.classes)))
    if cfg.dataset != QuantDataset.cifar10:
        return None
    missing = missing_cifar10_files(cfg.data_root)
    if missing:
        return (f"workload.data_root={cfg.data_root}: no {', '.join(missing)} under cifar-10-batches-py/ (write the "
                "digits with `hpml data digits --root DIR`, or use workload.dataset=digits)")
    found = cifar10_contents(cfg.data_root)
    if found is None:
        return unreadable_cifar10("workload.data_root", cfg.data_root)
    return classes_problem(cfg.num_classes, cfg.data_root, found)


def saved_model_problem(cfg: QuantizeConfig) -> Optional[str]:
    """Why workload.model_path is no model.pt of workload.model (read as `hpml evaluate` reads it), or None."""
    if cfg.model_path is None:
        return None
    path = Path(cfg.model_path)
    if not path.is_file():
        return f"workload.model_path={cfg.model_path}: no such file (a points/<n>/model.pt of a train run)"
    from hpml.models.saved import SavedModelError, load_saved

    try:
        saved = load_saved(path, path.parent)
    except SavedModelError as error:
        return f"workload.model_path={cfg.model_path}: {error}"
    if saved.spec.model != cfg.model or saved.spec.num_classes != cfg.num_classes or saved.spec.cifar_stem:
        return (f"workload.model_path={cfg.model_path} holds {saved.spec.model} with {saved.spec.num_classes} classes; "
                f"set workload.model={saved.spec.model} workload.num_classes={saved.spec.num_classes} (one of "
                f"{', '.join(QUANTIZABLE_MODELS)})")
    return None


def engine_problem(cfg: QuantizeConfig) -> Optional[str]:
    """A named quantized engine the installed torch lacks (auto takes what there is, or runs no cross-check)."""
    if not cfg.torch_ao or cfg.torch_ao_engine == Engine.auto:
        return None
    import torch

    engines = torch.backends.quantized.supported_engines
    if cfg.torch_ao_engine.value not in engines:
        return (f"workload.torch_ao_engine={cfg.torch_ao_engine.value}: this torch {torch.__version__} supports "
                f"{', '.join(e for e in engines if e != 'none') or 'no quantized engine'}; choose one, or auto")
    return None
