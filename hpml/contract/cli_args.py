"""What every verb's argument parser shares: bad arguments are one `hpml: error:` line and exit 2 (argparse's
usage block is for --help), and a folder argument may not be an empty path (Path('') is the current directory,
where the command would otherwise read or write)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"hpml: error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def folder_argument(text: str) -> Path:
    """argparse type for a folder option or argument: an empty or blank path is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: a folder path (give . for the current "
                                         "directory)")
    return Path(text)
