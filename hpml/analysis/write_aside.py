"""A report's figures drawn by a child process while the parent writes the tables, and both sharing the tables
once the figures are done: `hpml report` on 2 cores in about half the time of the writing, not all of it
(issue 25, item 4).

Drawing is matplotlib's import (~0.3 s) and its rendering; writing a table is CSV and LaTeX text; none needs
another. The child is a fork: it has the sections already (copy-on-write, nothing is pickled). It draws the
figures, then, like the parent from the start, takes the next table not yet taken (largest first, from a counter
in shared memory) until none is left, and sends back the paths it wrote through a pipe. Nobody has to guess
beforehand how long a figure or a table takes. A failure in the child is its traceback on stderr and an
exception in the parent, never a silent missing file. Where there is no fork (Windows), or no figure, the
process itself writes everything.

Tried and dropped: writing each report part (train tables, training techniques, ...) in a child as soon as it
was computed, while the parent computed the next. Over 10,000 results the parent's next part ran ~0.35 s slower
beside the child (copy-on-write faults on every page the parent's reference counts touched) and the figures'
child started last: 5.6-5.9 s against 5.4 s (docs/results/report-speed.md).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from hpml.report_kit.sections import Section, draw_figures, table_cells, write_tables

# The child's last words on the pipe once everything is written. Its exit itself, which unmaps the copy of the
# report's memory (~0.15 s after a 10,000-result report), need not be waited for.
_DONE = "#done"


class WriteAsideError(RuntimeError):
    """The child that drew the figures (and wrote some tables) failed (its traceback is on stderr)."""


class TableQueue:
    """Table names, largest first, taken one at a time by whichever process asks; shared across a fork."""

    def __init__(self, sections: Sequence[Section]) -> None:
        cells = table_cells(sections)
        self.names = sorted(cells, key=lambda name: (-cells[name], name))
        self.taken = multiprocessing.get_context("fork").Value("i", 0)  # shared memory, with its lock

    def take(self) -> Optional[str]:
        with self.taken.get_lock():
            index = self.taken.value
            self.taken.value = index + 1
        return self.names[index] if index < len(self.names) else None


def _write_until_empty(sections: Sequence[Section], out_dir: Path, queue: TableQueue) -> List[Path]:
    written: List[Path] = []
    name = queue.take()
    while name is not None:
        written += write_tables(sections, out_dir, only={name})
        name = queue.take()
    return written


def _in_report_order(sections: Sequence[Section], paths: List[Path]) -> List[Path]:
    """The tables in order of first appearance (CSV, then LaTeX), then the figures in order: whoever wrote them."""
    order = {name: i for i, name in enumerate(table_cells(sections))}
    figures = {section_figure.file: i for i, section_figure in
               enumerate(figure for section in sections for figure in section.figures)}
    return sorted(paths, key=lambda p: (1, figures[p.name], 0) if p.name in figures
                  else (0, order.get(p.stem, len(order)), p.suffix != ".csv"))


def write_aside(sections: Sequence[Section], out_dir: Path, queue: Optional[TableQueue] = None
                ) -> Callable[[], List[Path]]:
    """Starts a child that draws every figure of `sections`, then writes tables taken from `queue` (if given);
    returns the function that waits for it and gives the paths it wrote."""
    if not hasattr(os, "fork") or not any(section.figures for section in sections):
        written = draw_figures(sections, out_dir) + (_write_until_empty(sections, out_dir, queue) if queue else [])
        return lambda: written
    out_dir.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()  # what the parent has buffered must not be written twice, once by each process
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw, write, report the paths, leave without running the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            paths = draw_figures(sections, out_dir) + (_write_until_empty(sections, out_dir, queue) if queue else [])
            with os.fdopen(write_end, "w") as pipe:
                pipe.write("".join(f"{path}\n" for path in paths) + _DONE)
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
        if text.endswith(_DONE):  # done: the child's exit (unmapping the report's memory) is not waited for
            threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True).start()  # reaped meanwhile
            return [Path(line) for line in text[:-len(_DONE)].splitlines()]
        _, status = os.waitpid(pid, 0)
        raise WriteAsideError(f"writing report files in a child process failed (exit status "
                              f"{os.waitstatus_to_exitcode(status)}; its traceback is above)")

    return wait


def write_sections_aside(sections: Sequence[Section], out_dir: Path) -> List[Path]:
    """Every table and figure of `sections`, written by this process and a child that draws the figures first;
    the paths in report order (tables, then figures)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if not any(section.figures for section in sections):  # nothing to overlap: no child
        return write_tables(sections, out_dir) + draw_figures(sections, out_dir)
    queue = TableQueue(sections)
    wait = write_aside(sections, out_dir, queue)
    own = _write_until_empty(sections, out_dir, queue)
    return _in_report_order(sections, own + wait())


__all__ = ["TableQueue", "WriteAsideError", "write_aside", "write_sections_aside"]
