"""`hpml compare`: two (or more) sweeps side by side, with a stated confidence (analysis.compare.report)."""
