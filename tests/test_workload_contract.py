"""The workload contract, config side: the hooks HpmlConfig and the preflight call, the registry, the worker's
config slice (read through the launcher's own validation), and the import rules that keep conf/ acyclic and
workers free of Hydra and OmegaConf."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List

import pytest
import yaml

from hpml.conf.resources import ResourcesConfig
from hpml.conf.schema import config_from_dict
from hpml.conf.validation import MISSING, ConfigValueError, require, shown
from hpml.conf.workload import WORKLOAD_SCHEMAS
from hpml.conf.workload_contract import Backend, Device, Scaling, WorkloadConfig
from hpml.contract.result_format import SCALING_MODES
from hpml.launcher.preflight import config_problems
from hpml.workloads.common.point_config import WorkerSetup, read_point_config

REPO = Path(__file__).resolve().parents[1]


@dataclass
class CapConfig(WorkloadConfig):
    """A workload made up for these tests: at most `max_workers` workers, and a preflight that looks at a file."""

    max_workers: int = MISSING
    needs_file: str = MISSING

    def check_resources(self, resources: ResourcesConfig) -> None:
        super().check_resources(resources)
        require(resources.world_size <= self.max_workers, "resources.workers_per_node",
                f"at most workload.max_workers={self.max_workers} workers in all", resources.workers_per_node)

    def preflight_problems(self) -> List[str]:
        return [] if Path(self.needs_file).exists() else [f"workload.needs_file={self.needs_file}: no such file"]


@pytest.fixture
def cap_values(compose_values, monkeypatch, tmp_path):
    """A point of the made-up workload, registered the way a real one is: one line in WORKLOAD_SCHEMAS."""
    monkeypatch.setitem(WORKLOAD_SCHEMAS, "cap", CapConfig)
    values = compose_values(["resources.workers_per_node=2"])
    values["workload"] = {"name": "cap", "device": "auto", "backend": "auto", "max_workers": 2,
                          "needs_file": str(tmp_path / "absent")}
    return values


def test_hpml_config_reaches_the_workloads_own_resource_rule(cap_values):
    assert config_from_dict(cap_values).workload.max_workers == 2
    cap_values["workload"]["max_workers"] = 1
    with pytest.raises(ConfigValueError, match=r"resources.workers_per_node=2 is not allowed: at most "
                                               r"workload.max_workers=1 workers in all"):
        config_from_dict(cap_values)


def test_the_shared_backend_rule_holds_for_a_new_workload_too(cap_values):
    cap_values["workload"]["backend"] = "nccl"  # resources.gpus_per_node=0 by default
    with pytest.raises(ConfigValueError, match=r"workload.backend='nccl' is not allowed: gloo or auto when the "
                                               r"workers have no GPUs"):
        config_from_dict(cap_values)


def test_preflight_reaches_the_workloads_own_check(cap_values, tmp_path):
    config = config_from_dict(cap_values)
    problem = f"workload.needs_file={tmp_path / 'absent'}: no such file"
    assert config_problems([config, config]) == [problem]  # each problem once
    (tmp_path / "absent").write_text("")
    assert config_problems([config]) == []


def test_a_path_the_file_system_refuses_is_one_line_naming_its_key(cap_values, tmp_path, monkeypatch):
    """Path.exists / is_file / is_dir raise for a name too long or a folder without permission on the way (they
    only swallow 'no such file'); the preflight turns that into one line naming the key, for every workload."""
    long_name = tmp_path / ("a" * 300)
    cap_values["workload"]["needs_file"] = str(long_name)
    [problem] = config_problems([config_from_dict(cap_values)])
    assert problem.startswith("workload.needs_file='") and problem.endswith(
        "characters): the file system refuses to open it: File name too long")  # the name quoted cut short

    def denied(path, *args, **kwargs):  # root reads every folder, so the refusal is simulated
        raise PermissionError(13, "Permission denied", str(path))

    inside = tmp_path / "locked" / "model.pt"
    cap_values["workload"]["needs_file"] = str(tmp_path / "locked")
    monkeypatch.setattr(Path, "exists", lambda path: denied(inside))
    assert config_problems([config_from_dict(cap_values)]) == [
        f"workload.needs_file={shown(str(tmp_path / 'locked'))}: the file system refuses to open it "
        f"(at {shown(str(inside))}): Permission denied"]


@pytest.mark.parametrize("workload", ["train", "allreduce"])
def test_nccl_without_gpus_is_refused_before_launch_for_every_workload(compose_values, workload):
    """Before the contract, only synthetic refused this at planning time; train and allreduce failed in the
    worker."""
    values = compose_values([f"workload={workload}", "workload.backend=nccl"])
    with pytest.raises(ConfigValueError, match="workload.backend='nccl' is not allowed"):
        config_from_dict(values)
    values["workload"]["device"] = "cuda"  # the point's own GPUs are not counted: a local run may see some
    config_from_dict(values)


@pytest.mark.parametrize("device, backend, gpus, cuda_available, expected", [
    ("auto", "auto", 0, True, ("cpu", "gloo")),
    ("auto", "auto", 2, True, ("cuda", "nccl")),
    ("auto", "auto", 2, False, ("cpu", "gloo")),  # asked for GPUs, sees none: falls back as before
    ("cpu", "auto", 2, True, ("cpu", "gloo")),
    ("cuda", "gloo", 0, True, ("cuda", "gloo")),
])
def test_device_and_backend_resolution(device, backend, gpus, cuda_available, expected):
    workload = WorkloadConfig(name="x", device=Device(device), backend=Backend(backend))
    device_type = workload.device_type(gpus, cuda_available)
    assert (device_type, workload.backend_name(device_type)) == expected


def test_resolution_refuses_what_the_process_cannot_do():
    with pytest.raises(RuntimeError, match="workload.device=cuda but this worker sees no CUDA device"):
        WorkloadConfig(name="x", device=Device.cuda, backend=Backend.auto).device_type(1, False)
    with pytest.raises(RuntimeError, match="workload.backend=nccl needs GPUs"):
        WorkloadConfig(name="x", device=Device.cpu, backend=Backend.nccl).backend_name("cpu")


def test_every_registered_workload_has_its_yaml_its_worker_and_the_contract_fields(compose_values):
    for name, schema in WORKLOAD_SCHEMAS.items():
        assert issubclass(schema, WorkloadConfig), name
        assert (REPO / "hpml" / "conf" / "workload" / f"{name}.yaml").is_file(), name
        assert (REPO / "hpml" / "workloads" / name / "__main__.py").is_file(), name
        assert [f.name for f in dataclasses.fields(schema)][:3] == ["name", "device", "backend"]
        config = config_from_dict(compose_values([f"workload={name}"]))
        assert type(config.workload) is schema and config.workload.name == name


def test_hydras_workload_group_lists_the_yaml_files_only_and_they_are_the_registry(hpml):
    """conf/workload/ is a Python package too: its schema modules must not show up as config options."""
    done = hpml("launch", "--dry-run", "workload=nope")
    assert done.returncode == 2
    options = done.stderr.strip().split("available options: ")[1].split(" (set workload=")[0]
    assert options.split(", ") == sorted(WORKLOAD_SCHEMAS)


def test_scaling_modes_are_the_result_formats():
    assert tuple(mode.value for mode in Scaling) == SCALING_MODES


# --- the worker's slice -------------------------------------------------------------------------------------

def test_a_worker_gets_its_slice_and_the_file_as_written(tmp_path, compose_values):
    values = compose_values(["workload=allreduce", "sweep.seed=7", "resources.workers_per_node=3",
                             "resources.cpus_per_worker=2", "resources.nodes=2"])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.dump(values, Dumper=yaml.CSafeDumper, sort_keys=False))  # as the launcher writes it
    setup, raw = read_point_config(path)
    assert raw == values
    config = config_from_dict(values)
    assert setup == WorkerSetup(workload=config.workload, seed=7, world_size=6, gpus_per_node=0,
                                cpus_per_worker=2, telemetry=config.telemetry)
    assert setup.workload.min_bytes == values["workload"]["min_bytes"]


def test_a_worker_refuses_a_bad_config_with_the_launchers_own_line(tmp_path, compose_values, hpml):
    values = compose_values()
    values["resources"]["nodes"] = 0
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(values))
    worker = subprocess.run([sys.executable, "-m", "hpml.workloads.train", "--config", str(path)], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    launcher = hpml("launch", "--dry-run", "resources.nodes=0")
    assert worker.returncode != 0 and launcher.returncode == 2
    message = launcher.stderr.strip().removeprefix("hpml: error: ")
    assert message == "resources.nodes=0 is not allowed: an integer >= 1"
    assert worker.stderr.strip().splitlines()[-1] == f"hpml.conf.validation.ConfigValueError: {message}"


# --- import rules -------------------------------------------------------------------------------------------

def conf_modules() -> List[str]:
    modules = []
    for path in sorted((REPO / "hpml" / "conf").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules.append(".".join((parts[:-1] if parts[-1] == "__init__" else parts)))
    return modules


def imported_conf_modules(module: str) -> set:
    path = REPO / Path(*module.split("."))  # hpml.conf.x is hpml/conf/x
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found.update(name for name in names if name == "hpml.conf" or name.startswith("hpml.conf."))
    return found


def test_conf_has_no_import_cycle():
    graph = {module: imported_conf_modules(module) & set(conf_modules()) for module in conf_modules()}
    assert graph["hpml.conf.schema"] >= {"hpml.conf.workload", "hpml.conf.resources"}  # the graph is really read

    def visit(module: str, path: tuple) -> None:
        assert module not in path, f"import cycle: {' -> '.join(path + (module,))}"
        for imported in graph[module]:
            visit(imported, path + (module,))

    for module in graph:
        visit(module, ())


# What each module pulls in when it is imported alone: one Python process that, with nothing of hpml imported, forks a
# child per module; the child imports the module and reports the forbidden top-level names then in sys.modules. A
# child starts from its parent's modules, which hold none of the forbidden ones (checked), so what it reports is what
# the module imported: the claim of a fresh interpreter per module, without an interpreter start and (for the
# workers, whose parent imports torch first: torch is theirs to import) a torch import per module (issue 41).
IMPORTS_ALONE = """
import json, os, sys
forbidden, preload, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
def bad():
    return sorted(m for m in sys.modules if m.removeprefix("hpml.").split(".")[0] in forbidden)
for name in preload:
    __import__(name)
results = {"(parent)": bad()}
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            __import__(module)
            found = bad()
        except BaseException as error:
            found = [f"import failed: {error!r}"]
        os.write(write, json.dumps(found).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    results[module] = json.loads(data)
print(json.dumps(results))
"""


def imports_alone(modules: List[str], forbidden: List[str], preload: List[str]) -> dict:
    """{module: the forbidden names in sys.modules once it was imported alone} (IMPORTS_ALONE above)."""
    done = subprocess.run([sys.executable, "-c", IMPORTS_ALONE, json.dumps(forbidden), json.dumps(preload),
                           json.dumps(modules)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)
    assert results.pop("(parent)") == [], "the parent process holds a forbidden module before any child"
    return results


CONF_FORBIDDEN = ["hydra", "omegaconf", "launcher", "workloads", "analysis", "evaluation", "torch"]
WORKER_FORBIDDEN = ["hydra", "omegaconf", "launcher", "analysis"]


@pytest.fixture(scope="module")
def conf_imports() -> dict:
    return imports_alone(conf_modules(), CONF_FORBIDDEN, preload=[])


@pytest.fixture(scope="module")
def worker_imports() -> dict:
    return imports_alone([f"hpml.workloads.{workload}.__main__" for workload in sorted(WORKLOAD_SCHEMAS)],
                         WORKER_FORBIDDEN, preload=["torch"])


@pytest.mark.parametrize("module", conf_modules())
def test_each_conf_module_imports_alone_without_hydra(module, conf_imports):
    assert conf_imports[module] == [], f"importing {module} alone imports {conf_imports[module]}"


@pytest.mark.parametrize("workload", sorted(WORKLOAD_SCHEMAS))
def test_workers_import_no_hydra_omegaconf_launcher_or_analysis(workload, worker_imports):
    found = worker_imports[f"hpml.workloads.{workload}.__main__"]
    assert found == [], f"importing workload {workload}'s worker alone imports {found}"


def test_the_import_check_sees_what_a_module_imports():
    """The fork-per-module check reports an import it is shown (json imports no forbidden name; the launcher's
    config store module imports hydra's), and a child's import does not reach the next child."""
    found = imports_alone(["hpml.launcher.config_store", "json"], ["hydra", "launcher"], preload=[])
    assert {"hydra", "hpml.launcher", "hpml.launcher.config_store"} <= set(found["hpml.launcher.config_store"])
    assert found["json"] == []


@pytest.mark.parametrize("path", ["hpml/conf/schema.py", "hpml/launcher/preflight.py", "hpml/launcher/config_store.py"])
def test_the_generic_config_code_names_no_workload(path):
    """They reach workloads through the registry and the hooks only: no schema class, no conf.workload.<name>."""
    tree = ast.parse((REPO / path).read_text())
    schema_names = {schema.__name__ for schema in WORKLOAD_SCHEMAS.values()}
    named = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    named |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not named & schema_names
    assert not {m for m in modules if m and m.startswith("hpml.conf.workload.")}


@pytest.mark.parametrize("module", conf_modules())
def test_conf_imports_nothing_above_it_not_even_inside_a_function(module):
    """conf/ is the bottom of the config side: it may import contract/ and models/ (lower layers), never the
    launcher, the workloads, the analysis or evaluation, not even lazily (issue 32: quantize's check imported
    evaluation inside a function)."""
    path = REPO / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    above = ("launcher", "workloads", "analysis", "evaluation", "dataprep")
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            assert name.removeprefix("hpml.").split(".")[0] not in above, f"{module} imports {name}"
