"""`hpml evaluate --images DIR`: the image folder's bad input, on the study of tests/evaluate_study.py.

A folder named like no class of the model, or with no usable image, is one line; an image that is no regular file,
cannot be read or decoded, or is far larger than an input is left out with its reason (a read that would block is
bounded by no_hang), and the others are scored.
"""

import os
import shutil
import stat
import tempfile
from pathlib import Path

from PIL import Image

from hpml.evaluation.images import ImageFolderError, class_folders
from hpml.launcher.cli import main as hpml
from tests.evaluate_study import CLASSES, evaluate_error, gray, left_out, no_hang
from tests.test_output_folders import as_an_unprivileged_user


def test_a_folder_named_like_no_class_is_one_line(evaluate_study, capsys):
    sweep, images = evaluate_study
    gray("RGB", (32, 32), 128).save(images / "cat.png")  # a loose file is not a class folder: ignored
    (images / "cat").mkdir()
    gray("RGB", (32, 32), 128).save(images / "cat" / "c.png")
    assert "folder 'cat' is not a class of the model of points/0 (its classes: dark, bright)" in \
        evaluate_error(capsys, sweep, "--images", images)


def test_an_empty_class_folder_or_no_class_folder_is_one_line(evaluate_study, tmp_path, capsys):
    sweep, images = evaluate_study
    empty = tmp_path / "empty"
    empty.mkdir()
    gray("RGB", (8, 8), 0).save(empty / "loose.png")
    assert "no class folders" in evaluate_error(capsys, sweep, "--images", empty)
    (empty / "dark").mkdir()
    (empty / "dark" / "readme.txt").write_text("no image here")
    assert f"--images {empty / 'dark'}: no images in this class folder" in \
        evaluate_error(capsys, sweep, "--images", empty)
    assert "not a directory" in evaluate_error(capsys, sweep, "--images", tmp_path / "nowhere")


def test_images_that_cannot_be_used_safely_are_skipped_with_their_reason(evaluate_study, capsys):
    """By class: anything named like an image that is no regular file, cannot be read or decoded, or is far
    larger than an input; the 9 good images are still scored, and every model on the same ones."""
    sweep, images = evaluate_study
    dark = images / "dark"
    (dark / "broken.png").write_bytes(b"\x89PNG but not really")
    (dark / "empty.jpg").write_bytes(b"")
    gray("RGB", (64, 64), 0).save(dark / "cut.png")
    (dark / "cut.png").write_bytes((dark / "cut.png").read_bytes()[:60])
    os.mkfifo(dark / "fifo.png")  # opened, it would wait for a writer forever
    os.mknod(dark / "socket.png", stat.S_IFSOCK | 0o600)
    os.symlink("/dev/zero", dark / "zero.png")  # a device: read, it never ends
    os.symlink("loop.png", dark / "loop.png")
    Image.new("1", (14000, 14000)).save(dark / "bomb.png")  # over twice PIL's MAX_IMAGE_PIXELS: its error
    Image.new("1", (10000, 10000)).save(dark / "warned.png")  # over PIL's MAX_IMAGE_PIXELS: its warning
    Image.new("1", (8200, 8200)).save(dark / "huge.png")  # under PIL's limits, over evaluate's 8192 x 8192
    gray("L", (650, 10), 0).save(dark / "thin.png")  # 65:1: resized to 1024 high, 66560 x 1024
    (dark / "nested.png").mkdir()  # a folder named like an image is a folder: its images are scored
    shutil.move(dark / "d1.jpeg", dark / "nested.png" / "d1.jpeg")
    os.symlink("..", dark / "up")  # the image folder again: not walked (every class would be counted twice)
    with no_hang():
        assert hpml(["evaluate", str(sweep), "--images", str(images)]) == 0
    out = capsys.readouterr().out
    skipped = {Path(path).name: why for path, why in left_out(out, "Images skipped").items()}
    assert skipped == {
        "broken.png": "not a readable image (no format PIL reads)",
        "empty.jpg": "not a readable image (no format PIL reads)",
        "cut.png": "not a readable image (OSError: image file is truncated)",
        "fifo.png": "not a regular file (a FIFO (named pipe))",
        "socket.png": "not a regular file (a socket)",
        "zero.png": "not a regular file (a character device)",
        "loop.png": "cannot be read (OSError: Too many levels of symbolic links)",
        "bomb.png": "refused as a possible decompression bomb (DecompressionBombError: Image size (196000000 "
                    "pixels) exceeds limit of 178956970 pixels, could be decompression bomb DOS attack.)",
        "warned.png": "refused as a possible decompression bomb (DecompressionBombWarning: Image size (100000000 "
                      "pixels) exceeds limit of 89478485 pixels, could be decompression bomb DOS attack.)",
        "huge.png": "8200 x 8200 pixels: larger than any sensible input (at most 67108864)",
        "thin.png": "650 x 10 pixels: sides more than 64:1 apart (resized to a model's image_size, it could exceed "
                    "67108864 pixels)",
        "up": "a link to a folder listed already (the image folder, a class folder or one under it)"}
    assert "9 in 2 class folders (bright: 5, dark: 4) (12 left out: Images skipped, below)" in out
    assert "| points/0 | NVIDIA H100 80GB HBM3 | resnet18 (CIFAR stem) | 9 | 7 | 77.78 |" in out
    assert "| points/2 | NVIDIA H200 | resnet18 (CIFAR stem) | 9 | 6 | 66.67 |" in out


def test_a_class_folder_with_no_usable_image_is_one_line(evaluate_study, capsys):
    sweep, images = evaluate_study
    shutil.rmtree(images / "dark")
    (images / "dark").mkdir()
    os.mkfifo(images / "dark" / "x.png")
    (images / "dark" / "y.png").write_text("not a png")
    with no_hang():
        line = evaluate_error(capsys, sweep, "--images", images)
    assert line == (f"hpml: error: --images {images / 'dark'}: no usable image in this class folder (2 left out; "
                    f"first: {images / 'dark' / 'x.png'}: not a regular file (a FIFO (named pipe)))")


def test_folders_and_images_that_cannot_be_read_say_so():
    """Not "no images": a class folder (or the image folder) the user may not list, an image they may not
    read (left out). As nobody when the tests run as root, whom permissions do not stop."""
    base = Path(tempfile.mkdtemp(prefix="hpml-evaluate-"))  # not under pytest's 0700 folder: nobody must reach it
    try:
        base.chmod(0o755)
        for name in ("locked_class", "locked_image", "locked_root"):
            for label in CLASSES:
                (base / name / label).mkdir(parents=True)
                gray("RGB", (8, 8), 0).save(base / name / label / "a.png")
                gray("RGB", (8, 8), 0).save(base / name / label / "b.png")
            (base / name).chmod(0o755)
        (base / "locked_class" / "dark").chmod(0o000)
        (base / "locked_image" / "dark" / "a.png").chmod(0o000)
        (base / "locked_root").chmod(0o311)  # it can be passed through, not listed

        def read():
            found = {}
            for name in ("locked_class", "locked_root"):
                try:
                    class_folders(base / name)
                except ImageFolderError as error:
                    found[name] = str(error)
            folders = class_folders(base / "locked_image")
            found["locked_image"] = [folders.counts, [(str(path), why) for path, why in folders.skipped]]
            return found

        assert as_an_unprivileged_user(read) == {
            "locked_class": f"--images {base / 'locked_class' / 'dark'}: this class folder cannot be read "
                            "(PermissionError: Permission denied)",
            "locked_root": f"--images {base / 'locked_root'}: cannot be read (PermissionError: Permission denied)",
            "locked_image": [{"bright": 2, "dark": 1}, [[str(base / "locked_image" / "dark" / "a.png"),
                                                        "cannot be read (PermissionError: Permission denied)"]]]}
    finally:
        for path in (base / "locked_class" / "dark", base / "locked_image" / "dark" / "a.png", base / "locked_root"):
            path.chmod(0o700)
        shutil.rmtree(base)
