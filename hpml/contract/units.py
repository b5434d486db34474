"""The units every side reports in, defined once: a GB is 1e9 bytes (datasheets, nccl-tests' busbw, GB/s
everywhere in hpml), a GiB 2**30 bytes (memory sizes: a GPU's 80 GiB, /proc/meminfo, peak memory in every
report), a MiB 2**20 and a KiB 2**10 bytes."""

GB = 1e9
GIB = 2 ** 30
MIB = 2 ** 20
KIB = 2 ** 10
MS_PER_S = 1e3  # seconds -> milliseconds, as tables show step and kernel times
