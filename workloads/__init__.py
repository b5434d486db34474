"""Instrumented workloads started by torchrun as `python -m workloads.<name> --config <point>/config.yaml`.

Workloads never import the launcher, Hydra or the analysis; shared instrumentation lives in workloads.common.
"""
