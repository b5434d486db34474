"""`hpml data fashion-mnist|mnist --root DIR [--from FOLDER] [--force]`: the four official .gz files of FOLDER,
checked, unpacked where torchvision's datasets.FashionMNIST(root) / datasets.MNIST(root) read them.

Every check comes before anything is written: FOLDER a folder, each of the four files there, a regular file
(a FIFO would block the read; a link to a regular file is followed, as torchvision would), a complete gzip
stream whose idx header and body are the data set's (counts, 28 x 28, labels 0-9), and its MD5 the published
one. The MD5s are torchvision's own (`datasets.FashionMNIST.resources`, `datasets.MNIST.resources`), read from
the installed torchvision, not copied here.

Debian's dataset-fashion-mnist ships the official deflate streams under a rewritten gzip header (the file name
dropped, the time stamp set to the package's build: its packaging normalises .gz files), so their MD5s differ from
the published ones while every byte of the images is the official one. For such a file the official header is put
back (the name, and the time stamp the published file carries: OFFICIAL_GZIP_MTIME) and the published MD5 checked
on the result: a changed image or label byte still fails it. docs/decisions.md says how the stamps were found. Then ROOT/<FashionMNIST|MNIST>/raw/ is refused if it already holds
files (unless --force) or cannot be made, and each file is written unpacked (torchvision reads the unpacked files;
it unpacks its own downloads the same way) through a temporary name, so no half file is left under its name.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from hpml.contract.files import NotReadable, open_regular
from hpml.contract.idx_data import IDX_FILES, IdxDataSet, IdxProblem, check_stream, read_header
from hpml.dataprep.digits_cifar import DataError


def published_md5s(data: IdxDataSet) -> Dict[str, str]:
    """file name (.gz) -> MD5, from torchvision's list for this data set (what its download checks)."""
    import torchvision.datasets

    return dict(getattr(torchvision.datasets, data.folder).resources)


# The modification times in the gzip headers of the published Fashion-MNIST files (zalandoresearch/fashion-mnist,
# data/fashion/*.gz: 2017-08-31 10:43:58 and 10:44:19 UTC), by split prefix; MNIST's are not known here
OFFICIAL_GZIP_MTIME = {"FashionMNIST": {"train": 0x59A7E9DE, "t10k": 0x59A7E9F3}}
GZIP_FNAME = 0x08  # the header flag: an original file name follows the 10 fixed bytes


def md5_of(path: Path, header: bytes = b"") -> str:
    """The file's MD5, or with `header` in place of its 10 fixed header bytes (a file with no name field)."""
    digest = hashlib.md5(header)
    with open_regular(path) as stream:
        if header:
            stream.read(10)
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def official_header(gz: Path, data: IdxDataSet) -> bytes:
    """The published file's gzip header for a file whose header lost its name field (b"" when it has one, or when
    the published stamps of this data set are not known)."""
    with open_regular(gz) as stream:
        fixed = stream.read(10)
    stamps = OFFICIAL_GZIP_MTIME.get(data.folder)
    if len(fixed) < 10 or fixed[3] & GZIP_FNAME or not stamps:
        return b""
    stamp = stamps[gz.name.split("-")[0]]
    return bytes([0x1F, 0x8B, 8, GZIP_FNAME]) + stamp.to_bytes(4, "little") + fixed[8:10] + gz.name[:-3].encode() + b"\0"


def matches_published(gz: Path, data: IdxDataSet, published: str) -> Tuple[bool, str]:
    """Whether the file is the published one (as it is, or under a normalised header); and its own MD5."""
    digest = md5_of(gz)
    if digest == published:
        return True, digest
    header = official_header(gz, data)
    return bool(header) and md5_of(gz, header) == published, digest


def check_source(source: Path, data: IdxDataSet) -> Dict[str, Path]:
    """The four .gz files of `source`, each checked (see the module's docstring); DataError names the first bad one."""
    if not source.is_dir():
        raise DataError(f"--from {source}: {'not a folder' if source.exists() else 'no such folder'}; give the "
                        f"folder that holds {data.folder}'s four .gz files")
    md5s = published_md5s(data)
    found: Dict[str, Path] = {}
    for name in IDX_FILES:
        gz = source / f"{name}.gz"
        if not gz.exists() and not gz.is_symlink():
            raise DataError(f"--from {source}: {gz.name} is missing (the official files: "
                            f"{', '.join(n + '.gz' for n in IDX_FILES)})")
        if not gz.exists():
            raise DataError(f"--from {source}: {gz.name} is a broken link (to {os.readlink(gz)})")
        try:
            with open_regular(gz) as raw, gzip.GzipFile(fileobj=raw) as stream:
                check_stream(stream, name)
            official, digest = matches_published(gz, data, md5s[gz.name])
        except NotReadable as error:
            raise DataError(f"--from {source}: {gz.name}: {error}") from None
        except IdxProblem as problem:
            raise DataError(f"--from {source}: {gz.name}: {problem}") from None
        except EOFError:
            raise DataError(f"--from {source}: {gz.name}: truncated (the gzip stream ends early)") from None
        except (gzip.BadGzipFile, zlib.error) as error:
            raise DataError(f"--from {source}: {gz.name}: not a gzip file ({error})") from None
        except OSError as error:
            raise DataError(f"--from {source}: {gz.name}: cannot be read ({error.strerror or error})") from None
        if not official:
            raise DataError(f"--from {source}: {gz.name}: MD5 {digest}, not the published {md5s[gz.name]} "
                            f"(torchvision.datasets.{data.folder}.resources, also under the official gzip header): "
                            "not the official file")
        found[name] = gz
    return found


def check_target(root: Path, data: IdxDataSet, force: bool) -> Path:
    """ROOT/<folder>/raw, refused (before any write) if it holds files and not --force, or if it cannot be made."""
    target = root / data.raw
    for folder in (root, root / data.folder, target):
        if folder.exists() and not folder.is_dir():
            raise DataError(f"--root {root}: {folder} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise DataError(f"--root {root}: {target} is not empty; choose another root or pass --force to overwrite "
                        "the files this command writes")
    existing = next(folder for folder in (target, *target.parents) if folder.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataError(f"--root {root}: {existing} cannot be written (no write permission)")
    return target


def write_unpacked(files: Dict[str, Path], target: Path) -> List[Path]:
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, gz in files.items():
        final = target / name
        partial = final.with_name(name + ".tmp")
        with gzip.open(gz, "rb") as stream, open(partial, "wb") as out:
            for block in iter(lambda: stream.read(1 << 20), b""):
                out.write(block)
        partial.replace(final)
        written.append(final)
    return written


# The out-of-distribution copy (--ood): the first OOD_PER_CLASS test images of each class, each rotated
# OOD_ROTATION_DEG degrees counter-clockwise about its centre (bilinear, black fill: the background). No training
# augmentation rotates, so the copy is the test set under a shift the model never saw; the same images unrotated
# are in the test split, which separates the shift's cost from the images' difficulty.
OOD_PER_CLASS = 100
OOD_ROTATION_DEG = 20.0


def check_ood_target(ood: Path, root: Path, force: bool) -> None:
    if ood.resolve() == root.resolve() or root.resolve() in ood.resolve().parents:
        raise DataError(f"--ood {ood}: a folder apart from --root {root} (its class folders would mix with the data)")
    if ood.exists() and (not ood.is_dir() or (any(ood.iterdir()) and not force)):
        raise DataError(f"--ood {ood}: {'not a folder' if not ood.is_dir() else 'not empty'}; choose another folder"
                        + ("" if not ood.is_dir() else " or pass --force"))


def write_ood(root: Path, data: IdxDataSet, ood: Path) -> int:
    """The rotated copy as 28x28 grayscale PNGs in OOD/<class>/ (class names as folder names); returns the count."""
    from PIL import Image

    from hpml.contract.saved_model import folder_name

    test_images, test_labels = read_idx(root / data.raw / "t10k-images-idx3-ubyte"), \
        read_idx(root / data.raw / "t10k-labels-idx1-ubyte")
    side = IDX_FILES["t10k-images-idx3-ubyte"][1]
    taken = {label: 0 for label in range(len(data.classes))}
    for index, label in enumerate(test_labels):
        if taken[label] == OOD_PER_CLASS:
            continue
        taken[label] += 1
        image = Image.frombytes("L", (side, side), test_images[index * side * side:(index + 1) * side * side])
        folder = ood / folder_name(data.classes[label])
        folder.mkdir(parents=True, exist_ok=True)
        image.rotate(OOD_ROTATION_DEG, resample=Image.Resampling.BILINEAR, fillcolor=0).save(
            folder / f"t10k_{index:05d}.png")
    return sum(taken.values())


def read_idx(path: Path) -> bytes:
    """An unpacked idx file's values (its header skipped; the file was checked when it was written)."""
    with open(path, "rb") as stream:
        read_header(stream, path.name)
        return stream.read()


def lay_out(data: IdxDataSet, root: Path, source: Path, force: bool, ood: Optional[Path] = None) -> List[str]:
    """Checks everything, then writes; returns the lines to print."""
    files = check_source(source, data)
    target = check_target(root, data, force)
    if ood is not None:
        check_ood_target(ood, root, force)
    try:
        write_unpacked(files, target)
        count = write_ood(root, data, ood) if ood is not None else 0
    except OSError as error:  # a full disk: one line, not a traceback
        raise DataError(f"cannot write {error.filename or target}: {error.strerror or error}") from None
    counts = ", ".join(f"{name} ({' x '.join(map(str, shape))})" for name, shape in IDX_FILES.items())
    lines = [f"checked {source}: 4 files, MD5s as published (torchvision.datasets.{data.folder}.resources)",
             f"wrote {target}: {counts}; torchvision.datasets.{data.folder}(root={str(root)!r}) reads them "
             f"(workload.dataset={data.key} workload.data_root={root})"]
    if ood is not None:
        lines.append(f"wrote {ood}: {count} PNG images (the first {OOD_PER_CLASS} test images of each class) in "
                     f"<class>/ folders, rotated {OOD_ROTATION_DEG:g} degrees counter-clockwise (bilinear, black "
                     "fill): an out-of-distribution copy for `hpml evaluate SWEEP --images DIR`")
    return lines
