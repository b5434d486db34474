"""What every workload shares: reading its config slice, the worker scaffold, distributed set-up, timing,
environment, the result writer and epoch checkpoints."""
