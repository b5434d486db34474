"""Per-layer statistics of a classification model: parameters, activations, MACs and FLOPs per leaf-module
call (layers.py, counting.py), receptive fields of conv/pool chains (receptive_field.py), GoogLeNet's
inception module naive vs with 1x1 reductions (inception.py); `hpml model-stats` renders them (tables.py,
figure.py; cli.py, the `hpml model-stats` command). docs/studies/model-analysis.md says what is counted and how.

layers, counting, receptive_field and inception import torch only (a workload may use them); tables and
figure render through analysis/ and are for the command's side (cli.py). Nothing is imported here, so
importing one module does not pull in the others.
"""
