"""The local backend, all of its code in this folder: backend.py (the Backend the registry holds), runner.py (the
points as processes of this host) and preflight.py (this machine's cores and GPUs)."""

from hpml.launcher.backends.local.backend import LocalBackend

__all__ = ["LocalBackend"]
