"""Instrumented workloads: hpml's torchrun forks them from its agent (fork_entry.py); by hand, or under a plain
torchrun, `python -m hpml.workloads.<name> --config <point>/config.yaml` runs the same worker.

One package per workload (workloads/<name>/: its __main__ and the helpers only it uses); what every workload
shares lives in workloads.common. Workloads never import the launcher, Hydra, OmegaConf or the analysis; they
may import conf/ (their own schema) and contract/ (what result.json's writer and readers agree on).
"""

from hpml.workloads.startup import pause_if_worker_start

pause_if_worker_start()  # before a worker imports torch (startup.py says why)
