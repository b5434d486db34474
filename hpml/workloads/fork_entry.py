"""What each worker runs when hpml's torchrun forks it: `torchrun --start-method fork --run-path <this file>
hpml.workloads.<name> --config ...` (launcher/torchrun.py).

torchrun's agent has imported torch before it starts the workers. A worker forked from it starts with torch
already imported, where one started as `python -u -m hpml.workloads.<name>` (torchrun's default) imports it
again: seconds of CPU per worker and per point (docs/decisions.md, "workers are forked from torchrun's agent").
Forking is safe there because the agent never initializes CUDA (its device check goes through NVML: the point job
sets PYTORCH_NVML_BASED_CUDA_CHECK=1, and forks only where NVML answers, launcher/torchrun.py's workers_forkable)
and never runs a parallel CPU region: each worker makes its own CUDA context, OpenMP pool and process group after
the fork.

This file gives the worker what a fresh `python -u -m <module>` would have had, then runs the module as
__main__: the agent's signal handlers are torchrun's (SIGTERM, SIGINT, SIGHUP, SIGQUIT raise its
SignalException, meant for the agent), so a stop would end the worker as an exception instead of by the
signal; and `-u`'s unbuffered output, so the worker's lines reach its log as they are printed.
"""

import runpy
import signal
import sys

FRESH_DISPOSITIONS = {signal.SIGTERM: signal.SIG_DFL, signal.SIGHUP: signal.SIG_DFL,
                      signal.SIGQUIT: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}


def as_a_fresh_interpreter() -> None:
    for signum, disposition in FRESH_DISPOSITIONS.items():
        if callable(signal.getsignal(signum)):  # a handler the agent installed; an ignored signal stays ignored
            signal.signal(signum, disposition)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True, write_through=True)


def main() -> None:
    as_a_fresh_interpreter()
    from hpml.workloads import startup  # the package's import pauses nothing here: this is not `-m hpml.workloads`

    startup.pause_at_start()  # what is imported from here on is long-lived, as in a worker's `-m` start
    module = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
