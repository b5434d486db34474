"""`hpml evaluate SWEEP_DIR --images DIR [--out OUTDIR]`: every saved model of a sweep scored on an image folder.

Prints the Markdown report and writes OUTDIR/evaluate.md, evaluate.csv (one row per model),
evaluate_hardware.csv (per hardware group) and their LaTeX tables (OUTDIR defaults to SWEEP_DIR/report/).
A model.pt that cannot be read, rebuilt or run (its forward pass fails: an input too small for its pooling,
out of memory) is listed under "Models not evaluated", the others are still scored; an image that cannot be
used is listed under "Images skipped" (evaluation.images). One `hpml: error:` line and exit 2: no model.pt
under SWEEP_DIR, none usable, or an image folder that cannot be scored (evaluation.images says which cases).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

from hpml.contract.cli_args import OneLineParser, folder_argument
from hpml.contract.files import one_line
from hpml.contract.folders import output_folder_error

# torch and what imports it (the models, the scoring, the image folder) are imported by `evaluate`, after the
# arguments and the output folder were checked: a refusal is one line in a fraction of a second, not after the
# seconds of importing torch (issue 41)

REPORT_MD = "evaluate.md"


class EvaluateError(Exception):
    """Nothing can be evaluated; main prints it as one line."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="hpml evaluate",
                                     description="Top-1 accuracy of every points/*/model.pt under SWEEP_DIR on an "
                                                 "image folder (DIR/<class>/<images>).")
    parser.add_argument("sweep_dir", type=folder_argument, help="a sweep directory, or a folder holding sweeps")
    parser.add_argument("--images", type=folder_argument, required=True, help="image folder: one sub-folder per class, "
                                                                   "named like the training classes")
    parser.add_argument("--out", type=folder_argument, default=None,
                        help=f"where to write {REPORT_MD} and the CSV files (default: SWEEP_DIR/report/)")
    return parser.parse_args(argv)


def evaluate(sweep_dir: Path, images: Path) -> Tuple[str, list]:
    """(Markdown, sections). Raises EvaluateError for input that cannot be evaluated (an image folder that cannot be
    scored too: evaluation.images says which)."""
    from hpml.evaluation.images import ImageFolderError

    try:
        return scored(sweep_dir, images)
    except ImageFolderError as error:
        raise EvaluateError(str(error)) from error


def scored(sweep_dir: Path, images: Path) -> Tuple[str, list]:
    """evaluate's work: every saved model scored; ImageFolderError for an image folder that cannot be scored."""
    import torch

    from hpml.evaluation.accuracy import batch_size, evaluation_device, score
    from hpml.evaluation.images import ImageFolderError, check_names, class_folders, dataset
    from hpml.evaluation.report import Evaluated, sections
    from hpml.models.saved import SavedModelError, find_saved_models, load_saved, rebuild
    from hpml.report_kit.sections import report_markdown

    if not sweep_dir.is_dir():
        raise EvaluateError(f"{sweep_dir} is not a directory; give a sweep directory (or a folder of sweeps)")
    paths = find_saved_models(sweep_dir)
    if not paths:
        raise EvaluateError(f"no points/<n>/model.pt under {sweep_dir}: its training runs kept no model (the "
                            "train workload saves one when a run ends with its final weights)")
    folders = class_folders(images)
    device = evaluation_device()
    evaluated: List[Evaluated] = []
    not_evaluated: List[Tuple[Path, str]] = []
    for path in paths:
        try:
            saved = load_saved(path, sweep_dir)
            check_names(folders, saved.classes, f"the model of {saved.point}")
            model = rebuild(saved, device)
        except SavedModelError as error:
            not_evaluated.append((path, str(error)))
            continue
        data = dataset(folders, saved.classes, saved.image_size, saved.mean, saved.std, saved.spec.in_channels,
                       saved.padding)
        side = saved.image_size + 2 * saved.padding
        try:
            evaluated.append(Evaluated(saved, score(model, data, device, batch_size(side))))
        except ImageFolderError:
            raise
        except Exception as error:  # noqa: BLE001 - whatever this model's forward pass raises, it alone fails
            not_evaluated.append((path, f"its forward pass failed on {side} x {side} "
                                        f"inputs ({one_line(error)})"))
        del model, saved  # one model in memory at a time
        if device.type == "cuda":
            torch.cuda.empty_cache()  # what a failed pass held
    if not evaluated:
        raise EvaluateError(f"none of the {len(paths)} model.pt files under {sweep_dir} could be evaluated; "
                            f"first: {not_evaluated[0][0]}: {not_evaluated[0][1]}")
    parts = sections(evaluated, folders, not_evaluated)
    return report_markdown(f"hpml evaluate: {sweep_dir} on {images}", parts), parts


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out_dir = args.out or args.sweep_dir / "report"
    problem = output_folder_error("--out", out_dir, "the report") if args.sweep_dir.is_dir() else None  # a missing sweep is said below
    if problem:  # before any model is loaded
        print(f"hpml: error: {problem}", file=sys.stderr)
        return 2
    try:
        markdown, parts = evaluate(args.sweep_dir, args.images)
    except EvaluateError as error:
        print(f"hpml: error: {error}", file=sys.stderr)
        return 2
    from hpml.report_kit.sections import write_sections

    print(markdown, end="")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / REPORT_MD).write_text(markdown)
    written = [out_dir / REPORT_MD] + write_sections(parts, out_dir)
    print(f"\nhpml: wrote {', '.join(str(path) for path in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
