"""The structure of hpml's code in numbers (issue 42's closing note): Python files and lines, the longest modules, and
the import arrows that point up, i.e. an import from one part to a part that docs/architecture.md's layer table
does not let it import (lazy imports inside functions count too).

    python tools/structure_numbers.py                 # this checkout: the parts under hpml/
    python tools/structure_numbers.py --root DIR      # another tree: the parts under DIR/hpml/, or DIR itself
                                                      # where the parts sit at its root (before issue 42's item 1)

tests/test_architecture.py runs the same counts on this checkout: no module over MAX_LINES, no arrow up.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

MAX_LINES = 400  # a module longer than this is split by what its parts do

# What each part may import besides itself (docs/architecture.md, "The layers"): a part name, or a module
# ("analysis.stats") where only that one module of the part is allowed.
ALLOWED: Dict[str, Tuple[str, ...]] = {
    "contract": (),
    "report_kit": ("contract",),
    "models": ("contract", "report_kit"),
    "dataprep": ("contract",),
    "conf": ("contract", "models"),
    "workloads": ("conf", "contract", "models", "dataprep"),
    "analysis": ("contract", "report_kit"),
    "evaluation": ("contract", "models", "report_kit", "analysis.stats"),
    "launcher": ("contract", "report_kit", "models", "dataprep", "conf", "analysis", "evaluation"),
}
PARTS = tuple(ALLOWED)


@dataclass
class Structure:
    files: int = 0
    lines: int = 0
    modules: List[Tuple[int, str]] = field(default_factory=list)  # (lines, path), longest first
    arrows_up: List[Tuple[str, str]] = field(default_factory=list)  # (module path, the hpml module it imports)


def package_root(root: Path) -> Path:
    """The folder that holds the parts: ROOT/hpml/, or ROOT itself for a tree whose parts sit at its root."""
    return root / "hpml" if (root / "hpml" / "launcher").is_dir() else root


def modules_of(parts_root: Path) -> List[Path]:
    """Every .py file of the parts, and the package's own __init__.py."""
    found = [path for part in PARTS if (parts_root / part).is_dir() for path in (parts_root / part).rglob("*.py")]
    init = parts_root / "__init__.py"
    if not init.is_file() and (parts_root / "hpml" / "__init__.py").is_file():
        init = parts_root / "hpml" / "__init__.py"  # the package folder of a tree whose parts sit at the root
    return sorted(found + ([init] if init.is_file() else []))


def hpml_imports(path: Path, parts_root: Path) -> List[str]:
    """The hpml modules a file imports, without the "hpml." prefix ("conf.schema", ...), anywhere in it: for
    `from hpml.analysis import latex` the module analysis.latex, for `from hpml.conf.schema import X` conf.schema."""
    def is_module(name: str) -> bool:
        path = parts_root.joinpath(*name.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if is_module(full.removeprefix("hpml.")) else node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return sorted(name.removeprefix("hpml.") for name in names if name.startswith("hpml."))


def points_up(part: str, imported: str) -> bool:
    """Whether part's import of the module `imported` ("analysis.latex") goes against the layer table."""
    target = imported.split(".")[0]
    if target == part or target not in ALLOWED:
        return False
    return not any(imported == allowed or imported.startswith(allowed + ".") or target == allowed
                   for allowed in ALLOWED[part])


def structure(root: Path) -> Structure:
    parts_root = package_root(root)
    result = Structure()
    for path in modules_of(parts_root):
        count = len(path.read_text().splitlines())
        shown = path.relative_to(root).as_posix()
        result.files += 1
        result.lines += count
        result.modules.append((count, shown))
        part = path.relative_to(parts_root).parts[0]
        if part not in ALLOWED:
            continue
        result.arrows_up += [(shown, name) for name in hpml_imports(path, parts_root) if points_up(part, name)]
    result.modules.sort(key=lambda item: (-item[0], item[1]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--longest", type=int, default=5)
    args = parser.parse_args()
    found = structure(args.root)
    print(f"python files: {found.files}")
    print(f"lines: {found.lines}")
    print(f"longest {args.longest} modules:")
    for count, path in found.modules[:args.longest]:
        print(f"  {count:5d}  {path}")
    over = [path for count, path in found.modules if count > MAX_LINES]
    print(f"modules over {MAX_LINES} lines: {len(over)}")
    print(f"import arrows that point up: {len(found.arrows_up)} imports in "
          f"{len({path for path, _ in found.arrows_up})} modules")
    for path, name in found.arrows_up:
        print(f"  {path} -> hpml.{name}")

if __name__ == "__main__":
    main()
