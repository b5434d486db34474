"""Published hardware peaks as Python data (gpu_peaks.py); the YAML files beside it are Hydra's `hardware` group.

Hydra reads only the YAML files of this folder; this package lets workers and the analysis import the GPU peak
table without Hydra (conf/ modules import without it).
"""
