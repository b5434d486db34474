"""hpml's Hydra sweeper (Hydra finds plugins in the hydra_plugins namespace package)."""
