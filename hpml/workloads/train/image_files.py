"""An image folder's files as the workers read them: torchvision's loader, with one line naming a file that fails.

The launch checks every image file's header (or a seeded sample of a large folder's: conf/data_on_disk.py); a file
changed since, one outside the sample, or one whose pixel data is cut after an intact header still fails here,
where PIL's own error names no file ("image file is truncated") and a DataLoader worker process wraps it in a
40-line traceback. `load_image` is the loader given to every ImageFolder the workloads build (train's host and
device paths, the dataloader study through them): it raises UnreadableImage, whose message is one line naming the
file, also when a DataLoader worker process raised it (torch re-raises it in the main process as
UnreadableImage("Caught UnreadableImage in DataLoader worker process N. Original Traceback ..."), and the
constructor keeps only the original line, as workloads.common.worker.one_line_reason does for any exception). The worker's `reporting` then records it as the point's failure reason.
"""

from __future__ import annotations

from hpml.workloads.common.worker import original_message


class UnreadableImage(ValueError):
    """A file of the image folder cannot be decoded; str() is one line naming it, also when re-raised out of a
    DataLoader worker process (torchrun's error file and the launcher's line read str())."""

    def __init__(self, message: str):
        super().__init__(original_message(message, type(self).__name__))


def load_image(path: str):
    """torchvision's default loader (PIL, converted to RGB); UnreadableImage naming `path` when it fails."""
    from PIL import Image

    try:
        with open(path, "rb") as f:
            return Image.open(f).convert("RGB")
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - PIL's decoders raise many types; each means the same here
        text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)  # no path twice
        first = text.strip().splitlines()[0] if text.strip() else ""
        raise UnreadableImage(f"{path}: cannot be decoded as an image ({type(error).__name__}"
                              f"{': ' + first if first else ''}); replace or remove it (the launch checks "
                              "headers only, of a sample in a large folder)") from None
