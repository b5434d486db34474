"""The hardware probe workload (python -m hpml.workloads.probe): measured peaks of each GPU; see __main__.py."""
