"""hpml: distributed deep-learning scaling studies on SLURM clusters (and on a laptop).

Every part of hpml is imported under this one name (`hpml.launcher`, `hpml.workloads.train`, ...), never as a
top-level package of its own: a user's project has its own `models/`, `tools/` or `analysis/`, and a generic
top-level name would collide with it (and with any installed distribution of that name).
"""
