"""The paleo workload: per-layer forward timing for PALEO (see __main__.py)."""
