"""The linter, as CI runs it: ruff with the rules pyproject.toml selects ([tool.ruff]: pyflakes, pycodestyle's
errors, import order), over the whole tree but docs/results. The same check as the pre-commit hook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    """ruff comes with hpml's test extras (setup.cfg)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
