"""One backend interface, one registry (launcher/backends/, issue 32 item 3): every cluster kind has exactly one
backend, nothing outside the registry branches on the kind, and `hpml resume` runs launch's own preflight, so a
sweep whose data is gone since the launch is refused in one line before anything is moved or queued."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from hpml.conf.schema import ClusterKind
from hpml.contract.sweep_layout import ATTEMPTS_DIR, MANIFEST_FILE, RESULT_FILE, STATE_FILE
from hpml.launcher.backends import BACKENDS, Backend, backend_of_manifest
from tests.conftest import run_hpml

REPO = Path(__file__).resolve().parent.parent


def test_every_cluster_kind_has_one_backend_and_says_where_it_runs():
    assert set(BACKENDS) == set(ClusterKind)
    for kind, backend in BACKENDS.items():
        assert isinstance(backend, Backend) and backend.kind == kind
        assert isinstance(backend.runs_on_this_host, bool) and isinstance(backend.packs_points, bool)
    assert backend_of_manifest({}).kind == ClusterKind.local  # a manifest from before "cluster" was recorded


def test_nothing_outside_the_backends_branches_on_the_cluster_kind():
    """A kind is named (ClusterKind.local, ClusterKind.slurm) only by its backend: what differs between kinds
    (where the points run, which cluster keys a kind allows) is an attribute of the backend, asked through the
    registry. No file is exempt."""
    allowed = set((REPO / "hpml" / "launcher" / "backends").rglob("*.py"))
    naming = []
    for path in (REPO / "hpml").rglob("*.py"):  # every module of the package
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "ClusterKind" and node.attr in ClusterKind.__members__:
                naming.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert naming == []



def test_the_guide_to_adding_a_backend_lists_every_member_of_the_interface():
    """docs/adding-a-backend.md's table has a row for each attribute and method of Backend (it once left out
    job_log)."""
    guide = (REPO / "docs" / "adding-a-backend.md").read_text()
    members = set(Backend.__annotations__) | {name for name, value in vars(Backend).items()
                                                if callable(value) and not name.startswith("_")}
    assert {"runs_on_this_host", "packs_points", "job_log"} <= members
    assert sorted(name for name in members if f"| `{name}" not in guide and f", `{name}(" not in guide) == []

def imported_modules(tree: ast.AST) -> list:
    """Every module an import statement names, `from package import module` included (as package.module)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_no_module_outside_the_backends_imports_a_backends_own_code():
    """Callers go through the seam (launcher.backends: the registry, the Backend interface); a backend's folder
    (launcher/backends/<kind>/) is imported only from inside launcher/backends/, as submitit's executors are."""
    backends = REPO / "hpml" / "launcher" / "backends"
    folders = sorted(p.name for p in backends.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(kind.value for kind in ClusterKind)  # each kind's code in one folder
    own = tuple(f"hpml.launcher.backends.{folder}" for folder in folders)
    naming = []
    for path in (REPO / "hpml").rglob("*.py"):
        if backends in path.parents:
            continue
        for module in imported_modules(ast.parse(path.read_text())):
            if module in own or module.startswith(tuple(f"{name}." for name in own)):
                naming.append(f"{path.relative_to(REPO)}: {module}")
    assert naming == []


@pytest.fixture(scope="module")
def digits_sweep(tmp_path_factory, digits_data) -> tuple:
    """A finished one-point train sweep on a copy of the digits: (sweep folder, its data root, its folder)."""
    root = tmp_path_factory.mktemp("resume_preflight")
    data = root / "data"
    shutil.copytree(digits_data / "cifar", data)
    done = run_hpml(["launch", "experiment=tiny/train", "workload.dataset=cifar10", f"workload.data_root={data}",
                     "workload.model=hpml_cnn"], cwd=root, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return (root / "sweeps" / "latest").resolve(), data, root


def test_resume_refuses_a_sweep_whose_data_is_gone_before_anything_is_moved(digits_sweep):
    sweep, data, root = digits_sweep
    point = sweep / "points" / "0"
    (point / RESULT_FILE).unlink()  # the point never finished: resume would rerun it
    (point / STATE_FILE).unlink()
    shutil.rmtree(data)
    manifest_before = (sweep / MANIFEST_FILE).read_text()
    done = run_hpml(["resume", str(sweep)], cwd=root, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    assert lines[0].startswith(f"hpml: error: cannot resume {sweep}: workload.data_root=") and str(data) in lines[0]
    assert lines[0].endswith("nothing was moved or submitted")
    assert not (point / ATTEMPTS_DIR).exists() and (sweep / MANIFEST_FILE).read_text() == manifest_before
    assert json.loads(manifest_before)["points"][0]["job_id"]  # the launch's job id, kept
