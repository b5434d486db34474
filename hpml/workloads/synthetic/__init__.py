"""The synthetic workload: Horovod's synthetic benchmark on torch.distributed (see __main__.py)."""
