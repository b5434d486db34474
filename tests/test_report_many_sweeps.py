"""Reports over many sweeps stay readable and fast (issue 25, item 4): past MAX_GROUP_TABLES configurations
the per-configuration tables become one table (same CSV), a plot past MAX_LINES lines becomes a summary,
a figure past MAX_PANELS sweeps draws the first ones and says so, and the figures are drawn in a child
process while the tables are written. Real results through the real report; real matplotlib; a real fork.
(The timing itself: tools/report_benchmark.py, docs/results/report-speed.md.)"""

from __future__ import annotations

import csv
import importlib
import os
from pathlib import Path

import pandas as pd
import pytest

from hpml.analysis.report import build_report, write_report
from hpml.analysis.train.many import MAX_GROUP_TABLES
from hpml.analysis.train.runs import train_run
from hpml.analysis.write_aside import TableQueue, WriteAsideError, write_aside, write_sections_aside
from hpml.report_kit import figures
from hpml.report_kit.sections import MAX_FIGURES_PER_KIND, Figure, Section, Table, cap_figures
from tests.factories import write_manifest, write_result
from tests.factories.train import study_result

# analysis.train re-exports a function named `sections`, which hides the module of that name
train_sections = importlib.import_module("hpml.analysis.train.sections")


def sweeps_of_two_points(root: Path, count: int) -> None:
    """`count` sweeps, each 1 and 2 workers at batch 32, each its own learning rate (so its own configuration:
    a speedup line of two points per sweep)."""
    for index in range(count):
        sweep_dir = root / f"s{index:03d}"
        write_manifest(sweep_dir, points=[0, 1], sweep=f"s{index:03d}")
        for point, workers in ((0, 1), (1, 2)):
            scale = 1 + index / 100
            doc = study_result(point, workers=workers, sweep=f"s{index:03d}",
                               total=(9.0, 4.0 * scale / workers, 4.0 * scale / workers))
            doc["config"]["workload"]["lr"] = 0.1 + index / 1000
            write_result(sweep_dir, doc)


def csv_rows(path: Path) -> list:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_few_configurations_keep_one_table_each(tmp_path):
    sweeps_of_two_points(tmp_path, MAX_GROUP_TABLES)
    report = build_report(tmp_path)
    titles = [s.title for s in report.sections if s.tables and s.tables[0].name == "scaling"]
    assert len(titles) == MAX_GROUP_TABLES and titles[0].startswith("Epoch time and speedup: s000")


def test_many_configurations_share_one_table_with_the_same_csv(tmp_path):
    sweeps_of_two_points(tmp_path, MAX_GROUP_TABLES + 1)
    report = build_report(tmp_path)
    scaling = [s for s in report.sections if s.tables and s.tables[0].name == "scaling"]
    assert [s.title for s in scaling] == [f"Epoch time and speedup: {MAX_GROUP_TABLES + 1} configurations"]
    table = scaling[0].tables[0]
    assert table.headers[:2] == ["configuration", "scaling"] and len(table.rows) == 2 * (MAX_GROUP_TABLES + 1)
    assert table.rows[0][0] == "s000 · ddp · resnet18 · fp32" and table.rows[-1][0].startswith("s020 · ")
    speedup = table.headers.index("speedup (total)")
    assert [row[speedup] for row in table.rows[:2]] == ["1.00", "2.00"]  # within its own sweep only
    phases = [s for s in report.sections if s.tables and s.tables[0].name == "train_phases"]
    assert len(phases) == 1 and phases[0].tables[0].headers[0] == "configuration"

    written = write_report(report, tmp_path / "report")

    rows = csv_rows(tmp_path / "report" / "scaling.csv")
    assert len(rows) == 2 * (MAX_GROUP_TABLES + 1) and [r["sweep"] for r in rows[:3]] == ["s000", "s000", "s001"]
    assert (tmp_path / "report" / "speedup.png") in written


def test_a_plot_past_max_lines_draws_a_summary_and_says_so(tmp_path, monkeypatch):
    sweeps_of_two_points(tmp_path, figures.MAX_LINES + 1)
    time = train_sections.tt.time_table([train_run(doc) for doc in build_report(tmp_path).loaded.rows])
    drawn = {}
    real_save = figures.save

    def keep_axes(plt, fig, path):  # look at what was drawn, then save it as usual
        drawn["labels"] = [line.get_label() for line in fig.axes[0].get_lines()]
        drawn["title"] = fig.axes[0].get_title()
        return real_save(plt, fig, path)

    monkeypatch.setattr(figures, "save", keep_axes)
    assert train_sections.speedup_png(time, tmp_path / "speedup.png", {}, "Speedup")
    assert drawn["labels"] == [f"weak scaling: median of {figures.MAX_LINES + 1} lines", "ideal (N / N_base)"]
    assert drawn["title"] == f"Speedup\n{figures.MAX_LINES + 1} lines summarized (every line in scaling.csv)"


def test_at_most_max_panels_are_drawn():
    kept, note = figures.first_panels([f"s{i}" for i in range(figures.MAX_PANELS + 3)])
    assert kept == [f"s{i}" for i in range(figures.MAX_PANELS)]
    assert note == f"first {figures.MAX_PANELS} of {figures.MAX_PANELS + 3} sweeps drawn; every sweep is in the CSV"
    assert figures.first_panels(["a", "b"]) == (["a", "b"], "")


def writes(text: str):
    def draw(path: Path) -> bool:
        path.write_text(f"{text} from {os.getpid()}")
        return True
    return draw


def fails(path: Path) -> bool:
    # a bug in a drawing function (a malformed value, MALFORMED, is one stderr line: test_report_inventory)
    raise RuntimeError("a figure that cannot be drawn")


def test_figures_are_drawn_in_a_child_process_while_the_parent_goes_on(tmp_path):
    sections = [Section("a", figures=[Figure("a.png", writes("a")), Figure("none.png", lambda path: False)]),
                Section("b", figures=[Figure("b.png", writes("b"))])]
    wait = write_aside(sections, tmp_path)
    assert wait() == [tmp_path / "a.png", tmp_path / "b.png"]
    assert (tmp_path / "a.png").read_text() != f"a from {os.getpid()}"  # another process drew it
    assert not (tmp_path / "none.png").exists()


def test_a_figure_that_fails_in_the_child_fails_the_report(tmp_path, capfd):
    wait = write_aside([Section("a", figures=[Figure("a.png", fails)])], tmp_path)
    with pytest.raises(WriteAsideError, match="writing report files in a child process failed"):
        wait()
    assert "RuntimeError: a figure that cannot be drawn" in capfd.readouterr().err


def test_without_figures_or_tables_for_it_nothing_is_forked(tmp_path):
    assert write_aside([Section("a")], tmp_path)() == []


def table_section(name: str, rows: int) -> Section:
    frame = pd.DataFrame({"x": range(rows), "y": [0.5] * rows})
    return Section(name, tables=[Table(name, ["x", "y"], frame.values.tolist(), frame)])


def test_the_table_queue_gives_each_table_once_across_a_fork_largest_first():
    sections = [table_section(name, rows) for name, rows in (("b", 10), ("a", 30), ("c", 20), ("d", 20))]
    queue = TableQueue(sections)
    assert queue.names == ["a", "c", "d", "b"]  # largest first, then by name
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child takes two, then reports them
        os.write(write_end, f"{queue.take()} {queue.take()}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read_end, 100).decode().split()
    os.close(read_end)
    os.close(write_end)
    parent = [queue.take(), queue.take(), queue.take()]
    assert child == ["a", "c"] and parent == ["d", "b", None]


def test_the_parent_and_the_figure_child_write_every_table_once_in_report_order(tmp_path):
    """The child draws the figures first, then takes tables like the parent; the paths come back in report
    order (each table's CSV then LaTeX, tables by first appearance, then the figures) whoever wrote them."""
    sections = [table_section("small", 1000), table_section("big", 300_000), table_section("middle", 100_000),
                Section("figure", figures=[Figure("f.png", writes("f")), Figure("g.png", writes("g"))])]
    written = write_sections_aside(sections, tmp_path)
    assert [path.name for path in written] == ["small.csv", "small.tex", "big.csv", "big.tex", "middle.csv",
                                               "middle.tex", "f.png", "g.png"]
    assert pd.read_csv(tmp_path / "big.csv").shape == (300_000, 2)
    assert (tmp_path / "middle.tex").read_text().count(r" \\") == 100_001  # header and every row
    assert (tmp_path / "f.png").read_text() != f"f from {os.getpid()}"  # drawn by the child
    tables_only = write_sections_aside(sections[:1], tmp_path / "no_figures")  # nothing to overlap: no child
    assert [path.name for path in tables_only] == ["small.csv", "small.tex"]


def profile_record(sweep: str, loop_time_s=(1.5, 1.0)) -> dict:
    """A training-techniques run record (analysis.techniques.runs) with a full phase profile, 2 epochs."""
    return {
        "sweep": sweep, "config_items": {"workload.model": "m"}, "config_key": "k", "epochs": 2, "timed": [1],
        "step_time_s": [[0.5, 0.5], [0.3, 0.3]],
        "phase_time_s": {"h2d": [[0.0, 0.0], [0.01, 0.01]], "forward": [[0.2, 0.2], [0.1, 0.1]],
                         "backward": [[0.2, 0.2], [0.1, 0.1]], "optimizer": [[0.05, 0.05], [0.04, 0.04]]},
        "loop_time_s": list(loop_time_s), "eval_time_s": [0.2, 0.3],
    }


def test_many_phase_profiles_share_one_table_of_one_timed_row_each_and_name_flagged_epochs():
    from hpml.analysis.techniques.sections import profile_sections

    records = [profile_record(f"s{i:02d}") for i in range(MAX_GROUP_TABLES)]
    records.append(profile_record("s99", loop_time_s=(1.5, 0.7)))  # epoch 2's parts take 0.9 s of 0.7
    head, combined = profile_sections(records)
    assert combined.title == f"Phase profile: {MAX_GROUP_TABLES + 1} configurations"
    table = combined.tables[0]
    assert table.headers[0] == "configuration" and len(table.rows) == MAX_GROUP_TABLES + 1  # one per configuration
    assert [row[:2] for row in table.rows[:2]] == [["s00", "timed"], ["s01", "timed"]]
    assert list(table.frame.columns[:2]) == ["configuration", "epoch"] and len(table.frame) == len(table.rows)
    # the timed row of s00 (timed = epoch 2 only): wall 1.0; parts 0.6 - 0.55 data, 0.02 h2d, ..., eval 0.3
    s00 = table.frame.iloc[0]
    assert s00["wall"] == pytest.approx(1.0) and s00["evaluation"] == pytest.approx(0.3)
    assert s00["data"] == pytest.approx(0.6 - 0.5) and s00["other"] == pytest.approx(1.0 - 0.6 - 0.3)
    assert "in: s99 (epoch 2, timed)." in combined.after and [f.file for f in combined.figures] == ["phase_profile_1.png"]
    few = profile_sections(records[:MAX_GROUP_TABLES])
    assert len(few) == 1 + MAX_GROUP_TABLES and few[1].title == "Phase profile: s00"


def test_the_hpml_command_leaves_report_unfreed_with_its_exit_status_and_every_file(tmp_path):
    """`hpml report` (launcher.cli.entry) ends through os._exit once its output is flushed: the exit status, the
    whole Markdown on stdout, the files and the closing line on stderr must all be there; a bad directory still
    gives status 2 and one line."""
    import subprocess
    import sys

    sweeps_of_two_points(tmp_path / "sweeps", 2)
    done = subprocess.run([sys.executable, "-m", "hpml.launcher.cli", "report", str(tmp_path / "sweeps"), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (tmp_path / "out" / "report.md").read_text()  # flushed in full before the exit
    assert done.stderr.strip().startswith("hpml: wrote ") and (tmp_path / "out" / "speedup.png").exists()
    assert len(csv_rows(tmp_path / "out" / "scaling.csv")) == 4
    missing = subprocess.run([sys.executable, "-m", "hpml.launcher.cli", "report", str(tmp_path / "nowhere")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.startswith("hpml: error: ") and missing.stdout == ""


# A real train result (an H100 run of the phase-profile preset: full phase arrays and an evaluation record)
REPO = Path(__file__).resolve().parent.parent
REAL_RESULT = ("training_techniques", "2026-11-25_15-37-57_profile_h100/points/0/result.json")  # in its sweeps.tgz


def test_a_report_draws_the_first_figures_of_each_kind_and_names_the_others(tmp_path, committed_sweeps):
    """The class behind a report of 5,000 evaluated sweeps that drew 10,000 time-to-accuracy figures (2.5 min
    for 1,000 results): per-configuration and per-point figures of every study are capped by kind, in report
    order, and each section whose figure was left out says which file. Real results through the real report."""
    import json
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    try:
        import report_benchmark
    finally:
        sys.path.pop(0)
    source = json.loads((committed_sweeps(REAL_RESULT[0]) / REAL_RESULT[1]).read_text())
    source.pop("telemetry", None)  # its sidecars stay with the original point
    report_benchmark.build(source, tmp_path / "sweeps", 2 * (MAX_FIGURES_PER_KIND + 3), 2)  # a learning rate per sweep

    report = build_report(tmp_path / "sweeps")
    written = {path.name for path in write_report(report, tmp_path / "report")}

    curves = sorted(name for name in written if name.startswith("tta_curves"))
    assert len(curves) == MAX_FIGURES_PER_KIND
    tta = [s for s in report.sections if s.after.startswith("Figures: tta_curves")]  # one per configuration
    assert len(tta) > MAX_FIGURES_PER_KIND + 2
    assert all("Not drawn" not in s.after for s in tta[:MAX_FIGURES_PER_KIND])
    for index, section in enumerate(tta[MAX_FIGURES_PER_KIND:], start=MAX_FIGURES_PER_KIND + 1):
        assert f"Not drawn: tta_curves_{index}.png" in section.after and f"tta_curves_#.png: {len(tta)}" in section.after
        assert not (tmp_path / "report" / f"tta_curves_{index}.png").exists()
    assert all("run(s) with an evaluation record" in s.markdown for s in tta)  # every configuration still there


def test_cap_figures_keeps_the_first_of_each_kind_in_report_order():
    sections = [Section(f"s{i}", after="text" if i == 0 else "", figures=[
        Figure(f"curve_{i}.png", lambda path: True), Figure(f"timeline_{i}.png", lambda path: True, kind="t")])
        for i in range(4)]
    cap_figures(sections, limit=2)
    assert [[f.file for f in s.figures] for s in sections] == [
        ["curve_0.png", "timeline_0.png"], ["curve_1.png", "timeline_1.png"], [], []]
    assert sections[0].after == "text" and sections[2].after.startswith(
        "Not drawn: curve_2.png, timeline_2.png (a report draws the first 2 figures of a kind; curve_#.png: 4; t: 4")
