"""`hpml data digits --root DIR [--ood DIR] [--seed N] [--train-size N] [--jpeg-folder DIR] [--force]`: write a data
set that needs no download. `hpml data fashion-mnist|mnist --root DIR [--from FOLDER] [--force]`: lay out the
official files of FOLDER where torchvision reads them (dataprep/idx_sets.py).

Prints what it wrote; a target that already holds files is refused with one line (exit 2) unless --force.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from hpml.contract.cli_args import OneLineParser
from hpml.contract.folders import empty_path_problem, output_folder_error
from hpml.contract.idx_data import IDX_DATASETS
from hpml.dataprep import digits_cifar as dc
from hpml.dataprep import digits_loader_data as large
from hpml.dataprep import idx_sets


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="hpml data", description="Write a data set that needs no download.")
    sets = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    digits = sets.add_parser(
        "digits", help="scikit-learn's 8x8 digits as CIFAR-10 files (32x32 RGB), for the TTA study",
        description="scikit-learn's digits in CIFAR-10's python format under ROOT/cifar-10-batches-py "
                    "(80/20 stratified split fixed by --seed), and optionally 50 out-of-distribution test "
                    "digits (rotated 25 degrees, thickened) as PNGs in OOD/<digit>/.")
    digits.add_argument("--root", required=True, help="data root (workload.data_root)")
    digits.add_argument("--ood", default=None, help="folder for the out-of-distribution images (apart from ROOT)")
    digits.add_argument("--seed", type=int, default=0, help="seed of the train/test split (default 0)")
    digits.add_argument("--train-size", type=int, default=None, metavar="N",
                        help=f"repeat the training images to N (1438 to {large.MAX_TRAIN_SIZE:,}; e.g. 50000, "
                             "CIFAR-10's size): copies of the same images, to measure a data loader, not learning. "
                             "The cap is 20 times CIFAR-10, far past what a loader measurement needs: 3 GB of batches "
                             "and a million JPEG files")
    digits.add_argument("--jpeg-folder", default=None, metavar="DIR",
                        help="also write the training split (as written: enlarged with --train-size) and the test "
                             "split as JPEGs in DIR/train/<digit>/ and DIR/val/<digit>/ (torchvision ImageFolder)")
    digits.add_argument("--force", action="store_true", help="overwrite a target that already holds files")
    for data in IDX_DATASETS.values():
        where = f"default {data.default_from}" if data.default_from else "required"
        idx = sets.add_parser(
            data.command, help=f"{data.folder}'s four official .gz files, checked and laid out for torchvision",
            description=f"{data.folder}: the four official .gz files of FROM checked (complete, 60,000 + 10,000 "
                        "images of 28x28, labels 0-9, the MD5s torchvision publishes) and written unpacked to "
                        f"ROOT/{data.raw}/, where torchvision.datasets.{data.folder}(ROOT) reads them.")
        idx.add_argument("--root", required=True, help="data root (workload.data_root)")
        idx.add_argument("--from", dest="source", default=data.default_from, required=data.default_from is None,
                         metavar="FOLDER", help=f"the folder of the .gz files ({where})")
        idx.add_argument("--ood", default=None, metavar="DIR",
                         help="also write an out-of-distribution copy of the test set to DIR/<class>/ (the first "
                              "100 test images of each class rotated 20 degrees, PNG), for `hpml evaluate`")
        idx.add_argument("--force", action="store_true", help="overwrite the files this command wrote before")
    return parser.parse_args(argv)


def output_folders(named: Dict[str, Optional[str]]) -> Dict[str, Path]:
    """The output folders given (option -> path), each refused in one line if empty (it would write into the
    current directory: '.' says so), if it cannot be written (contract.folders) or if it is, holds or lies inside
    another (their outputs would mix)."""
    folders: Dict[str, Path] = {}
    for option, text in named.items():
        if text is None:
            continue
        problem = empty_path_problem(option, text)
        if problem:
            raise dc.DataError(problem)
        folders[option] = Path(text)
        problem = output_folder_error(option, folders[option], "the data set")
        if problem:  # before the digits are loaded or a file is written
            raise dc.DataError(problem)
    for (a, path_a), (b, path_b) in itertools.combinations(folders.items(), 2):
        real_a, real_b = path_a.resolve(), path_b.resolve()
        if real_a == real_b or real_a in real_b.parents or real_b in real_a.parents:
            raise dc.DataError(f"{b}={path_b} is not allowed: a folder apart from {a}={path_a} (the same folder, or "
                               "one inside the other, would mix their files); give each its own folder")
    return folders


def write_digits(root: Path, ood: Path | None, seed: int, force: bool, train_size: int | None = None,
                 jpeg_folder: Path | None = None) -> List[str]:
    """Writes the data set (and the OOD folder, the JPEG folder); returns one line per thing written."""
    if seed < 0:
        raise dc.DataError(f"--seed must be >= 0, got {seed}")
    dc.check_targets(root, ood, force)
    if jpeg_folder is not None:
        large.check_jpeg_target(jpeg_folder, force)
    digits = dc.load_digits_32()
    split = dc.stratified_split(digits.labels, seed)
    train = large.repeated(split.train, train_size if train_size is not None else len(split.train))
    try:
        folder, sizes = dc.write_cifar(digits, split, root, train)
        count = dc.write_ood(digits, split, ood) if ood is not None else 0
        jpegs = large.write_jpeg_folder(digits, split, *train, jpeg_folder) if jpeg_folder is not None else None
    except OSError as error:  # a read-only or full disk, a path through a file: one line, not a traceback
        raise dc.DataError(f"cannot write {error.filename or root}: {error.strerror or error}") from None
    lines = [f"wrote {folder}: data_batch_1..{len(sizes)} ({sum(sizes)} training images: "
             f"{', '.join(str(n) for n in sizes)}), test_batch ({len(split.test)} images), batches.meta (classes "
             f"{dc.CLASS_NAMES[0]}..{dc.CLASS_NAMES[-1]}); scikit-learn's 8x8 digits upscaled to 32x32 RGB, "
             f"stratified {round((1 - dc.TEST_FRACTION) * 100)}/{round(dc.TEST_FRACTION * 100)} split, seed {seed}"]
    if sum(sizes) > len(split.train):
        lines.append(f"the training split is the {len(split.train)} training images repeated to {sum(sizes)} "
                     f"({sum(sizes) / len(split.train):.1f} copies each): it measures a data loader, not learning")
    if jpegs is not None:
        lines.append(f"wrote {jpeg_folder}: {jpegs[0]} training JPEGs in train/<digit>/ and {jpegs[1]} test JPEGs in "
                     f"val/<digit>/ (32x32 RGB, quality {large.JPEG_QUALITY}; torchvision ImageFolder layout)")
    if ood is not None:
        lines.append(f"wrote {ood}: {count} PNG images ({dc.OOD_PER_CLASS} per class, from test_batch) in "
                     f"<digit>/ folders, rotated {dc.OOD_ROTATION_DEG:g} degrees counter-clockwise and thickened "
                     f"by a {dc.OOD_MAX_FILTER}x{dc.OOD_MAX_FILTER} maximum filter")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.dataset != "digits":
            data = next(d for d in IDX_DATASETS.values() if d.command == args.dataset)
            folders = output_folders({"--root": args.root, "--ood": args.ood})
            lines = idx_sets.lay_out(data, folders["--root"], Path(args.source), args.force, folders.get("--ood"))
        else:
            folders = output_folders({"--root": args.root, "--ood": args.ood, "--jpeg-folder": args.jpeg_folder})
            lines = write_digits(folders["--root"], folders.get("--ood"), args.seed, args.force, args.train_size,
                                 folders.get("--jpeg-folder"))
    except dc.DataError as error:
        print(f"hpml: error: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(f"hpml: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
