"""The `hpml` command: launch | status | resume | report | evaluate | data | model-stats (each command in its own
module)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

USAGE = """usage: hpml <command> [args]

commands:
  launch [overrides...]   compose a Hydra sweep (-m/--multirun, config groups, --cfg job) and run it
         [--dry-run]      compose and check every point, print them; write and submit nothing
  status DIR              each point's state in a sweep directory
  resume DIR [--no-wait]  resubmit the points that failed, were cancelled or never ran
  report DIR [--out D]    scaling tables (Markdown, CSV) from every result.json under DIR
  evaluate DIR --images I [--out D]
                          top-1 of every model a sweep saved (points/*/model.pt) on image folder I/<class>/
  data digits --root R [--ood O] [--seed N] [--force]
                          scikit-learn's digits as CIFAR-10 files under R (no download); O: 50 OOD images
  model-stats MODEL [--input 3x224x224] [--batch N] [--no-bias] [--dtype D] [--format md|csv|tex]
              [--out FILE] [--figure PNG] | --inception | --list
                          parameters, activations, MACs and FLOPs per layer (CPU, seconds)
"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    try:
        if command == "launch":
            from launcher.launch import launch

            return launch(rest)
        if command == "status":
            from launcher.status import status_command

            parser = argparse.ArgumentParser(prog="hpml status")
            parser.add_argument("sweep_dir", type=Path)
            args = parser.parse_args(rest)
            return status_command(args.sweep_dir)
        if command == "resume":
            from launcher.resume import resume

            parser = argparse.ArgumentParser(prog="hpml resume")
            parser.add_argument("sweep_dir", type=Path)
            parser.add_argument("--no-wait", action="store_true", help="return right after submitting (SLURM)")
            args = parser.parse_args(rest)
            return resume(args.sweep_dir, wait=not args.no_wait)
        if command == "report":
            from analysis.report import main as report_main

            return report_main(rest)
        if command == "evaluate":
            from evaluation.cli import main as evaluate_main

            return evaluate_main(rest)
        if command == "data":
            from dataprep.cli import main as data_main

            return data_main(rest)
        if command == "model-stats":
            from launcher.model_stats_cli import main as model_stats_main

            return model_stats_main(rest)
    except KeyboardInterrupt:  # Ctrl-C outside a running sweep (composing, status, report): nothing to resume
        print("hpml: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - user errors become one line; tracebacks stay for bugs
        from conf.validation import ConfigValueError
        from launcher.errors import LaunchError

        if isinstance(error, (LaunchError, FileNotFoundError, ConfigValueError)):
            for line in str(error).splitlines():
                print(f"hpml: error: {line}", file=sys.stderr)
            return 2
        raise
    print(f"hpml: unknown command {command!r}\n{USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
