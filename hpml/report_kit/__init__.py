"""The kit every report is written with, below everything that writes one (analysis/, evaluation/,
models/stats/): the Section shape and its writer (sections.py), LaTeX tables (latex.py), figures (figures.py)
and number formatting (numbers.py: every report's numbers, written once). It reads no result and imports no
other hpml part but contract/, so a report of model statistics (models/stats/) uses it without importing
analysis/."""
