"""The tree's shape (issue 42): no module under hpml/ is longer than 400 lines (a longer one is split by what its
parts do), counted by tools/structure_numbers.py, the tool that gives the closing note's numbers; and that tool's
reading of docs/architecture.md's layer table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def structure_numbers():
    spec = importlib.util.spec_from_file_location("structure_numbers", REPO / "tools" / "structure_numbers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_no_module_under_hpml_is_longer_than_400_lines():
    tool = structure_numbers()
    found = tool.structure(REPO)
    assert tool.MAX_LINES == 400
    assert found.files == len(list((REPO / "hpml").rglob("*.py")))  # every module of the package is counted
    assert [(lines, path) for lines, path in found.modules if lines > tool.MAX_LINES] == []


def test_an_arrow_up_is_an_import_the_layer_table_does_not_allow():
    tool = structure_numbers()
    assert set(tool.ALLOWED) == {path.name for path in (REPO / "hpml").iterdir() if (path / "__init__.py").is_file()}
    assert tool.points_up("models", "analysis.latex") and tool.points_up("models", "conf.limits")  # before issue 42
    assert tool.points_up("evaluation", "analysis.results") and not tool.points_up("evaluation", "analysis.stats")
    assert not tool.points_up("launcher", "conf.schema") and not tool.points_up("conf", "conf.schema")
    assert not tool.points_up("report_kit", "contract.units") and tool.points_up("contract", "report_kit.numbers")


def test_no_import_points_up_the_layer_table():
    assert structure_numbers().structure(REPO).arrows_up == []
