"""Figures drawn in a child process while the parent writes the tables: `hpml report` on 2 cores in about
the time of the longer of the two, not their sum (issue 25, item 4).

Drawing is matplotlib's import (~0.4 s) and its rendering; writing the tables is CSV and LaTeX text; neither
needs the other. The child is a fork: it has the report's sections already (copy-on-write, nothing is
pickled), draws, and sends back the paths of the figures it drew through a pipe. A failure in the child is
its traceback on stderr and an exception in the parent, never a silent missing figure. Where there is no
fork (Windows), or no figure to draw, the figures are drawn in the process itself.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Callable, List, Sequence

from analysis.sections import Section, draw_figures


class FigureProcessError(RuntimeError):
    """The child that drew the figures failed (its traceback is on stderr)."""


def draw_figures_aside(sections: Sequence[Section], out_dir: Path) -> Callable[[], List[Path]]:
    """Starts drawing; returns the function that waits for the drawing to end and gives the drawn paths."""
    if not hasattr(os, "fork") or not any(section.figures for section in sections):
        drawn = draw_figures(sections, out_dir)
        return lambda: drawn
    out_dir.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()  # what the parent has buffered must not be written twice, once by each process
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw, report the paths, leave without running the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            paths = draw_figures(sections, out_dir)
            with os.fdopen(write_end, "w") as pipe:
                pipe.write("\n".join(str(path) for path in paths))
        except BaseException:  # noqa: BLE001 - anything, even Ctrl-C, ends the child with its traceback
            traceback.print_exc()
            status = 1
        finally:
            sys.stderr.flush()
            os._exit(status)
    os.close(write_end)

    def wait() -> List[Path]:
        with os.fdopen(read_end) as pipe:  # read to the end before reaping: a long list must not block the child
            text = pipe.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise FigureProcessError(f"drawing the figures failed (exit status {os.waitstatus_to_exitcode(status)}; "
                                     "its traceback is above)")
        return [Path(line) for line in text.splitlines()]

    return wait
