"""Turns a Hydra sweep into submitit jobs (local processes or SLURM job arrays) that run torchrun.

The launcher never imports a workload: it starts one by its module name (workloads.<name>).
"""
