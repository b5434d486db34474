"""The allreduce workload: an all-reduce bandwidth micro-benchmark (see __main__.py)."""
