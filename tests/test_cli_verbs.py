"""`hpml` dispatches every verb from one table (issue 25, item 6): each verb is listed in the usage, runs its
own module's command (its --help is that command's, by prog name), and no verb's code lives in launcher/
unless it is the launcher's own (launch, status, resume); the launcher imports no workload."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from hpml.launcher.cli import USAGE, VERBS, main
from tests.conftest import run_hpml

REPO = Path(__file__).resolve().parent.parent


def test_the_usage_lists_every_verb_in_the_tables_order():
    commands = USAGE.split("\nexit status:\n")[0]  # the exit statuses follow the commands
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line[2] != " "]
    assert listed == list(VERBS)


@pytest.mark.parametrize("verb", sorted(VERBS.keys() - {"launch"}))  # launch's --help is Hydra's (test_launch_checks)
def test_each_verb_runs_its_own_command(verb, capsys):
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    assert done.value.code == 0
    assert f"usage: hpml {verb}" in capsys.readouterr().out


def test_an_unknown_verb_is_refused_with_the_usage(capsys):
    assert main(["nope"]) == 2
    assert capsys.readouterr().err == f"hpml: unknown command 'nope'\n{USAGE}"


# each verb's own module, whose main the dispatch calls (hpml/launcher/cli.py's _<verb> functions)
VERB_MODULES = {"report": "hpml.analysis.report", "compare": "hpml.analysis.compare.report",
                "evaluate": "hpml.evaluation.cli", "data": "hpml.dataprep.cli", "model-stats": "hpml.models.stats.cli"}


@pytest.mark.parametrize("verb", sorted(VERB_MODULES))
def test_one_shot_verbs_run_without_the_cyclic_collector_and_give_it_back(verb, monkeypatch):
    """evaluate, data and model-stats compute and end: they run with the collector paused (their imports and models
    are long-lived objects it would walk again and again); report and compare keep it (they draw many figures,
    which hold reference cycles). After the verb the collector is as it was, also when the verb fails."""
    import gc
    import importlib

    seen = []

    def recorded(argv):
        seen.append(gc.isenabled())
        raise FileNotFoundError("the verb's own failure")  # a user error: main turns it into exit status 2

    monkeypatch.setattr(importlib.import_module(VERB_MODULES[verb]), "main", recorded)
    assert gc.isenabled()
    assert main([verb]) == 2
    assert seen == [verb not in ("evaluate", "data", "model-stats")] and gc.isenabled()
    assert VERBS[verb].collector_paused is (verb in ("evaluate", "data", "model-stats"))


def test_verbs_that_wait_on_a_sweep_keep_the_collector():
    # launch and resume wait on their points for hours: garbage made while they poll must still be collected
    assert not any(VERBS[verb].collector_paused for verb in ("launch", "resume", "status"))


def imported_modules(path: Path) -> set:
    tree = ast.parse(path.read_text())
    found = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return found | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


def test_verbs_of_other_packages_live_with_them_and_the_launcher_imports_no_workload():
    dispatched = imported_modules(REPO / "hpml" / "launcher" / "cli.py")
    others = {module for module in dispatched if not module.startswith(("hpml.launcher", "hpml.conf"))}
    assert others >= {"hpml.analysis.report", "hpml.evaluation.cli", "hpml.dataprep.cli", "hpml.models.stats.cli"}
    assert not (REPO / "hpml" / "launcher" / "model_stats_cli.py").exists()
    for path in (REPO / "hpml" / "launcher").glob("*.py"):
        assert not [m for m in imported_modules(path) if m.startswith("hpml.workloads")], path


@pytest.mark.parametrize("args, says", [
    (["report", ""], "hpml report: argument dir: '' is not allowed: a folder path"),
    (["report", "somewhere", "--out", " "], "hpml report: argument --out: ' ' is not allowed: a folder path"),
    (["evaluate", "somewhere", "--images", ""], "hpml evaluate: argument --images: '' is not allowed"),
    (["status"], "hpml status: the following arguments are required: sweep_dir"),
    (["resume", "a", "b"], "hpml resume: unrecognized arguments: b"),
    (["data", "digits", "--root", "r", "--train-size", "many"], "hpml data digits: argument --train-size: invalid "
                                                                "int value: 'many'"),
], ids=["report-dir", "report-out", "evaluate-images", "status", "resume", "data"])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args, says):
    # Path('') is the current directory: an empty folder argument would read or write wherever hpml ran
    done = run_hpml(args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"hpml: error: {says}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


# A launch that is refused or only printed submits nothing, so it starts without submitit (and its asyncio, ssl,
# logging.config: about a third of such a start's CPU, docs/results/test-suite-speed.md, "stop 59") and without
# torch; the module that submits imports it (launcher/backends/local/runner.py, slurm/submit.py). `hpml status`
# composes nothing, so it starts without Hydra too (launcher/errors.py imports Hydra's errors where it reads one).
IMPORTED = ("import sys; from hpml.launcher.cli import main; code = main(sys.argv[1:]); "
            "print(code, sorted(m for m in ('submitit', 'torch', 'pandas', 'hydra') if m in sys.modules))")


@pytest.mark.parametrize("args, code, imported", [
    (["launch", "resources.nodes=0"], 2, ["hydra"]),
    (["launch", "--dry-run"], 0, ["hydra"]),
    (["status", "no_such_sweep"], 2, []),
], ids=["refused", "dry-run", "status"])
def test_a_verb_that_submits_nothing_imports_neither_submitit_nor_torch(tmp_path, args, code, imported):
    done = subprocess.run([sys.executable, "-c", IMPORTED, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.splitlines()[-1] == f"{code} {imported}", done.stdout + done.stderr
