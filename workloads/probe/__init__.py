"""The hardware probe workload (python -m workloads.probe): measured peaks of each GPU; see __main__.py."""
