"""The `hpml` command: one table of verbs (VERBS), each run by a module of its own package.

Adding a verb is one entry in VERBS: its usage lines and a function that imports its module only when the
verb runs (so `hpml status` does not pay for torch, and the launcher imports no workload: a verb's code lives
beside its package, e.g. models/stats/cli.py for model-stats). USAGE is built from the table, in its order.

Every verb ends with one of EXIT_STATUSES (listed once, in USAGE): 0 it did what was asked; 1 it ran and its check
failed (a point that did not complete, a regression, a gate that could not decide under --undecided fail); 2 bad
input, one `hpml: error:` line, found before any work is done or anything is written: the folders and files a verb
writes are checked first by one function (contract.folders), so a folder under a file is a 2, never a traceback
after the work; 130 (128 + the signal) interrupted. tests/test_exit_statuses.py runs each verb against them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, NoReturn, Sequence

from hpml.contract.cli_args import OneLineParser
from hpml.contract.collector import cycle_collection_paused


@dataclass(frozen=True)
class Verb:
    usage: str  # its lines in `hpml --help`, arguments and what it does
    run: Callable[[List[str]], int]  # argv after the verb -> exit status
    # the process may end without freeing its memory object by object (entry): a verb that starts no child to
    # be joined, registers no exit handler that matters and has closed its files when `run` returns
    exit_unfreed: bool = False
    # the verb runs with Python's cyclic collector paused (contract/collector.py): a one-shot computation whose
    # imports (torch, torchvision, scikit-learn) and models are long-lived objects without cycles, which the collector
    # would walk again and again (`hpml model-stats resnet18` 7.79 -> 6.82 CPU-s, docs/decisions.md "stop 56"); not a
    # verb that waits on a sweep for hours (launch, resume) or draws many figures (report, compare)
    collector_paused: bool = False


def _launch(argv: List[str]) -> int:
    from hpml.launcher.launch import HELP_FLAGS, checked_arguments, launch

    arguments = checked_arguments(argv)
    if not any(arg in HELP_FLAGS + ("--hydra-help", "--version") for arg in arguments):
        _check_launch_flags(arguments)
    return launch(argv)


def _check_launch_flags(arguments: List[str]) -> None:
    """Hydra's own flags as Hydra's parser reads them, but a bad one (--zzz, -c without its value) is one line:
    Hydra printed its 7-line usage block and the error after it."""
    from hydra._internal.utils import get_args_parser

    from hpml.launcher.errors import LaunchError

    def error(message: str) -> NoReturn:
        raise LaunchError(f"hpml launch: {message} (it takes key=value overrides, --dry-run, -m and Hydra's flags: "
                          "hpml launch --help)")

    parser = get_args_parser()
    parser.error = error  # type: ignore[method-assign]
    given = vars(parser.parse_args(arguments))
    for flag, why in LAUNCH_FLAGS_REFUSED.items():
        if given[flag.lstrip("-").replace("-", "_")]:
            raise LaunchError(f"hpml launch: {flag} is not allowed: {why}")


# Hydra flags that hpml's launch cannot honour: it is always a multirun of conf/config.yaml, and a rerun unpickles
# a file (a traceback on anything but Hydra's own pickle, and code run from whatever file is given)
LAUNCH_FLAGS_REFUSED = {
    "--run": "every launch is a sweep (drop it; one point is a sweep of one)",
    "--config-name": "hpml composes its own conf/config.yaml; a preset of yours goes in ./conf/experiment/",
    "--config-path": "hpml composes its own conf/config.yaml; use --config-dir to add a folder of presets",
    "--experimental-rerun": "relaunch with the sweep's overrides (its manifest.json), or `hpml resume DIR`",
}


def _status(argv: List[str]) -> int:
    from hpml.launcher.status import status_command

    parser = OneLineParser(prog="hpml status")
    parser.add_argument("sweep_dir", type=Path)
    return status_command(parser.parse_args(argv).sweep_dir)


def _resume(argv: List[str]) -> int:
    from hpml.launcher.resume import resume

    parser = OneLineParser(prog="hpml resume")
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--no-wait", action="store_true", help="return right after submitting (SLURM)")
    parser.add_argument("--grow", action="store_true",
                        help="rerun points that ran out of memory or time with twice as much (SLURM)")
    args = parser.parse_args(argv)
    return resume(args.sweep_dir, wait=not args.no_wait, grow=args.grow)


def _report(argv: List[str]) -> int:
    from hpml.analysis.report import main

    return main(argv)


def _compare(argv: List[str]) -> int:
    from hpml.analysis.compare.report import main

    return main(argv)


def _evaluate(argv: List[str]) -> int:
    from hpml.evaluation.cli import main

    return main(argv)


def _data(argv: List[str]) -> int:
    from hpml.dataprep.cli import main

    return main(argv)


def _model_stats(argv: List[str]) -> int:
    from hpml.models.stats.cli import main

    return main(argv)


VERBS: Dict[str, Verb] = {
    "launch": Verb("""\
  launch [overrides...]   compose a Hydra sweep (-m/--multirun, config groups, --cfg job) and run it
         [--dry-run]      compose and check every point, print them; write and submit nothing
""", _launch),
    "status": Verb("""\
  status DIR              each point's state in a sweep directory
""", _status),
    "resume": Verb("""\
  resume DIR [--no-wait]  resubmit the points that failed, were cancelled or never ran
         [--grow]         those that ran out of memory or time: with twice as much (SLURM)
""", _resume),
    "report": Verb("""\
  report DIR [--out D]    scaling tables (Markdown, CSV) from every result.json under DIR
""", _report, exit_unfreed=True),
    "compare": Verb("""\
  compare BASE CAND [CAND ...] [--ignore KEY] [--by KEY] [--out D] [--fail-on-regression PCT]
                          each matched configuration's headline numbers: ratio, 95 % interval, verdict
""", _compare, exit_unfreed=True),
    "evaluate": Verb("""\
  evaluate DIR --images I [--out D]
                          top-1 of every model a sweep saved (points/*/model.pt) on image folder I/<class>/
""", _evaluate, collector_paused=True),
    "data": Verb("""\
  data digits --root R [--ood O] [--seed N] [--train-size N] [--jpeg-folder J] [--force]
                          scikit-learn's digits as CIFAR-10 files under R (no download); O: 50 OOD images;
                          N: the training images repeated to N; J: both splits as JPEGs (ImageFolder)
       fashion-mnist|mnist --root R [--from F] [--ood O] [--force]
                          the four official .gz files of F checked (MD5s as torchvision publishes them) and
                          unpacked to R/FashionMNIST/raw/ (R/MNIST/raw/), where torchvision reads them;
                          O: the first 100 test images of each class rotated 20 degrees (PNG)
""", _data, collector_paused=True),
    "model-stats": Verb("""\
  model-stats MODEL [--input 3x224x224] [--batch N] [--no-bias] [--dtype D] [--format md|csv|tex]
              [--out FILE] [--figure PNG] | --inception | --list
                          parameters, activations, MACs and FLOPs per layer (CPU, seconds)
""", _model_stats, collector_paused=True),
}

EXIT_STATUSES = {
    0: "done",
    1: "the check failed: a point did not complete, a regression, an undecided gate (--undecided fail)",
    2: "bad input (one line, before anything is written)",
    130: "interrupted (128 + the signal)",
}

USAGE = ("usage: hpml <command> [args]\n\ncommands:\n" + "".join(verb.usage for verb in VERBS.values())
         + "\nexit status:\n" + "".join(f"  {code:<3}  {meaning}\n" for code, meaning in EXIT_STATUSES.items()))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in VERBS:
        print(f"hpml: unknown command {command!r}\n{USAGE}", file=sys.stderr, end="")
        return 2
    verb = VERBS[command]
    try:
        with cycle_collection_paused() if verb.collector_paused else contextlib.nullcontext():
            return verb.run(rest)
    except KeyboardInterrupt:  # Ctrl-C outside a running sweep (composing, status, report): nothing to resume
        print("hpml: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - user errors become one line; tracebacks stay for bugs
        from hpml.conf.validation import ConfigValueError
        from hpml.launcher.errors import LaunchError

        if isinstance(error, (LaunchError, FileNotFoundError, ConfigValueError)):
            for line in str(error).splitlines():
                print(f"hpml: error: {line}", file=sys.stderr)
            return 2
        raise


def entry() -> None:
    """The `hpml` console command: main, then the exit. After `hpml report` over 10,000 results, freeing what it
    loaded would take ~0.2 s more than the report itself, so a verb marked exit_unfreed leaves through os._exit
    once its output is flushed (mypy ends the same way); any other verb exits normally."""
    code = main()
    verb = sys.argv[1] if len(sys.argv) > 1 else None
    if verb in VERBS and VERBS[verb].exit_unfreed:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
