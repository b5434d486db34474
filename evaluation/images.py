"""The image folder `hpml evaluate` scores models on: DIR/<class>/<image>, any size, PNG or JPEG (any format
torchvision's ImageFolder takes: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case).

Class folders are matched to a model's classes by NAME: folder "cat" is scored against the model's output
for its class "cat", wherever "cat" sits in the model's label order (ImageFolder numbers folders in sorted
order, which need not be the order the model was trained with). Not every class needs a folder. Each problem
is one line, before any model runs: DIR missing, no class folder, a class folder with no image, a folder
named like no class of the model, an image PIL cannot read.

Transform: the train workload's evaluation transform (workloads/train/evaluation.py, "transformed as in
evaluation"), after converting to RGB (L and P are expanded, RGBA's alpha channel is dropped, not
composited): the shorter side resized to image_size (bilinear, PIL's antialiasing), the centre
image_size x image_size cropped (a square image is only resized), ToTensor (0-1), Normalize with the mean and
std the model was trained with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence

from torchvision.datasets.folder import IMG_EXTENSIONS


class ImageFolderError(Exception):
    """The image folder cannot be scored as it is; the command prints this one line."""


@dataclass
class ClassFolders:
    root: Path
    counts: Dict[str, int]  # class folder name -> images in it, sorted by name

    @property
    def images(self) -> int:
        return sum(self.counts.values())


def _is_image(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(IMG_EXTENSIONS)


def class_folders(root: Path) -> ClassFolders:
    """The class folders and their image counts; ImageFolderError for a folder that cannot be scored."""
    if not root.is_dir():
        raise ImageFolderError(f"--images {root}: not a directory")
    folders = sorted(p for p in root.iterdir() if p.is_dir())  # hidden ones too: ImageFolder takes them
    if not folders:
        raise ImageFolderError(f"--images {root}: no class folders; put each class's images in {root}/<class>/")
    counts = {}
    for folder in folders:
        counts[folder.name] = sum(1 for p in folder.rglob("*") if _is_image(p))
        if counts[folder.name] == 0:
            raise ImageFolderError(f"--images {folder}: no images in this class folder (expected "
                                   f"{', '.join(IMG_EXTENSIONS)} files)")
    return ClassFolders(root, counts)


def check_names(folders: ClassFolders, classes: Sequence[str], whose: str) -> None:
    """Every folder must name one of the model's classes."""
    unknown = [name for name in folders.counts if name not in classes]
    if unknown:
        shown = ", ".join(classes[:12]) + (", ..." if len(classes) > 12 else "")
        raise ImageFolderError(f"--images {folders.root}: folder {unknown[0]!r} is not a class of {whose} "
                               f"(its classes: {shown}); rename or remove it")


def _load_rgb(path: str):
    from PIL import Image, UnidentifiedImageError

    try:
        with open(path, "rb") as f:
            image = Image.open(f)
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise ImageFolderError(f"{path}: not a readable image ({type(error).__name__})") from None


def dataset(folders: ClassFolders, classes: List[str], image_size: int, mean: Sequence[float],
            std: Sequence[float]):
    """The folder as (image tensor, the model's class index) pairs."""
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder

    transform = T.Compose([T.Resize(image_size), T.CenterCrop(image_size), T.ToTensor(),
                           T.Normalize(list(mean), list(std))])
    data = ImageFolder(str(folders.root), transform=transform, loader=_load_rgb)
    by_name = {name: classes.index(name) for name in data.classes}
    to_model = [by_name[name] for name in data.classes]  # ImageFolder's index (sorted folders) -> model's index
    data.target_transform = to_model.__getitem__
    return data
