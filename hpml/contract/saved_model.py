"""A trained model kept for later evaluation (`hpml evaluate`), and the evaluation record of a training run.

The train workload's rank 0 saves, when the point ends with its final weights, points/<n>/model.pt
(torch.save of a dict; loaded with torch.load(weights_only=True), so it holds tensors and plain values only):

    format        SAVED_MODEL_FORMAT
    state_dict    the unwrapped model's weights (no DDP "module." prefix), on the CPU
    model         {"name": torchvision model name, "num_classes", "image_size", "cifar_stem": bool}
    classes       the class names in label order (CIFAR-10's batches.meta, or an image folder's sorted folders)
    normalize     {"mean": [r, g, b], "std": [r, g, b]}: the inputs' normalization (evaluation transform:
                  resize to image_size, to tensor, normalize)
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
SAVED_MODEL_FORMAT = 1
