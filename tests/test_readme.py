"""A new user's first hour (issue 11, class 8): what the README shows is what hpml does. Its quickstart
listing is the preset's file, its sweep-folder layout and report header are those of a real run, its set-up
commands are the ones CI runs, and a preset added where it says is found and runs."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
HPML_SCRIPT = Path(sys.executable).parent / "hpml"  # the console script the README's install puts on PATH
# Lines of the layout block for files that a plain local run need not leave: each says when it appears.
CONDITIONAL = ("SLURM only", "after `hpml resume`", "keep_checkpoint", "on GPUs", "save_model=true")


def code_blocks() -> List[Tuple[str, str, str]]:
    """(text before the block, language, body) for every fenced block of the README."""
    return [(README[:m.start()], m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```$", README, flags=re.S | re.M)]


def block_after(marker: str) -> str:
    (body,) = [body for before, _, body in code_blocks() if before.rstrip().endswith(marker)]
    return body


def layout_lines() -> List[Tuple[str, bool]]:
    """(glob of a path in a sweep folder, whether it may be absent) from the 'Where results live' block."""
    body = block_after("at the newest):")
    lines = []
    for line in body.splitlines():
        path = line.split()[0]
        lines.append((re.sub(r"<\w+>", "*", path), any(word in line for word in CONDITIONAL)))
    return lines


def folders_leading_to(pattern: str) -> List[str]:
    """points/*/logs/x.out -> points/, points/*/, points/*/logs/"""
    parts = pattern.rstrip("/").split("/")[:-1]
    return ["/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1)]


def hpml(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The `hpml` console script, as a user runs it (not `python -m`, which would put cwd on sys.path)."""
    return subprocess.run([str(HPML_SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


USER_PRESET = """# @package _global_
# A user's own preset: the tiny training point under another name.
defaults:
  - override /workload: train
  - override /cluster: local
sweep:
  name: my_first
workload:
  synthetic_samples: 64
  epochs: 2
"""


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """A preset in the user's own ./conf/experiment/, launched and reported as the README says."""
    home = tmp_path_factory.mktemp("user")
    (home / "conf" / "experiment").mkdir(parents=True)
    (home / "conf" / "experiment" / "my_first.yaml").write_text(USER_PRESET)
    launched = hpml(home, "launch", "experiment=my_first")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    reported = hpml(home, "report", "sweeps/latest")
    assert reported.returncode == 0, reported.stdout + reported.stderr
    (sweep,) = [d for d in (home / "sweeps").iterdir() if d.name != "latest"]
    return sweep, reported.stdout


def test_the_quickstart_listing_is_the_preset_file():
    assert block_after("answers. `hpml/conf/experiment/quickstart.yaml`:") == \
        (REPO / "hpml" / "conf" / "experiment" / "quickstart.yaml").read_text()


def test_every_file_of_a_real_sweep_is_in_the_layout_and_every_layout_line_is_there(user_run):
    sweep, _ = user_run
    lines = layout_lines()
    found = sorted(str(p.relative_to(sweep)) + ("/" if p.is_dir() else "") for p in sweep.rglob("*"))
    for pattern, may_be_absent in lines:
        if not may_be_absent:
            assert any(fnmatch.fnmatch(path, pattern) for path in found), f"README lists {pattern}, run has {found}"
    for path in found:
        described = any(fnmatch.fnmatch(path, pattern)  # a listed file or folder
                        or (pattern.endswith("/") and fnmatch.fnmatch(path, pattern + "*"))  # inside a listed folder
                        or any(fnmatch.fnmatch(path, prefix) for prefix in folders_leading_to(pattern))
                        for pattern, _ in lines)
        assert described, f"{path} of a real sweep is not in the README's layout"


def test_the_report_header_is_the_real_reports(user_run):
    _, markdown = user_run
    (header,) = [line for line in block_after("e.g. for the quickstart").splitlines() if line.startswith("|")]
    assert header in markdown.splitlines()


def test_the_set_up_commands_are_the_ones_ci_runs():
    ci = (REPO / ".ci" / "run").read_text()
    (install,) = re.findall(r'pip install( -e)? "\.\[test\]"', README)
    assert f'pip install -q{install} ".[test]"' in ci  # same install mode: editable in both or neither
    (tests,) = [body for _, _, body in code_blocks() if "tests/run.sh" in body]
    assert tests.index("apt-get update") < tests.index("apt-get install")


def test_a_preset_added_to_the_checkouts_conf_experiment_is_found(tmp_path):
    """The README's own promise for its editable install: no reinstall after adding a preset."""
    preset = REPO / "hpml" / "conf" / "experiment" / f"_readme_test_{tmp_path.name}.yaml"
    preset.write_text(USER_PRESET.replace("my_first", "added_in_checkout"))
    try:
        planned = hpml(tmp_path, "launch", f"experiment={preset.stem}", "--dry-run", timeout=120)
    finally:
        preset.unlink()
    assert planned.returncode == 0, planned.stderr
    assert "hpml: sweep added_in_checkout: 1 point(s)" in planned.stdout


def test_the_workers_import_the_code_the_cli_imports(user_run):
    """Even from a folder with a conf/ of its own (the user's presets), the workers ran hpml's checkout."""
    import json

    import hpml.launcher as launcher

    sweep, _ = user_run
    result = json.loads((sweep / "points" / "0" / "result.json").read_text())
    assert result["environment"]["hpml"]["code_root"] == str(Path(launcher.__file__).resolve().parents[2])
