"""The report kit (hpml/report_kit/, issue 42 item 3): every report writes its numbers with one set of formatters,
defined once, checked here against hand-written values; and no report module defines its own copy again."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from hpml.report_kit import numbers
from hpml.report_kit.numbers import is_missing, mean_std, ms, number, percent, row_mean_std, si, three_digits

REPO = Path(__file__).resolve().parent.parent
REPORT_FOLDERS = ("hpml/analysis", "hpml/report_kit", "hpml/models/stats", "hpml/evaluation")
# names the copies went by before the kit: _num/num (number), _pm (mean_std), number_text (si)
FORMER_NAMES = {"num": "number", "pm": "mean_std", "number": "number", "si": "si"}


def formatter(name: str) -> str:
    """The kit's name for a function name of a report module: _num -> number, ms_text -> ms, _mean_std -> mean_std."""
    bare = name.lstrip("_").removesuffix("_text")
    return FORMER_NAMES.get(bare, bare)


def writes_text(node: ast.AST) -> bool:
    """A function that returns text (annotated `-> str`): a formatter, not a check such as _number(value) -> bool."""
    return isinstance(node, ast.FunctionDef) and isinstance(node.returns, ast.Name) and node.returns.id == "str"


def test_no_formatter_is_defined_twice():
    kit = {node.name for node in ast.parse(Path(numbers.__file__).read_text()).body if writes_text(node)}
    defined = {}
    for folder in REPORT_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if writes_text(node) and formatter(node.name) in kit:
                    defined.setdefault(formatter(node.name), []).append(f"{path.relative_to(REPO)}:{node.name}")
    twice = {name: where for name, where in defined.items() if len(where) > 1}
    assert twice == {}
    assert set(defined) == kit  # each once, in the kit


@pytest.mark.parametrize("value, args, text", [
    (0.912, (".1f", 100, " %"), "91.2 %"),
    (1234.5, (",.0f",), "1,234"),  # round half to even: 1234.5 -> 1234
    (None, (".2f",), "—"),
    (math.nan, (".2f",), "—"),
    ("", (".2f",), "—"),
    (7, (".4g",), "7"),
])
def test_number(value, args, text):
    assert number(value, *args) == text


def test_mean_std_ms_percent_and_missing_values():
    assert mean_std(1.2345, 0.0512, ".3f", n=3) == "1.234 ± 0.051 (n=3)"  # 1.2345 is 1.23449999... in binary
    assert mean_std(0.5, math.nan, ".2f", 100, n=1) == "50.00 (n=1)"  # one run: no spread
    assert mean_std(math.nan, 0.1, ".2f") == "—"
    assert row_mean_std({"tta_s_mean": 10.0, "tta_s_std": 1.5, "converged": 4}, "tta_s", ".2f", n_key="converged") \
        == "10.00 ± 1.50 (n=4)"
    assert ms(0.0123) == "12.30" and ms(0.0123, ".4g", "–") == "12.3" and ms(None) == "—"
    assert percent(0.0712) == "7.1%" and percent(-0.0712, signed=True) == "-7.1%" and percent(0.5, signed=True) == "+50.0%"
    assert is_missing(None) and is_missing(math.nan) and not is_missing(0.0)


@pytest.mark.parametrize("value, kwargs, text", [
    (0.01234, {}, "0.0123"),
    (12345.6, {}, "12,346"),
    (999.4, {}, "999"),
    (150.0, {"wide_from": 100}, "150"),
    (2.5, {"scale": 1e3}, "2,500"),
    (math.nan, {"missing": "–"}, "–"),
])
def test_three_digits(value, kwargs, text):
    assert three_digits(value, **kwargs) == text


@pytest.mark.parametrize("value, unit, text", [
    (3211264, "", "3.21 M"), (1728, "", "1.73 k"), (0, "", "0"), (5, "B", "5 B"), (2.5e12, "FLOP", "2.5 TFLOP"),
    (math.nan, "", "–"),
])
def test_si(value, unit, text):
    assert si(value, unit) == text


def hpml_imports(path: Path) -> set:
    """The hpml parts a module imports (anywhere in it, a function's lazy import included): {"contract", ...}."""
    parts = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        parts |= {name.split(".")[1] for name in names if name.startswith("hpml.")}
    return parts


@pytest.mark.parametrize("part, allowed", [
    ("report_kit", {"report_kit", "contract"}),  # below every report
    ("models", {"models", "contract", "report_kit"}),  # below conf, which imports it (issue 42: models imported
])                                                     # analysis' kit and conf.limits, arrows pointing up)
def test_the_kit_and_models_import_nothing_above_them(part, allowed):
    above = {f"{path.relative_to(REPO)}: {sorted(hpml_imports(path) - allowed)}"
             for path in (REPO / "hpml" / part).rglob("*.py") if hpml_imports(path) - allowed}
    assert above == set()
