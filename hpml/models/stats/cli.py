"""`hpml model-stats MODEL | --inception | --list`: parameters, activations, MACs and FLOPs per layer.

    hpml model-stats vgg19 --no-bias                         # Markdown: per layer, totals, receptive fields
    hpml model-stats resnet50 --format csv --out r50.csv     # exact per-layer counts
    hpml model-stats alexnet --figure alexnet.png            # + bar chart of FLOPs and parameters per layer
    hpml model-stats --inception                             # GoogLeNet inception (3a): naive vs 1x1 reductions

Counts on the meta device (no weights are made), so any model takes about a second on a CPU. Bad input
(an unknown model, an input that is not CxHxW, a dtype or format not offered, an option that does not go
with --inception or --list, an argument longer than a path can be, an --out or --figure that cannot be written:
a missing or read-only folder, a name too long, a FIFO or other non-file) is one `hpml: error:` line, exit 2,
and nothing is written. Memory does not grow with the input or batch (nothing is allocated on meta).
docs/studies/model-analysis.md says what is counted.
"""

from __future__ import annotations

import argparse
import difflib
import re
import stat
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from hpml.contract.folders import write_problem

DTYPES = ("float32", "bfloat16", "float16", "float64")
DEFAULT_INPUT = "3x224x224"
MAX_SIZE = 2 ** 31 - 1  # any input dimension, batch or class count: torch's sizes are int64, products too
INCEPTION_INPUT = "256x32x32"
MAX_ARGUMENT = 4096  # characters in one argument: Linux's PATH_MAX; no model name, shape or path is longer


class ModelStatsError(Exception):
    """Input the command cannot use; main prints it as one `hpml: error:` line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block; a long value shortened
        message = re.sub(r"'([^']{60})([^']+)'", lambda m: f"'{m[1]}...' ({len(m[1] + m[2]):,} characters)",
                         message)
        raise ModelStatsError(f"{message} (see hpml model-stats --help)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hpml model-stats", description="Parameters, activations, MACs and FLOPs per layer of a "
                "classification model (torchvision's or hpml's), counted on the meta device.")
    p.add_argument("model", nargs="?", help="a torchvision classification model or one of hpml's "
                                             "(hpml model-stats --list)")
    p.add_argument("--input", default=None, help=f"CxHxW without the batch (default {DEFAULT_INPUT}; "
                                                 f"{INCEPTION_INPUT} with --inception)")
    p.add_argument("--batch", type=int, default=None, help="batch size (default 1)")
    p.add_argument("--no-bias", action="store_true", help="leave biases out of the parameters (the study's tables)")
    p.add_argument("--dtype", choices=DTYPES, default=None, help="element type for the byte counts (default float32)")
    p.add_argument("--classes", type=int, default=None, help="classes of the last layer (default 1000)")
    p.add_argument("--format", choices=("md", "csv", "tex"), default="md", help="output format (default md)")
    p.add_argument("--out", type=Path, default=None, help="write the output to this file instead of stdout")
    p.add_argument("--figure", type=Path, default=None, help="also draw FLOPs and parameters per layer (PNG)")
    p.add_argument("--inception", action="store_true",
                   help="GoogLeNet inception (3a), naive vs with 1x1 reductions, instead of a model")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    return p


def model_names() -> List[Tuple[str, str]]:
    """(name, where it comes from) of every model model-stats takes."""
    import torchvision

    from hpml.models.names import HPML_MODELS

    return ([(name, "hpml") for name in sorted(HPML_MODELS)]
            + [(name, "torchvision") for name in torchvision.models.list_models(module=torchvision.models)])


def check_model(name: Optional[str]) -> str:
    if not name:
        raise ModelStatsError("give a MODEL (hpml model-stats --list lists them) or --inception")
    names = [known for known, _ in model_names()]
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise ModelStatsError(f"unknown model {_shown(name)!r}: {hint}give a torchvision classification model or one of "
                              f"hpml's (hpml_cnn); hpml model-stats --list lists all {len(names)}")
    return name


def parse_input(text: str) -> Tuple[int, int, int]:
    parts = text.lower().split("x")
    # the length first: int() refuses strings of over 4,300 digits with a ValueError of its own
    if len(parts) != 3 or not all(part.isascii() and part.isdigit() and len(part.lstrip("0")) <= len(str(MAX_SIZE))
                                  and 0 < int(part) <= MAX_SIZE for part in parts):
        raise ModelStatsError(f"--input must be CxHxW with positive integers up to {MAX_SIZE}, e.g. {DEFAULT_INPUT}; "
                              f"got {_shown(text)!r}")
    return tuple(int(part) for part in parts)


def check_output(option: str, path: Optional[Path], suffix: Optional[str] = None) -> None:
    """A file that can be written: its folder exists and may be written in, it is a regular file, a character
    device (/dev/null, a terminal) or new, and it has `suffix` if given (matplotlib picks the format from the
    suffix). A FIFO is refused: writing to one that no process reads waits forever. Checked before anything is
    counted or written; nothing is opened or created here."""
    if path is None:
        return
    try:
        if str(path) == "" or path.is_dir():
            raise ModelStatsError(f"{option} {str(path)!r}: give a file name, not a folder")
        if not path.parent.is_dir():
            raise ModelStatsError(f"{option} {path}: folder {path.parent} does not exist"
                                  + (" (it is a file)" if path.parent.exists() else ""))
        if suffix is not None and path.suffix.lower() != suffix:
            raise ModelStatsError(f"{option} {path}: the file name must end in {suffix}")
        if path.exists():
            mode = path.stat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
                kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "no regular file"
                raise ModelStatsError(f"{option} {path}: is {kind}; give a file (without --out the output goes to "
                                      "stdout, which can be piped)")
            why = write_problem(path)
            if why is not None:
                raise ModelStatsError(f"{option} {path}: the file may not be written ({why[2:] or 'permission denied'})")
        else:
            why = write_problem(path.parent)
            if why is not None:
                raise ModelStatsError(f"{option} {path}: folder {path.parent} may not be written in{why}")
    except OSError as error:  # a name too long (ENAMETOOLONG), a loop of links, ...
        raise ModelStatsError(f"{option} {_shown(str(path))}: {error.strerror or error}") from None


def _shown(text: str, limit: int = 60) -> str:
    """`text` as an error message shows it: at most `limit` characters, then how many more."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _first_line(error: BaseException) -> str:
    """The first line of an error's message (torch's run to many), or its type where it has none."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def check_arguments(argv: Sequence[str]) -> None:
    """Refused before parsing: an argument longer than any path can be."""
    for arg in argv:
        if len(arg) > MAX_ARGUMENT:
            raise ModelStatsError(f"an argument of {len(arg):,} characters ({arg[:20]!r}...): at most "
                                  f"{MAX_ARGUMENT} (a model name, CxHxW, a path)")


def report(args: argparse.Namespace) -> Tuple[str, list, object]:
    """(heading, sections, stats or None), after every check; nothing written yet."""
    check_output("--out", args.out)
    check_output("--figure", args.figure, ".png")
    if args.out is not None and args.figure is not None and args.out.resolve() == args.figure.resolve():
        raise ModelStatsError(f"--out and --figure are the same file ({args.out}): give two names")
    from hpml.models.stats import tables  # imports torch: after the checks that need none (issue 41)

    if args.inception:
        given = [option for option, value in (("MODEL", args.model), ("--batch", args.batch), ("--dtype", args.dtype),
                                              ("--classes", args.classes), ("--figure", args.figure),
                                              ("--no-bias", args.no_bias or None)) if value is not None]
        if given:
            raise ModelStatsError(f"--inception takes --input, --format and --out only, not {', '.join(given)}")
        from hpml.models.stats.inception import compare

        shape = parse_input(args.input or INCEPTION_INPUT)
        try:
            comparison = compare(shape)
        except (RuntimeError, TypeError, ValueError) as error:  # sizes past torch's int64 products
            raise ModelStatsError(f"--inception cannot count a {args.input} input: {_first_line(error)}") from None
        return "GoogLeNet's inception module", tables.inception_sections(comparison), None
    name = check_model(args.model)
    input_shape = parse_input(args.input or DEFAULT_INPUT)
    for option, value in (("--batch", args.batch), ("--classes", args.classes)):
        if value is not None and not 1 <= value <= MAX_SIZE:
            raise ModelStatsError(f"{option} must be an integer from 1 to {MAX_SIZE}, got {value}")
    import torch

    from hpml.models.stats.counting import model_stats
    from hpml.models.stats.layers import meta_model

    classes = args.classes or 1000
    try:
        model = meta_model(name, classes)
    # RegNet's constructor runs on the CPU (its widths are tensor values): a last layer of billions of weights
    # is allocated there before it moves to meta, and the allocation fails.
    except (RuntimeError, MemoryError) as error:
        raise ModelStatsError(f"{name} cannot be built with {classes} classes: {_first_line(error)}") from None
    try:
        stats = model_stats(name, input_shape, args.batch or 1, getattr(torch, args.dtype or "float32"),
                            bias=not args.no_bias, num_classes=classes, model=model)
    # The model cannot take this input: too small (RuntimeError), a fixed size (ViT asserts it), too large for
    # torch's int64 sizes (TypeError, ValueError).
    except (RuntimeError, AssertionError, TypeError, ValueError) as error:
        raise ModelStatsError(f"{name} cannot run on a {args.input or DEFAULT_INPUT} input: "
                              f"{_first_line(error)}") from None
    return f"hpml model-stats {tables.title(stats)}", tables.model_sections(stats), stats


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        check_arguments(argv)
        args = parser().parse_args(argv)
        if args.list and len(argv) > 1:
            raise ModelStatsError(f"--list takes no other argument, got {_shown(' '.join(argv))!r}")
        if args.list:
            print("\n".join(f"{name}\t{source}" for name, source in model_names()))
            return 0
        heading, sections, stats = report(args)
    except ModelStatsError as error:
        print(f"hpml: error: {error}", file=sys.stderr)
        return 2
    from hpml.models.stats.tables import render

    text = render(heading, sections, args.format)
    if args.out is None:
        print(text, end="")
    else:
        try:
            args.out.write_text(text)
        except OSError as error:  # e.g. no permission: checked folders can still refuse a write
            print(f"hpml: error: --out {args.out}: {error.strerror or error}", file=sys.stderr)
            return 2
        print(f"wrote {args.out}")
    if args.figure is not None:
        from hpml.models.stats.figure import draw_layers

        print(f"wrote {args.figure}" if draw_layers(stats, args.figure) else "no layer with FLOPs or parameters: "
              "no figure written")
    return 0
