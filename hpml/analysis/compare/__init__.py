"""`hpml compare`: two (or more) sweeps side by side, with a stated confidence. report.py is the command (its
docstring says what it does); comparisons.py matches and compares, outputs.py writes the tables and the forest
plot, gate.py decides --fail-on-regression's exit status; match.py, metrics.py, study_metrics.py and usable.py
say what is matched and which numbers are compared."""
