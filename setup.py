"""hpml is one package, hpml/ (launcher, workloads, conf, analysis, ...), plus Hydra's plugin namespace
hydra_plugins/, which Hydra finds only at the top level. tools/ and tests/ are scripts and tests run from the
checkout, never installed. A checkout on PYTHONPATH (the GPU machines run it so) imports the same package."""

from setuptools import find_namespace_packages, setup

setup(packages=find_namespace_packages(include=["hpml", "hpml.*", "hydra_plugins", "hydra_plugins.*"],
                                      exclude=["*.__pycache__"]))
