"""The units every side reports in, defined once: a GB is 1e9 bytes (datasheets, nccl-tests' busbw, GB/s
everywhere in hpml), a GiB 2**30 bytes (memory sizes: a GPU's 80 GiB, /proc/meminfo)."""

GB = 1e9
GIB = 2 ** 30
MS_PER_S = 1e3  # seconds -> milliseconds, as tables show step and kernel times
