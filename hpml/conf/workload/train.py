"""Schema of the `train` workload (conf/workload/train.yaml; the worker: workloads/train/).

DDP or DataParallel training of a torchvision classifier. Its own rules against the point's resources (strong
scaling's batch split, DataParallel's one process) are in check_resources; its preflight looks for the model
in torchvision and the data set on disk (conf/workload/train_data.py: which data set, what it holds, whether it
is there). The values of its enumerated keys (parallel, precision, compile, ...) are in conf/workload/train_choices.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from hpml.conf.augmentation import check_accumulation_chunks, check_batch_augmentation, check_crop_and_cutout
from hpml.conf.data_on_disk import CIFAR10_SIDE
from hpml.conf.model_input import input_problem
from hpml.conf.resources import ResourcesConfig
from hpml.conf.torchvision_models import model_problem
from hpml.conf.validation import MISSING, require, require_buffer, require_input_batch, require_price, require_repeats
from hpml.conf.workload.train_choices import (
    BatchPrep,
    CompileMode,
    DataPlacement,
    LrDecay,
    LrScaling,
    Parallel,
    Precision,
    WarmupFrom,
)
from hpml.conf.workload.train_data import (
    REAL_DATASETS,
    Dataset,
    check_batch_fits_data,
    data_problem,
    flips,
    idx_dataset,
    input_channels,
    on_disk,
)
from hpml.conf.workload_contract import Scaling, WorkloadConfig, check_loader_workers_fit, check_strong_scaling_batch
from hpml.contract.idx_data import IDX_SIDE
from hpml.contract.train_format import per_worker_batch as worker_batch
from hpml.models.names import designed_side


@dataclass
class TrainConfig(WorkloadConfig):
    model: str = MISSING  # a torchvision classification model name (resnet18, resnet50, ...)
    num_classes: int = MISSING
    # the data's images are image_size x image_size (CIFAR-10 32, Fashion-MNIST and MNIST 28); a model designed for a
    # larger side (the CIFAR ResNets: 32) gets them zero-padded to it (model_side, input_block)
    image_size: int = MISSING
    dataset: Dataset = MISSING
    data_root: Optional[str] = None  # required for cifar10 / image_folder / fashion_mnist / mnist; never downloaded
    # real data sets: train on the first N samples of the training split and evaluate on the first N of the held-out
    # one (a slice for tests and quick looks; the result's measurements.dataset_note says so); null: all of them
    max_samples: Optional[int] = None
    synthetic_samples: int = MISSING  # size of the synthetic data set (per epoch, all workers together)
    batch_size: int = MISSING  # per worker (scaling=weak) or global (scaling=strong)
    scaling: Scaling = MISSING
    epochs: int = MISSING  # epoch 1 is warm-up; reported epoch time is the mean of epochs 2..N
    lr: float = MISSING
    momentum: float = MISSING
    weight_decay: float = MISSING
    loader_workers: int = MISSING  # DataLoader num_workers per training worker
    pin_memory: bool = MISSING  # host path on a GPU: the DataLoader pins batches (page-locked) for async copies
    checkpoint: bool = MISSING  # save after every epoch; a requeued job resumes from the last one
    keep_checkpoint: bool = MISSING  # false: a completed point's checkpoint is deleted (kept on failure)
    # --- batch size x GPU count study (docs/studies/batch-gpu-scaling.md) ---
    parallel: Parallel = MISSING
    dp_devices: int = MISSING  # parallel=dp: GPUs the one DataParallel process spans; must be 1 for ddp
    precision: Precision = MISSING
    channels_last: bool = MISSING  # inputs and weights in NHWC memory format (faster convolutions on GPUs)
    cudnn_benchmark: bool = MISSING  # torch.backends.cudnn.benchmark (GPU only)
    tf32: bool = MISSING  # allow TF32 in fp32 matmuls and convolutions (GPU only)
    compile: CompileMode = MISSING  # torch.compile the (wrapped) model in this mode; compiling falls in epoch 1
    # the whole step (forward, loss, backward, SGD) captured once in one CUDA graph and replayed
    # (workloads/train/graphed_step.py): one launch per step instead of one per kernel. GPU, parallel=none
    cuda_graphs: bool = MISSING
    # GPU: steps profiled after training for the device's busy time (what bounds the step,
    # contract/step_efficiency.py); 0: off (the verdict then has no busy share)
    bound_probe_steps: int = MISSING
    # torch.utils.checkpoint (non-reentrant) around each stage of the model (workloads/train/checkpointing.py):
    # a stage's activations are recomputed in backward instead of kept from forward (memory for compute)
    activation_checkpointing: bool = MISSING
    cifar_stem: bool = MISSING  # ResNets: 3x3 stride-1 first conv and no max-pool (the CIFAR ResNet-18)
    lr_scaling: LrScaling = MISSING
    lr_base_batch: int = MISSING  # the global batch that lr is meant for (lr_scaling=linear)
    warmup_epochs: float = MISSING  # gradual warm-up (Goyal et al.) from lr to the scaled lr; 0: none
    warmup_from: WarmupFrom = MISSING
    lr_decay: LrDecay = MISSING
    lr_decay_epochs: float = MISSING  # lr_decay=linear: the epoch at whose end the rate reaches 0
    lr_milestones: List[float] = MISSING  # lr_decay=step: epochs (from the start) at which the rate is multiplied
    lr_gamma: float = MISSING  # lr_decay=step: by this factor (He et al. 0.1, DeVries & Taylor 0.2)
    label_smoothing: float = MISSING  # CrossEntropyLoss(label_smoothing=): training loss only
    comm_probe_steps: int = MISSING  # ddp: steps timed with no_sync() and synced, after training; 0: off
    profile_comm_steps: int = MISSING  # GPU: steps under torch.profiler for NCCL kernel time; 0: off
    overhead_check_steps: int = MISSING  # steps per block of the plain vs instrumented loop check; 0: off
    overhead_check_rounds: int = MISSING  # alternating (plain, instrumented) block pairs
    max_batch_probe: int = MISSING  # 0: off; else double the per-device batch up to this until OOM
    # --- time to accuracy (docs/studies/time-to-accuracy.md) ---
    eval_every: int = MISSING  # evaluate on the held-out split after every this many epochs; 0: never
    # stop once an evaluation reaches this top-1 (a fraction, 0-1], but not before epoch 2 (epoch 1 is warm-up);
    # workload.epochs is the cap. null: train all epochs. Needs eval_every >= 1.
    target_accuracy: Optional[float] = None
    # real data sets: random crop, and a horizontal flip where the data set allows it (not MNIST's digits;
    # false for the digits written as CIFAR-10)
    augment: bool = MISSING
    crop_padding: int = MISSING  # augment: zero padding (pixels) around the image before the random crop
    cutout_holes: int = MISSING  # Cutout (DeVries & Taylor 2017): square holes per training image; 0: off
    cutout_size: int = MISSING  # the holes' side in pixels (clipped at the border)
    # --- batch augmentation (Hoffer et al. 2019; docs/studies/batch-augmentation.md) ---
    batch_augmentation: int = MISSING  # M: each sample of a step M times, each copy its own augmentation; 1: off
    # split the step's M x batch samples into this many equal chunks, their gradients accumulated before one
    # optimizer step (the same update as the whole step, but BatchNorm's statistics are per chunk); 1: off
    accumulation_chunks: int = MISSING
    # --- the data path (docs/studies/data-on-the-device.md) ---
    data_placement: DataPlacement = MISSING
    device_data_share: float = MISSING  # data_placement=device: the largest share of the device's free memory
    # data_placement=device: each step's batch made at the step, or the whole epoch's at its start (BatchPrep).
    # A default, not MISSING: a point config written before this key (`hpml resume`) made its batches per step.
    batch_prep: BatchPrep = BatchPrep.step
    save_model: bool = MISSING  # rank 0 keeps points/<n>/model.pt (weights + how to rebuild) for `hpml evaluate`
    # Set together by the `hardware` config group (conf/hardware/<link>.yaml), never by hand:
    link: str = MISSING  # the hardware table's entry; "none" when no peak is known
    link_peak_GBps: Optional[float] = MISSING  # the link's peak per direction, GB/s; null: unknown
    # Set together by the `pricing` config group (conf/pricing/<name>.yaml), never by hand; the time-to-accuracy
    # report's cost to target (analysis/tta/energy.py) is GPU-hours x this price. Not MISSING, unlike the other
    # fields: a point's config.yaml written before the train workload had a price (`hpml resume` of an older sweep)
    # lacks both keys, and means pricing=none.
    price_name: str = "none"  # the price table's entry; "none" when no price is known
    gpu_hour_usd: Optional[float] = None  # price of one GPU for one hour, US$; null: unknown

    def __post_init__(self) -> None:
        require(self.num_classes >= 2, "workload.num_classes", "an integer >= 2", self.num_classes)
        require(self.image_size >= 8, "workload.image_size", "an integer >= 8", self.image_size)
        require(self.synthetic_samples >= 1, "workload.synthetic_samples", "an integer >= 1",
                self.synthetic_samples)
        require_buffer("workload.synthetic_samples", self.synthetic_samples, 8 * self.synthetic_samples,
                       "its labels (and the sampler's order: int64 each)")
        require(self.batch_size >= 1, "workload.batch_size", "an integer >= 1", self.batch_size)
        require_input_batch(self.batch_size, self.image_size)
        require(self.epochs >= 2, "workload.epochs",
                "an integer >= 2 (epoch 1 is warm-up and is not reported)", self.epochs)
        require(self.lr > 0, "workload.lr", "a number > 0", self.lr)
        require(0 <= self.momentum < 1, "workload.momentum", "a number >= 0 and < 1 (SGD's momentum)", self.momentum)
        require(self.weight_decay >= 0, "workload.weight_decay", "a number >= 0", self.weight_decay)
        require(self.loader_workers >= 0, "workload.loader_workers", "an integer >= 0", self.loader_workers)
        require(self.dataset not in REAL_DATASETS or bool(self.data_root),
                "workload.data_root",
                f"a directory holding the data set when workload.dataset={self.dataset.value}",
                self.data_root)
        require(self.max_samples is None or (type(self.max_samples) is int and self.max_samples >= 1),
                "workload.max_samples", "null (every sample) or an integer >= 1", self.max_samples)
        require(self.max_samples is None or self.may_read_real_data, "workload.max_samples",
                f"null unless the data set is a real one (dataset={self.dataset.value}: "
                "use workload.synthetic_samples)", self.max_samples)
        require(self.dp_devices >= 1, "workload.dp_devices", "an integer >= 1", self.dp_devices)
        require(self.parallel == Parallel.dp or self.dp_devices == 1, "workload.dp_devices",
                f"1 when workload.parallel={self.parallel.value} (one GPU per process; several only with parallel=dp)", self.dp_devices)
        require(self.lr_base_batch >= 1, "workload.lr_base_batch", "an integer >= 1", self.lr_base_batch)
        require(self.warmup_epochs >= 0, "workload.warmup_epochs", "a number >= 0 (0: no warm-up)",
                self.warmup_epochs)
        for key in ("comm_probe_steps", "profile_comm_steps", "overhead_check_steps", "max_batch_probe",
                    "bound_probe_steps"):
            require(getattr(self, key) >= 0, f"workload.{key}", "an integer >= 0 (0: off)", getattr(self, key))
        require(self.overhead_check_rounds >= 1, "workload.overhead_check_rounds", "an integer >= 1",
                self.overhead_check_rounds)
        require_repeats(self, ("comm_probe_steps", "profile_comm_steps", "overhead_check_steps", "overhead_check_rounds",
                               "bound_probe_steps"),
                        epochs=("epochs",))
        require(self.eval_every >= 0, "workload.eval_every", "an integer >= 0 (0: no evaluation)", self.eval_every)
        require(self.eval_every == 0 or self.dataset in REAL_DATASETS, "workload.eval_every",
                "0 unless workload.dataset is cifar10, image_folder, fashion_mnist or mnist (a real held-out split: "
                "CIFAR-10's test "
                f"batch, an image folder's val/); dataset={self.dataset.value} has none", self.eval_every)
        target = self.target_accuracy
        require(target is None or (isinstance(target, (int, float)) and 0 < target <= 1), "workload.target_accuracy",
                "null or a top-1 fraction in (0, 1], e.g. 0.92", target)
        require(target is None or self.eval_every >= 1, "workload.eval_every",
                "an integer >= 1 when workload.target_accuracy is set (the target is checked at evaluations)",
                self.eval_every)
        require(self.lr_decay != LrDecay.linear or self.lr_decay_epochs > self.warmup_epochs, "workload.lr_decay_epochs",
                f"a number of epochs > workload.warmup_epochs={self.warmup_epochs} when workload.lr_decay=linear",
                self.lr_decay_epochs)
        require(0 <= self.label_smoothing < 1, "workload.label_smoothing", "a number in [0, 1)", self.label_smoothing)
        require(self.eval_every <= self.epochs, "workload.eval_every",
                f"at most workload.epochs={self.epochs} (0: never), else no evaluation would run", self.eval_every)
        require(self.warmup_epochs < self.epochs, "workload.warmup_epochs",
                f"fewer than workload.epochs={self.epochs} (else the whole run is warm-up)", self.warmup_epochs)
        require(self.dataset != Dataset.cifar10 or self.image_size == CIFAR10_SIDE, "workload.image_size",
                f"{CIFAR10_SIDE} when workload.dataset=cifar10 (its images are {CIFAR10_SIDE}x{CIFAR10_SIDE}; the size "
                "applies to image_folder and the synthetic data sets)", self.image_size)
        data = idx_dataset(self.dataset)
        require(data is None or self.image_size == IDX_SIDE, "workload.image_size",
                f"{IDX_SIDE} when workload.dataset={self.dataset.value} (its images are {IDX_SIDE}x{IDX_SIDE}, taken as "
                "they are; a model designed for 32x32 gets them zero-padded)", self.image_size)
        check_crop_and_cutout(self)
        check_cuda_graphs(self)
        check_step_decay(self)
        check_batch_augmentation(self)
        require(self.data_placement == DataPlacement.host or self.may_read_real_data,
                "workload.data_placement", "host unless workload.dataset is cifar10, image_folder or auto "
                f"(dataset={self.dataset.value}; dataset=synthetic_device is the synthetic data made on the device)",
                self.data_placement.value)
        require(self.batch_prep == BatchPrep.step or self.data_placement == DataPlacement.device,
                "workload.batch_prep", "step unless workload.data_placement=device (the host path's batches come "
                "from its DataLoader)", self.batch_prep.value)
        require(0 < self.device_data_share <= 1, "workload.device_data_share",
                "a fraction in (0, 1] of the device's free memory", self.device_data_share)
        require(self.max_batch_probe == 0 or self.max_batch_probe >= self.batch_size, "workload.max_batch_probe",
                f"0 (off) or a batch >= workload.batch_size={self.batch_size}", self.max_batch_probe)
        require((self.link == "none") == (self.link_peak_GBps is None), "workload.link_peak_GBps",
                "null exactly when workload.link=none; choose the link with hardware=<name> "
                "(conf/hardware/), which sets both", self.link_peak_GBps)
        require_price(self.price_name, self.gpu_hour_usd)

    @property
    def may_read_real_data(self) -> bool:
        """cifar10 or image_folder, or auto (CIFAR-10 where data_root holds it): data with images to augment and to
        keep on the device."""
        return self.dataset in REAL_DATASETS + (Dataset.auto,)

    @property
    def input_channels(self) -> int:
        """Channels of the images the model takes: the data set's own (1 for Fashion-MNIST and MNIST)."""
        return input_channels(self.dataset)

    @property
    def model_side(self) -> int:
        """The side of the images the model takes: the data's, or the larger side the model was designed for (real
        data sets only: synthetic images are made at image_size, and dataset=auto may turn out synthetic)."""
        if self.dataset not in REAL_DATASETS:
            return self.image_size
        return max(self.image_size, designed_side(self.model) or 0)

    @property
    def fit_padding(self) -> int:
        """Zero pixels added on each side to bring the data's images to model_side (0: taken as they are)."""
        return (self.model_side - self.image_size) // 2

    @property
    def flip(self) -> bool:
        """The horizontal flip of the training augmentation: with workload.augment, where the data set allows it."""
        return self.augment and flips(self.dataset)

    @property
    def devices_per_worker(self) -> int:
        """Devices one worker process drives: dp_devices for DataParallel, 1 for DDP."""
        return self.dp_devices if self.parallel == Parallel.dp else 1

    @property
    def captures_collectives(self) -> bool:
        """The whole-step CUDA graph with DDP holds the step's all-reduces (workloads/train/graphed_step.py)."""
        return self.cuda_graphs and self.parallel == Parallel.ddp

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        world = resources.world_size
        check_strong_scaling_batch(self.batch_size, self.scaling, world)
        if self.scaling == Scaling.strong:
            devices = world * self.devices_per_worker
            require(self.batch_size % devices == 0, "workload.batch_size",
                    f"a multiple of the {devices} devices (workload.dp_devices per worker) when "
                    "workload.scaling=strong", self.batch_size)
        if self.parallel == Parallel.dp:
            check_data_parallel(self, resources)
        require(self.precision != Precision.tf32 or resources.gpus_per_node >= 1, "workload.precision",
                "fp32, fp16 or bf16 without GPUs (resources.gpus_per_node=0): TF32 is a mode of NVIDIA tensor cores",
                self.precision.value)
        require(self.parallel != Parallel.none or world == 1, "resources.workers_per_node",
                "1 on 1 node when workload.parallel=none (the bare model, one worker; use parallel=ddp for more)",
                f"{resources.workers_per_node} on {resources.nodes} node(s)")
        require(not self.cuda_graphs or resources.gpus_per_node >= 1, "workload.cuda_graphs",
                "false without GPUs (resources.gpus_per_node=0): a CUDA graph is captured on a GPU; "
                "workload.compile=default runs on a CPU", self.cuda_graphs)
        require(self.compile != CompileMode.reduce_overhead or resources.gpus_per_node >= 1, "workload.compile",
                "none, default or max_autotune without GPUs (resources.gpus_per_node=0): reduce_overhead is "
                "CUDA graphs", self.compile.value)
        check_batch_fits_data(self, world, per_worker_batch(self, world))
        check_accumulation_chunks(self, per_worker_batch(self, world))
        if self.data_placement == DataPlacement.host:  # the device path has no DataLoader (a preset's workers wait
            check_loader_workers_fit(self.loader_workers, resources)  # for workload.data_placement=host)
        check_batchnorm_samples(self, per_worker_batch(self, world))

    def preflight_problems(self) -> List[str]:
        problems = [problem for problem in (model_problem(self.model), data_problem(self)) if problem]
        if not problems:  # the model is known: can it take the images it will get?
            problems += [p for p in [input_problem(self.model, self.model_side, self.num_classes,
                                                   self.cifar_stem, self.input_channels)] if p]
        if self.activation_checkpointing and not problems:
            from hpml.models.stages import stages_problem  # imports torch: only when checkpointing is asked for

            problems += [p for p in [stages_problem(self.model, self.num_classes, self.cifar_stem)] if p]
        if not problems and self.placement is not None:  # does one step's memory floor fit the device?
            from hpml.conf.train_memory import step_memory_problem

            per_worker = per_worker_batch(self, self.placement.resources.world_size)
            problems += [p for p in [step_memory_problem(self, per_worker, on_disk(self))] if p]
        return problems


def per_worker_batch(cfg: TrainConfig, world_size: int) -> int:
    """Distinct samples per step in one worker process (contract.train_format.per_worker_batch)."""
    return worker_batch(cfg.batch_size, cfg.scaling.value, world_size, cfg.devices_per_worker)


# what a whole-step CUDA graph cannot hold here, and why: (the combination, the reason) when it is asked for
def cuda_graph_conflicts(cfg: TrainConfig) -> List[str]:
    conflicts = []
    if cfg.parallel == Parallel.dp:
        conflicts.append("parallel=dp (DataParallel's threads are not captured; use parallel=ddp, one process a GPU)")
    if cfg.compile in (CompileMode.reduce_overhead, CompileMode.max_autotune):
        conflicts.append(f"compile={cfg.compile.value} (one capture at a time: this mode replays torch's own CUDA "
                         "graphs; compile=default's fused kernels can be captured in the whole step)")
    if cfg.precision == Precision.fp16:
        conflicts.append("precision=fp16 (its gradient scaler reads inf checks on the host every step; use bf16)")
    if cfg.accumulation_chunks != 1:
        conflicts.append(f"accumulation_chunks={cfg.accumulation_chunks} (the captured step is one whole batch)")
    if cfg.activation_checkpointing:
        conflicts.append("activation_checkpointing=true (recomputation inside a capture is not supported here)")
    return conflicts


def check_cuda_graphs(cfg: TrainConfig) -> None:
    """workload.cuda_graphs with something it cannot be combined with: one line naming the combination."""
    conflicts = cuda_graph_conflicts(cfg) if cfg.cuda_graphs else []
    require(not conflicts, "workload.cuda_graphs", "false with " + "; ".join(conflicts), cfg.cuda_graphs)


def check_step_decay(cfg: TrainConfig) -> None:
    """lr_milestones: increasing epochs after the warm-up, given exactly when lr_decay=step (never ignored)."""
    milestones = list(cfg.lr_milestones)
    if cfg.lr_decay != LrDecay.step:
        require(not milestones, "workload.lr_milestones",
                f"[] unless workload.lr_decay=step (lr_decay={cfg.lr_decay.value} does not read it)", milestones)
        return
    require(bool(milestones) and all(isinstance(m, (int, float)) and cfg.warmup_epochs < m < cfg.epochs
                                     for m in milestones)
            and all(a < b for a, b in zip(milestones, milestones[1:])), "workload.lr_milestones",
            f"increasing epochs, each > workload.warmup_epochs={cfg.warmup_epochs} and < workload.epochs={cfg.epochs} "
            "(a later one would never apply), when workload.lr_decay=step (e.g. [50, 75])", milestones)
    require(0 < cfg.lr_gamma <= 1, "workload.lr_gamma", "a factor in (0, 1] (e.g. 0.1: divided by 10)", cfg.lr_gamma)


def check_data_parallel(cfg: TrainConfig, resources: ResourcesConfig) -> None:
    """parallel=dp is one process (one worker on one node) driving dp_devices GPUs of that node."""
    require(resources.nodes == 1 and resources.workers_per_node == 1, "resources.workers_per_node",
            "1 on 1 node when workload.parallel=dp (DataParallel is one process; use parallel=ddp for "
            "one process per GPU)", f"{resources.workers_per_node} on {resources.nodes} node(s)")
    if resources.gpus_per_node == 0:
        require(cfg.dp_devices == 1, "workload.dp_devices",
                "1 without GPUs (resources.gpus_per_node=0: DataParallel runs the module on the CPU)",
                cfg.dp_devices)
    else:
        require(cfg.dp_devices <= resources.gpus_per_node, "workload.dp_devices",
                f"at most resources.gpus_per_node={resources.gpus_per_node}", cfg.dp_devices)


def check_batchnorm_samples(cfg: TrainConfig, per_worker: int) -> None:
    """BatchNorm in training cannot normalize one sample (PyTorch raises at the first forward): refuse a forward
    pass of one sample per device (the batch split over DataParallel's devices, times M, over the chunks) for a
    model that has BatchNorm. The model is built (on the meta device: no memory) only in that rare case."""
    samples = per_worker // cfg.devices_per_worker * cfg.batch_augmentation // cfg.accumulation_chunks
    if samples >= 2 or model_problem(cfg.model):
        return
    import torch  # only for this rare case: composing a sweep does not load torch otherwise

    from hpml.models.build import build_classifier

    try:
        with torch.device("meta"):
            model = build_classifier(cfg.model, cfg.num_classes, cfg.cifar_stem, cfg.input_channels)
    except ValueError:
        return  # the model's own problem (e.g. cifar_stem on a non-ResNet) is refused where it is checked
    has_batchnorm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    require(not has_batchnorm, "workload.batch_size",
            f"a batch giving each forward pass at least 2 samples per device for {cfg.model} (it has BatchNorm, which "
            f"cannot normalize one sample in training): {per_worker} per worker / {cfg.devices_per_worker} device(s) "
            f"x {cfg.batch_augmentation} copies / {cfg.accumulation_chunks} chunks = {samples}", cfg.batch_size)


