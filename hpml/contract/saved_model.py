"""A trained model kept for later evaluation (`hpml evaluate`), and the evaluation record of a training run.

The train workload's rank 0 saves, when the point ends with its final weights, points/<n>/model.pt
(torch.save of a dict; loaded with torch.load(weights_only=True), so it holds tensors and plain values only):

    format        SAVED_MODEL_FORMAT
    state_dict    the unwrapped model's weights (no DDP "module." prefix), on the CPU
    model         {"name": torchvision model name, "num_classes", "image_size", "cifar_stem": bool,
                  "in_channels": 3 or 1 (Fashion-MNIST, MNIST), "padding": zero pixels added on each side after
                  the resize to image_size (a 28x28 data set for a model designed for 32x32)}; files written before
                  in_channels and padding existed mean 3 and 0
    classes       the class names in label order (CIFAR-10's batches.meta, an image folder's sorted folders,
                  torchvision's FashionMNIST.classes), each as a folder name (folder_name: "T-shirt/top" is
                  "T-shirt-top"), since `hpml evaluate` matches image folders to them by name
    normalize     {"mean": [one per channel], "std": [one per channel]}: the inputs' normalization (evaluation
                  transform: to in_channels (RGB or grayscale), resize to image_size, pad, to tensor, normalize)
    hardware      the GPU model it was trained on ("cpu" without one): the evaluate report's group

result.json of a run with evaluation (workload.eval_every > 0 or a target) holds:

    measurements.evaluation  {"epoch": [..], "step": [..], "top1": [..] (fraction 0-1), "loss": [..],
                              "elapsed_s": [..] (wall-clock since training started, evaluation included),
                              "train_elapsed_s": [..] (the same without evaluation time),
                              "eval_s": [..] (each evaluation's own duration)}
    derived.tta              {"target": fraction or null, "converged": bool, "tta_s": s or null,
                              "tta_train_s": s or null, "epochs_to_target": int or null,
                              "steps_to_target": int or null}
"""

from __future__ import annotations

MODEL_FILE = "model.pt"


def folder_name(class_name: str) -> str:
    """A class name as a folder can be named: "/" (Fashion-MNIST's "T-shirt/top") becomes "-"."""
    return class_name.replace("/", "-")
SAVED_MODEL_FORMAT = 1
