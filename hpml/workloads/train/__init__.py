"""The train workload: DDP or DataParallel training of a torchvision classifier (see __main__.py)."""
