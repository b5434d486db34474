"""The one thing setup.cfg cannot say: hpml's folders live at the repository's root but install under the hpml name
(`hpml.launcher` is launcher/, `hpml.workloads.train` is workloads/train/), so no top-level package of a generic
name (models, tools, conf, ...) is installed to collide with a user's project (issue 32). setuptools' editable
install (PEP 660) honours the mapping: the checkout's folders are imported in place, and nothing else of the
checkout (tools/, tests/) is importable."""

from setuptools import find_namespace_packages, setup

# The repository's folders that are hpml's code, each installed as hpml.<folder>
FOLDERS = ("launcher", "workloads", "conf", "analysis", "contract", "dataprep", "evaluation", "models")

subpackages = find_namespace_packages(include=[pattern for folder in FOLDERS for pattern in (folder, f"{folder}.*")],
                                      exclude=["*.__pycache__"])
setup(
    packages=["hpml"] + [f"hpml.{name}" for name in subpackages] + ["hydra_plugins", "hydra_plugins.hpml_sweeper"],
    package_dir={"hpml": "hpml", **{f"hpml.{folder}": folder for folder in FOLDERS}},
)
