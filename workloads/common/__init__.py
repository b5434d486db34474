"""Instrumentation shared by every workload: config loading, distributed set-up, timing, result writing."""
