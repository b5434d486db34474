"""The names of hpml's own classification models (stdlib only: the launcher's preflight checks a
`workload.model` without importing torch; models/__init__.py builds them)."""

from __future__ import annotations

from typing import Dict

# name -> what it is, for error messages and docs
HPML_MODELS: Dict[str, str] = {
    "hpml_cnn": "three 3x3 convolutions (32, 64, 128 channels, batch norm, ReLU, 2 max-pools) and one linear "
                "layer: a real CNN small enough to train to a target on a CPU in seconds (digits, CI)",
}
