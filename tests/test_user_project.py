"""hpml from inside a user's own project (issue 32, item 1; issue 45, item 4): a folder holding a Python package for
each name hpml's folders have (launcher, workloads, conf, analysis, models, evaluation, dataprep, contract, tools) and
for the libraries hpml's children import first (hpml itself, submitit, hydra), each raising on import, and an
installed distribution named `models`; from there every verb works, as the README's console script runs it, and no
process hpml starts (the CLI, the submitit job locally and under SLURM, torchrun, the workers, the report job)
imports the user's code (launcher/child_python.py: `python -P`). The user's own presets in ./conf/experiment/ are
still found, although ./conf is a package that raises."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HPML_SCRIPT = Path(sys.executable).with_name("hpml")
# Every top-level name hpml installed before it moved under hpml.*, and the checkout's tools/
SHADOWING = ("launcher", "workloads", "conf", "analysis", "models", "evaluation", "dataprep", "contract", "tools")
# The packages a child process imports before any of hpml's code runs: `python -m submitit.core._submit` (submitit,
# then hpml to unpickle the job, hydra through the config), the report job's `python -m hpml.launcher.cli`
LIBRARIES = ("hpml", "submitit", "hydra")

USER_PRESET = """# @package _global_
# The user's own preset: hpml's small CNN on the first 256 digits for two epochs, its model kept for `hpml evaluate`.
defaults:
  - override /workload: train
  - override /cluster: local
sweep:
  name: my_project
workload:
  model: hpml_cnn
  dataset: cifar10
  data_root: data/digits
  max_samples: 256
  batch_size: 64
  epochs: 2
  save_model: true
"""


def install_models_distribution(site: Path) -> None:
    """A distribution named `models` as pip leaves one in site-packages: the package and its .dist-info."""
    (site / "models").mkdir(parents=True)
    (site / "models" / "__init__.py").write_text("raise RuntimeError('the installed models distribution was imported')\n")
    info = site / "models-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: models\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("models/__init__.py,,\nmodels-1.0.dist-info/METADATA,,\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """(the user's folder, the environment that has the installed `models` distribution on its path)."""
    home = tmp_path_factory.mktemp("user_project")
    for name in SHADOWING + LIBRARIES:
        (home / name).mkdir()
        (home / name / "__init__.py").write_text(f"raise RuntimeError('the user\\'s {name} package was imported')\n")
    (home / "conf" / "experiment").mkdir()
    (home / "conf" / "experiment" / "my_project.yaml").write_text(USER_PRESET)
    site = tmp_path_factory.mktemp("site")
    install_models_distribution(site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return home, env


def hpml(project, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    home, env = project
    return subprocess.run([str(HPML_SCRIPT), *args], cwd=home, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_shadowing_packages_and_the_distribution_are_really_there(project):
    """The set-up can fail: from the project's folder with `python -c`, its own packages and the distribution win."""
    home, env = project
    for name in ("models", "conf", "tools", *LIBRARIES):
        done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=home, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 1 and "RuntimeError" in done.stderr
    found = subprocess.run([sys.executable, "-c", "import importlib.metadata as m; print(m.version('models'))"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() == "1.0", found.stderr


def test_nothing_of_the_checkout_is_importable_by_a_generic_name():
    """Every part is inside the package: `import launcher` or `import tools` finds nothing of hpml's. Asked of the
    installed package (no PYTHONPATH: a checkout put on it, as the GPU run scripts do, lists its tools/ too)."""
    code = ("import importlib.util as u; print([n for n in %r if u.find_spec(n) is not None]); "
            "import hpml.launcher.cli, hpml.workloads.train.__main__, hpml.conf.schema") % (SHADOWING,)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_verb_works_from_the_users_project(project):
    home, _ = project
    data = hpml(project, "data", "digits", "--root", "data/digits", "--jpeg-folder", "data/digits_jpeg")
    assert data.returncode == 0, data.stdout + data.stderr

    launched = hpml(project, "launch", "experiment=my_project")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    (sweep,) = [d for d in (home / "sweeps").iterdir() if d.name != "latest"]
    result = json.loads((sweep / "points" / "0" / "result.json").read_text())
    assert result["status"] == "ok" and result["config"]["sweep"]["name"] == "my_project"  # the user's preset
    assert result["environment"]["hpml"]["code_root"] == str(REPO)  # the workers imported hpml's checkout

    status = hpml(project, "status", str(sweep))
    assert status.returncode == 0 and "completed" in status.stdout, status.stdout + status.stderr

    # resume runs a point again: the submitit job, torchrun and the worker start from the user's folder once more
    kept = sweep / "kept_result.json"
    shutil.move(sweep / "points" / "0" / "result.json", kept)
    (sweep / "points" / "0" / "state.json").unlink()
    resumed = hpml(project, "resume", str(sweep))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((sweep / "points" / "0" / "result.json").read_text())["status"] == "ok"

    reported = hpml(project, "report", str(sweep))
    assert reported.returncode == 0 and (sweep / "report" / "report.md").is_file(), reported.stdout + reported.stderr

    evaluated = hpml(project, "evaluate", str(sweep), "--images", "data/digits_jpeg/val")
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr

    stats = hpml(project, "model-stats", "resnet18", "--input", "3x32x32")
    assert stats.returncode == 0 and "resnet18" in stats.stdout, stats.stdout + stats.stderr
    for done in (data, launched, status, resumed, reported, evaluated, stats):
        assert "was imported" not in done.stdout + done.stderr
    logs = "".join(path.read_text(errors="replace") for path in sweep.rglob("*") if path.is_file()
                   and path.suffix in (".out", ".err", ".log"))
    assert "was imported" not in logs


def test_a_built_wheel_holds_hpml_alone_with_its_configs_and_kernel_sources(tmp_path):
    """The installed (not editable) layout: every module under hpml/, the YAML configs and the CUDA sources as
    package data, and no top-level package but hpml and Hydra's hydra_plugins namespace."""
    import zipfile

    source = tmp_path / "src"
    source.mkdir()
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for folder in ("hpml", "hydra_plugins", "tools"):  # tools/ sits beside the package and must stay out of the wheel
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (tmp_path / "dist").glob("hpml-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"hpml", "hydra_plugins"}
    for needed in ("hpml/launcher/cli.py", "hpml/workloads/train/__main__.py", "hpml/conf/config.yaml",
                   "hpml/conf/experiment/quickstart.yaml", "hpml/conf/experiment/tiny/train.yaml",
                   "hpml/workloads/cuda_vecadd/kernels/vecadd.cu", "hydra_plugins/hpml_sweeper/hpml_sweeper.py"):
        assert needed in names, needed
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert "hpml = hpml.launcher.cli:entry" in zipfile.ZipFile(wheel).read(entry[0]).decode()


def test_a_checkout_that_is_not_installed_imports_under_hpml_too(tmp_path):
    """The GPU machines run the checkout with PYTHONPATH=<checkout> and no install (docs/results/*/run_*.sh): the
    package is the checkout's hpml/ folder itself (python -S: no site-packages, no editable finder)."""
    done = subprocess.run([sys.executable, "-S", "-c", "import hpml.launcher.cli as c, hpml.contract.units as u; "
                           "print(c.__file__, u.GB)"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(REPO / "hpml" / "launcher" / "cli.py"), "1000000000.0"]


def test_the_package_is_one_real_folder_with_no_mapping():
    """hpml/ holds every part of hpml (issue 42): setup.py maps no folder under another name (package_dir) and no
    module edits a package's __path__, so a tool that reads imports follows hpml.launcher to hpml/launcher/."""
    assert "package_dir" not in (REPO / "setup.py").read_text() + (REPO / "setup.cfg").read_text()
    editing = [str(path.relative_to(REPO)) for folder in ("hpml", "hydra_plugins") for path in (REPO / folder).rglob("*.py")
               if "__path__" in path.read_text()]
    assert editing == []
    for part in ("launcher", "workloads", "conf", "analysis", "contract", "dataprep", "evaluation", "models"):
        assert (REPO / "hpml" / part / "__init__.py").is_file(), part
        assert not (REPO / part).exists(), f"{part}/ is at the repository's root again"
