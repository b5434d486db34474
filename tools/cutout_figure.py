"""Two training images before and after Cutout, drawn with the code that trains (issue 23's figure).

    python tools/cutout_figure.py --data-root data/digits --out cutout.png [--indices 0 1] [--holes 1] [--size 16]
                                  [--seed 0]

Reads the training split in CIFAR-10's python format (the digits of `hpml data digits`, or CIFAR-10) with the
device path's decoder (workloads/train/device_data.py: uint8, N x 3 x 32 x 32), then runs the device path's
augmentation with Cutout only (workloads/train/augment.py: normalization, then `--holes` squares of `--size`
pixels, centres drawn uniformly over the image, clipped at the border, set to 0 after normalization, i.e. to the
data set's mean colour) from a generator seeded with `--seed`. The figure has one row per image: the image as
stored, and the same image after Cutout (un-normalized for display, so a hole shows the mean colour), titled with
the pixels the holes cover (fewer than size x size when a hole is clipped at the border). Printed: the same numbers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch  # noqa: E402

from hpml.workloads.common.cifar10 import CIFAR10_MEAN, CIFAR10_STD, local_cifar10  # noqa: E402
from hpml.workloads.train.augment import AugmentSpec, Normalization, augment_batch  # noqa: E402


def training_images(root: str, indices) -> torch.Tensor:
    """uint8 len(indices) x 3 x H x W from the CIFAR-10-format training split under root (as the device path
    decodes it)."""
    data = local_cifar10(root, transform=None, train=True)
    return torch.from_numpy(data.data[list(indices)]).permute(0, 3, 1, 2).contiguous()


def with_cutout(images: torch.Tensor, holes: int, size: int, seed: int):
    """(the images after Cutout, un-normalized to [0, 1] for display; the N x H x W mask of the holes)."""
    norm = Normalization.of(CIFAR10_MEAN, CIFAR10_STD, images.device)
    out, _ = augment_batch(images, torch.zeros(len(images), dtype=torch.int64), AugmentSpec(cutout_holes=holes,
                           cutout_size=size), norm, torch.float32, torch.contiguous_format,
                           torch.Generator().manual_seed(seed))
    # a hole is exactly 0 in every channel after normalization; an image pixel never is (255 * mean is no integer)
    mask = (out == 0).all(dim=1)
    mean = torch.tensor(CIFAR10_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR10_STD).view(1, 3, 1, 1)
    return (out * std + mean).clamp(0, 1), mask


def draw(images: torch.Tensor, after: torch.Tensor, mask: torch.Tensor, size: int, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(images), 2, figsize=(5.0, 2.5 * len(images)), dpi=120, squeeze=False)
    for row, (image, cut, holes) in enumerate(zip(images, after, mask)):
        covered = int(holes.sum())
        axes[row][0].imshow(image.permute(1, 2, 0).numpy(), interpolation="nearest")
        axes[row][0].set_title("before", fontsize=9)
        axes[row][1].imshow(cut.permute(1, 2, 0).numpy(), interpolation="nearest")
        clipped = " (clipped)" if covered < size * size else ""
        axes[row][1].set_title(f"after Cutout: {covered} px{clipped}", fontsize=9)
        for ax in axes[row]:
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle(f"Cutout, {size}x{size} holes (DeVries & Taylor 2017)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True, help="a folder holding cifar-10-batches-py/")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--indices", type=int, nargs="+", default=[0, 1], help="training images to show")
    parser.add_argument("--holes", type=int, default=1)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    images = training_images(args.data_root, args.indices)
    after, mask = with_cutout(images, args.holes, args.size, args.seed)
    draw(images, after, mask, args.size, args.out)
    for index, holes in zip(args.indices, mask):
        rows, cols = torch.nonzero(holes, as_tuple=True)
        box = f"rows {int(rows.min())}-{int(rows.max())}, columns {int(cols.min())}-{int(cols.max())}" if len(rows) else "none"
        print(f"training image {index}: Cutout covers {int(holes.sum())} px ({box})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
