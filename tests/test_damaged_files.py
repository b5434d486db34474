"""Damaged sweep files (issue 11, class 6), through the real `hpml status` and `hpml report`: every damaged
state.json, result.json or manifest.json is one line, never a traceback, a hang or exhausted memory; a point
without a valid result is never completed, so status agrees with what `hpml resume` reruns. And a point whose
state.json says running while the process that runs it is gone is not shown as running (class 1).

A damaged manifest's or point's shape (a JSON value of the wrong kind, a field of the wrong type) is checked case by
case through cli.main in this process (conftest's hpml_here, issue 41): what the verb says is the claim. The first
case of that class, and every damage that could hang a reader or exhaust its memory (truncated, nested 100,000
deep, /dev/zero, a FIFO, over the size limit), go through the command as users run it: its own process, bounded by
a timeout, its exit status and whole stderr."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hpml.contract.jsonio import MANIFEST_LIMIT, RESULT_LIMIT, STATE_LIMIT
from hpml.launcher.status import BUSY, RUNNER_GONE, current_states
from tests.conftest import SMALL_TRAIN, hpml_here, own_copy
from tests.factories import envelope

DEEP = "[" * 100_000 + "]" * 100_000


def ok_result(point: int) -> dict:
    return envelope({"name": "synthetic"}, point=point)


def dead_pid() -> int:
    """The id of a process that ran and was reaped (so no process has it, barring reuse within the test)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def damage(path: Path, how, limit: int) -> None:
    """Writes `path` damaged in one of the ways a sweep folder can be: a JSON value of the wrong shape, a
    truncated text, JSON nested 100,000 deep, a link to /dev/zero, a FIFO, or a file over the size limit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "dev_zero":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "huge":  # sparse: over the limit without filling the disk; refused by its size alone
        with open(path, "wb") as f:
            f.truncate(limit + 1)
    elif isinstance(how, str):
        path.write_text(how)
    else:
        path.write_text(json.dumps(how))


def make_sweep(root: Path, points: int, launcher_pid: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    entries = [{"point": i, "overrides": [f"workload.lr=0.{i + 1}"], "job_id": f"local-{i}"} for i in range(points)]
    (root / "manifest.json").write_text(json.dumps({
        "manifest_version": 1, "sweep": "study", "cluster": "local", "points": entries,
        "launcher": {"host": socket.gethostname(), "pid": launcher_pid}}))
    return root


def rows_by_point(stdout: str) -> dict:
    """`hpml status` output: {point: [its row, then its reason and damaged lines]}."""
    rows: dict = {}
    current = None
    for line in stdout.splitlines()[2:]:
        if line[:1].isdigit():
            current = int(line.split()[0])
            rows[current] = [line]
        else:
            rows[current].append(line.strip())
    return rows


STATE_DAMAGE = [
    ([{"state": "running"}], "state.json: the document is a list, expected an object"),
    (3, "state.json: the document is a number, expected an object"),
    ({"state": 5}, "state.json: state is a number, expected a word"),
    ({"reason": "no state"}, "state.json: state is null, expected a word"),
    ({"state": "sleeping"}, "state.json: state is 'sleeping', expected one of"),
    ('{"state": "runn', "state.json: truncated JSON: Unterminated string"),
    (DEEP, "state.json: JSON nested too deeply to read; refused"),
    ("dev_zero", "state.json: not a regular file"),
    ("fifo", "state.json: not a regular file"),
    ("huge", f"state.json: {STATE_LIMIT + 1} bytes, over the 1 MiB limit"),
]

RESULT_DAMAGE = [
    ([1, 2], "result.json: not a valid result: the document is list, not a JSON object"),
    (7, "result.json: not a valid result: the document is int, not a JSON object"),
    ({"status": "ok"}, "result.json: not a valid result: schema_version: missing"),
    ({**ok_result(0), "identity": "x"}, "result.json: not a valid result: identity: expected an object"),
    (json.dumps(ok_result(0))[:-40], "result.json: truncated JSON"),
    (DEEP, "result.json: JSON nested too deeply to read; refused"),
    ("dev_zero", "result.json: not a regular file"),
    ("fifo", "result.json: not a regular file"),
    ("huge", f"result.json: {RESULT_LIMIT + 1} bytes, over the 256 MiB limit"),
]


def test_damaged_state_files_are_one_line_each_and_never_running(tmp_path, hpml):
    sweep = make_sweep(tmp_path / "s", len(STATE_DAMAGE), dead_pid())
    for point, (how, _) in enumerate(STATE_DAMAGE):
        damage(sweep / "points" / str(point) / "state.json", how, STATE_LIMIT)

    done = hpml("status", str(sweep), timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    rows = rows_by_point(done.stdout)
    for point, (_, expected) in enumerate(STATE_DAMAGE):
        row, *notes = rows[point]
        damaged = [n for n in notes if n.startswith("damaged: ")]
        assert len(damaged) == 1 and damaged[0].startswith(f"damaged: {expected}"), (point, notes)
        assert row.split()[1] == "lost", row  # a damaged state proves nothing; its launch is gone
    assert all(s.state not in ("completed", *BUSY) for s in current_states(sweep))  # resume reruns them all


def test_a_point_without_a_valid_result_is_never_completed(tmp_path, hpml):
    sweep = make_sweep(tmp_path / "s", len(RESULT_DAMAGE) + 1, dead_pid())
    for point, (how, _) in enumerate(RESULT_DAMAGE):
        folder = sweep / "points" / str(point)
        damage(folder / "result.json", how, RESULT_LIMIT)
        (folder / "state.json").write_text(json.dumps({"state": "completed"}))  # the job's word is not enough
    good = sweep / "points" / str(len(RESULT_DAMAGE))
    good.mkdir(parents=True)
    (good / "result.json").write_text(json.dumps(ok_result(len(RESULT_DAMAGE))))
    (good / "state.json").write_text(json.dumps({"state": "completed"}))

    done = hpml("status", str(sweep), timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    rows = rows_by_point(done.stdout)
    for point, (_, expected) in enumerate(RESULT_DAMAGE):
        row, *notes = rows[point]
        assert row.split()[1] == "failed" and len(notes) == 1, (row, notes)
        assert notes[0].startswith(f"reason: {expected}"), notes
    assert rows[len(RESULT_DAMAGE)] == [rows[len(RESULT_DAMAGE)][0]] and "completed" in rows[len(RESULT_DAMAGE)][0]
    rerun = [s.point for s in current_states(sweep) if s.state not in ("completed", *BUSY)]
    assert rerun == list(range(len(RESULT_DAMAGE)))  # exactly what `hpml resume` reruns

    report = hpml("report", str(sweep), "--out", str(tmp_path / "report"), timeout=120)

    assert report.returncode == 0, report.stderr
    assert "Traceback" not in report.stderr
    problems = [line for line in report.stdout.splitlines() if line.startswith("- `") and "/points/" in line]
    for point, (_, expected) in enumerate(RESULT_DAMAGE):
        lines = [line for line in problems if f"/points/{point}/result.json`" in line]
        assert len(lines) == 1, (point, lines)
        message = expected.removeprefix("result.json: ").removeprefix("not a valid result: ")
        assert message.split(":")[0] in lines[0], (message, lines[0])


# how, status's line, and whether the report reads the damaged part (it needs no sweep name, job id, launcher
# or point order, only each point's number and overrides)
MANIFEST_DAMAGE = [
    ([1, 2], "damaged manifest: the document is a list, expected an object"),
    (5, "damaged manifest: the document is a number, expected an object"),
    ({"sweep": "s"}, "damaged manifest: no list of points"),
    ({"sweep": "s", "points": 3}, "damaged manifest: points is a number, expected a list"),
    ({"points": []}, "damaged manifest: sweep is missing", False),
    ({"sweep": 4, "points": []}, "damaged manifest: sweep is a number, expected a string", False),
    ({"sweep": "s", "points": [{"overrides": []}]}, "damaged manifest: points[0].point is missing"),
    ({"sweep": "s", "points": [{"point": "0"}]}, "damaged manifest: points[0].point is '0', expected 0"),
    ({"sweep": "s", "points": [{"point": 1.5}]}, "damaged manifest: points[0].point is 1.5, expected 0"),
    ({"sweep": "s", "points": [{"point": 1}]}, "damaged manifest: points[0].point is 1, expected 0", False),
    ({"sweep": "s", "points": ["x"]}, "damaged manifest: points[0] is a string, expected an object"),
    ({"sweep": "s", "points": [{"point": 0, "overrides": 3}]},
     "damaged manifest: points[0].overrides is a number, expected a list of strings"),
    ({"sweep": "s", "points": [{"point": 0, "job_id": 12}]},
     "damaged manifest: points[0].job_id is a number, expected a string or null", False),
    ({"sweep": "s", "points": [], "launcher": {"host": "h", "pid": "1"}}, "damaged manifest: launcher is not", False),
    ('{"sweep": "s", "poi', "truncated JSON"),
    (DEEP, "JSON nested too deeply to read; refused"),
    ("dev_zero", "not a regular file"),
    ("fifo", "not a regular file"),
    ("huge", f"{MANIFEST_LIMIT + 1} bytes, over the 64 MiB limit"),
]


def through_the_command(case: int, how) -> bool:
    """Whether a damage case runs as the real command: the first of the shape class, and every damage to the file as
    a file (a text, not a JSON value: truncated or nested too deep; /dev/zero, a FIFO, over the limit)."""
    return case == 0 or isinstance(how, str)


def in_this_process(tmp_path):
    """hpml(*args, timeout=...) through cli.main in this process, called as the `hpml` fixture calls the command."""
    def _run(*args: str, timeout: float = 600):
        return hpml_here(list(args), tmp_path)
    return _run


MANIFEST_CASES = [(*case, True)[:3] + (through_the_command(i, case[0]),) for i, case in enumerate(MANIFEST_DAMAGE)]


@pytest.mark.parametrize("how, expected, report_reads_it, command", MANIFEST_CASES,
                         ids=[f"{i}-command" if case[3] else str(i) for i, case in enumerate(MANIFEST_CASES)])
def test_a_damaged_manifest_is_one_line(tmp_path, hpml, how, expected, report_reads_it, command):
    sweep = tmp_path / "s"
    damage(sweep / "manifest.json", how, MANIFEST_LIMIT)
    (sweep / "points" / "0").mkdir(parents=True)
    (sweep / "points" / "0" / "result.json").write_text(json.dumps(ok_result(0)))
    if not command:
        hpml = in_this_process(tmp_path)

    done = hpml("status", str(sweep), timeout=60)

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"hpml: error: {sweep / 'manifest.json'}: "), \
        done.stderr
    assert expected in done.stderr and "restore it, or launch the sweep again" in done.stderr

    report = hpml("report", str(sweep), "--out", str(tmp_path / "report"), timeout=60)

    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    lines = [line for line in report.stdout.splitlines() if "manifest.json`" in line]
    assert len(lines) == report_reads_it, lines


def test_running_is_shown_only_while_its_runner_lives(tmp_path, hpml):
    """A state.json that says running counts only while the process that runs the point is alive: the
    runner's own host and pid in state.json when it has them (a pid reused by a later process does not
    count), else the local launcher's in the manifest."""
    gone, here = dead_pid(), socket.gethostname()
    states = {
        0: {"state": "running"},  # no runner recorded: the manifest's launcher (gone) decides
        1: {"state": "running", "host": here, "pid": gone},
        2: {"state": "running", "host": here, "pid": os.getpid()},  # the runner lives on: running
        3: {"state": "running", "host": here, "pid": os.getpid(), "started_at": "2020-01-01T00:00:00+00:00"},
        4: {"state": "running", "host": here + "-elsewhere", "pid": gone},  # cannot tell: the launcher (gone)
    }
    sweep = make_sweep(tmp_path / "s", len(states), gone)
    for point, state in states.items():
        (sweep / "points" / str(point)).mkdir(parents=True)
        (sweep / "points" / str(point) / "state.json").write_text(json.dumps(state))

    done = hpml("status", str(sweep), timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    rows = rows_by_point(done.stdout)
    shown = {point: (row[0].split()[1], row[1:]) for point, row in rows.items()}
    assert shown == {0: ("interrupted", [f"reason: {RUNNER_GONE}"]), 1: ("interrupted", [f"reason: {RUNNER_GONE}"]),
                     2: ("running", []), 3: ("interrupted", [f"reason: {RUNNER_GONE}"]),
                     4: ("interrupted", [f"reason: {RUNNER_GONE}"])}
    assert done.stdout.splitlines()[0] == "[study] 0/5 done, 1 running, 0 pending, 0 failed, 4 interrupted"
    assert [s.point for s in current_states(sweep) if s.state not in ("completed", *BUSY)] == [0, 1, 3, 4]


def test_resume_reruns_a_completed_point_whose_result_was_truncated(tmp_path, hpml, shared_sweep):
    """The real thing: a launched point completes, its result.json is cut in half afterwards (a full disk,
    a bad copy); status shows it failed with one line, `hpml resume` reruns exactly it, and it completes. The point
    is launched once per test run (test_config_migrations.py damages it too); this test changes its own copy."""
    sweep = own_copy(shared_sweep(*SMALL_TRAIN, timeout=300), tmp_path / "sweep")
    result = sweep / "points" / "0" / "result.json"
    text = result.read_text()
    result.write_text(text[: len(text) // 2])

    status = hpml("status", str(sweep), timeout=60)

    rows = rows_by_point(status.stdout)
    assert rows[0][0].split()[1] == "failed" and rows[0][1].startswith("reason: result.json: truncated JSON")
    resume = hpml("resume", str(sweep), timeout=300)
    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert "resuming 1 of 1 point(s)" in resume.stdout
    assert [s.state for s in current_states(sweep)] == ["completed"]
    assert (sweep / "points" / "0" / "attempts" / "0" / "result.json").read_text() == text[: len(text) // 2]


@pytest.mark.parametrize("damage_point", ["bad_yaml", "a_list", "no_config", "attempts_file", "previous_not_list"])
def test_resume_with_a_damaged_point_moves_nothing_and_says_so_in_one_line(tmp_path, hpml, compose_values,
                                                                         damage_point):
    """Every point to rerun is checked before any file is moved: a resume that stopped half-way used to leave a
    point's result and state moved to attempts/ with the manifest unchanged (a traceback). The first case through
    the command as users run it, the others through cli.main in this process (what resume refuses is the claim)."""
    if damage_point != "bad_yaml":
        hpml = in_this_process(tmp_path)
    sweep = make_sweep(tmp_path / "sweep", 2, dead_pid())
    good = yaml.safe_dump(compose_values(["workload.synthetic_samples=8", "workload.batch_size=4"]))
    for point in range(2):
        folder = sweep / "points" / str(point)
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(good)
        (folder / "state.json").write_text(json.dumps({"state": "failed", "reason": "exit 1"}))
    bad = sweep / "points" / "1"
    expected = {"bad_yaml": "points/1/config.yaml: not valid YAML: ",
                "a_list": "points/1/config.yaml: not a YAML mapping but list",
                "no_config": "points/1/config.yaml is missing or not a file",
                "attempts_file": "points/1/attempts is not a folder",
                "previous_not_list": "manifest.json: point 1's previous_job_ids is str, not a list"}[damage_point]
    if damage_point == "bad_yaml":
        (bad / "config.yaml").write_text(":\n  - [unclosed")
    elif damage_point == "a_list":
        (bad / "config.yaml").write_text("- 1\n- 2\n")
    elif damage_point == "no_config":
        (bad / "config.yaml").unlink()
    elif damage_point == "attempts_file":
        (bad / "attempts").write_text("x")
    else:
        manifest = json.loads((sweep / "manifest.json").read_text())
        manifest["points"][1]["previous_job_ids"] = "abc"
        (sweep / "manifest.json").write_text(json.dumps(manifest))

    resume = hpml("resume", str(sweep), timeout=120)

    assert resume.returncode == 2 and len(resume.stderr.strip().splitlines()) == 1, resume.stderr
    assert resume.stderr.startswith(f"hpml: error: cannot resume {sweep}: ") and expected in resume.stderr
    assert resume.stderr.rstrip().endswith("nothing was moved or submitted")
    assert all((sweep / "points" / str(p) / "state.json").is_file() for p in range(2))
    assert not (sweep / "points" / "0" / "attempts").exists()
