"""The image folder `hpml evaluate` scores models on: DIR/<class>/<image>, any size, PNG or JPEG (any format
torchvision's ImageFolder takes: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case), in the class folder
or in folders under it (links to folders followed, each folder listed once: a link back up is left out).

Class folders are matched to a model's classes by NAME: folder "cat" is scored against the model's output
for its class "cat", wherever "cat" sits in the model's label order (ImageFolder numbers folders in sorted
order, which need not be the order the model was trained with). Not every class needs a folder. Each problem
with the folder is one line, before any model runs: DIR missing or unreadable, no class folder, a class folder
that cannot be read or holds no usable image, a folder named like no class of the model.

Every image file is decoded once before any model runs, so that all models are scored on the same images.
One that cannot be used is left out and listed with its reason (the report's "Images skipped"): not a regular
file (a FIFO, socket or device named like an image: reading one would block or never end), unreadable, not
decodable by PIL (any of its errors), more pixels than PIL's decompression-bomb limit (its warning counts as
the error), more than MAX_PIXELS, or sides more than MAX_ASPECT:1 apart (resizing the shorter side to an
image_size up to MAX_IMAGE_SIZE would make it larger than MAX_PIXELS).

Transform: the train workload's evaluation transform (workloads/train/evaluation.py, "transformed as in
evaluation"), after converting to RGB (L and P are expanded, RGBA's alpha channel is dropped, not
composited): the shorter side resized to image_size (bilinear, PIL's antialiasing), the centre
image_size x image_size cropped (a square image is only resized), ToTensor (0-1), Normalize with the mean and
std the model was trained with.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Set, Tuple

from torchvision.datasets.folder import IMG_EXTENSIONS

from hpml.contract.files import NotReadable, one_line, open_regular
from hpml.contract.limits import MAX_IMAGE_SIZE, MIN_IMAGE_SIZE  # noqa: F401 - the image sizes evaluation resizes to

MAX_PIXELS = 8192 * 8192  # 67 Mpx: a large camera photo fits; a 14000 x 14000 image does not
MAX_ASPECT = MAX_PIXELS // MAX_IMAGE_SIZE ** 2  # 64: the resized image stays within MAX_PIXELS


class ImageFolderError(Exception):
    """The image folder cannot be scored as it is; the command prints this one line."""


@dataclass
class ClassFolders:
    root: Path
    samples: Dict[str, List[Path]]  # class folder name -> its usable images, folders sorted by name
    skipped: List[Tuple[Path, str]] = field(default_factory=list)  # what was left out, and why

    @property
    def counts(self) -> Dict[str, int]:
        return {name: len(paths) for name, paths in self.samples.items()}

    @property
    def images(self) -> int:
        return sum(self.counts.values())


def _size_problem(width: int, height: int) -> str | None:
    if min(width, height) < 1:
        return f"{width} x {height} pixels: an empty image"
    if width * height > MAX_PIXELS:
        return f"{width} x {height} pixels: larger than any sensible input (at most {MAX_PIXELS})"
    if max(width, height) > MAX_ASPECT * min(width, height):
        return (f"{width} x {height} pixels: sides more than {MAX_ASPECT}:1 apart (resized to a model's image_size, "
                f"it could exceed {MAX_PIXELS} pixels)")
    return None


def _open_rgb(path):
    """The image at `path` decoded and converted to RGB; NotReadable with the reason when it cannot be, safely."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with open_regular(path) as f:
            try:
                image = Image.open(f)
                problem = _size_problem(*image.size)
                if problem:
                    raise NotReadable(problem)
                return image.convert("RGB")
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
                raise NotReadable(f"refused as a possible decompression bomb ({one_line(error)})") from None
            except NotReadable:
                raise
            except Image.UnidentifiedImageError:  # its message names the file object, not the file
                raise NotReadable("not a readable image (no format PIL reads)") from None
            except Exception as error:  # noqa: BLE001 - PIL's decoders raise many types; each means the same
                raise NotReadable(f"not a readable image ({one_line(error)})") from None


def image_problem(path: Path) -> str | None:
    """Why the image at `path` cannot be scored, or None."""
    try:
        _open_rgb(path)
    except NotReadable as error:
        return str(error)
    return None


def _identity(path: Path) -> Tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # links followed, as ImageFolder does
    except OSError:  # a loop of links: not a folder; named like an image, it is listed with the reason
        return False


def _list_images(folder: Path, seen: Set[Tuple[int, int]], skipped: List[Tuple[Path, str]]) -> List[Path]:
    """The image files under `folder` (extension matched), sorted; sub-folders that cannot be read, and links
    to a folder already listed (the image folder, a class folder, ...), go to `skipped`. OSError when `folder`
    itself cannot be read."""
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda entry: entry.name)
    found = []
    for entry in entries:
        path = Path(entry.path)
        if _is_dir(entry):
            try:
                if _identity(path) in seen:
                    skipped.append((path, "a link to a folder listed already (the image folder, a class folder "
                                          "or one under it)"))
                    continue
                seen.add(_identity(path))
                found += _list_images(path, seen, skipped)
            except OSError as error:
                skipped.append((path, f"a folder that cannot be read ({one_line(error)})"))
        elif entry.name.lower().endswith(IMG_EXTENSIONS):
            found.append(path)
    return found


def _class_images(folder: Path, seen: Set[Tuple[int, int]], skipped: List[Tuple[Path, str]]) -> List[Path]:
    """The usable images of one class folder; ImageFolderError when there is none or it cannot be read."""
    left_out: List[Tuple[Path, str]] = []
    try:
        files = _list_images(folder, seen, left_out)
    except OSError as error:
        raise ImageFolderError(f"--images {folder}: this class folder cannot be read ({one_line(error)})") \
            from None
    usable = []
    for path in files:
        problem = image_problem(path)
        if problem:
            left_out.append((path, problem))
        else:
            usable.append(path)
    skipped += left_out
    if not usable:
        if left_out:
            raise ImageFolderError(f"--images {folder}: no usable image in this class folder ({len(left_out)} left "
                                   f"out; first: {left_out[0][0]}: {left_out[0][1]})")
        raise ImageFolderError(f"--images {folder}: no images in this class folder (expected "
                               f"{', '.join(IMG_EXTENSIONS)} files)")
    return usable


def class_folders(root: Path) -> ClassFolders:
    """The class folders and their usable images; ImageFolderError for a folder that cannot be scored."""
    if not root.is_dir():
        raise ImageFolderError(f"--images {root}: not a directory")
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())  # hidden ones too: ImageFolder takes them
    except OSError as error:
        raise ImageFolderError(f"--images {root}: cannot be read ({one_line(error)})") from None
    if not folders:
        raise ImageFolderError(f"--images {root}: no class folders; put each class's images in {root}/<class>/")
    skipped: List[Tuple[Path, str]] = []
    seen = {_identity(path) for path in [root] + folders}  # a link back to one is not walked again
    samples = {folder.name: _class_images(folder, seen, skipped) for folder in folders}
    return ClassFolders(root, samples, skipped)


def check_names(folders: ClassFolders, classes: Sequence[str], whose: str) -> None:
    """Every folder must name one of the model's classes."""
    unknown = [name for name in folders.counts if name not in classes]
    if unknown:
        shown = ", ".join(classes[:12]) + (", ..." if len(classes) > 12 else "")
        raise ImageFolderError(f"--images {folders.root}: folder {unknown[0]!r} is not a class of {whose} "
                               f"(its classes: {shown}); rename or remove it")


def _load_rgb(path: Path):
    try:
        return _open_rgb(path)
    except NotReadable as error:  # it was usable when the folder was listed: changed since
        raise ImageFolderError(f"{path}: {error} (changed while evaluate ran)") from None


class _Images:
    """(transformed image, the model's class index) pairs: a map-style dataset for torch's DataLoader."""

    def __init__(self, samples: List[Tuple[Path, int]], transform):
        self.samples, self.transform = samples, transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        return self.transform(_load_rgb(path)), target


def dataset(folders: ClassFolders, classes: List[str], image_size: int, mean: Sequence[float],
            std: Sequence[float], channels: int = 3, padding: int = 0):
    """The folder's usable images as (image tensor, the model's class index) pairs: grayscale for a 1-channel
    model (PIL's L of the RGB image: a gray image comes back unchanged), zero-padded as the model was trained."""
    import torchvision.transforms as T

    gray = [T.Grayscale(1)] if channels == 1 else []
    pad = [T.Pad(padding, fill=0)] if padding else []
    transform = T.Compose([T.Resize(image_size), T.CenterCrop(image_size), *gray, *pad, T.ToTensor(),
                           T.Normalize(list(mean), list(std))])
    samples = [(path, classes.index(name)) for name, paths in folders.samples.items() for path in paths]
    return _Images(samples, transform)
