"""hpml: distributed deep-learning scaling studies on SLURM clusters (and on a laptop).

Every part of hpml is imported under this one name (`hpml.launcher`, `hpml.workloads.train`, ...), never as a
top-level package of its own: a user's project has its own `models/`, `tools/` or `analysis/`, and a generic
top-level name would collide with it (and with any installed distribution of that name). The folders stay at the
repository's root (launcher/, workloads/, conf/, analysis/, ...); setup.py maps each under hpml.
"""

import os as _os

# A checkout run without installing it (PYTHONPATH=<checkout>, as the GPU machines' scripts run it): its folders sit
# beside this package, not inside it, and no installer mapped them. Found there as an installed copy finds them
# inside. Only a checkout's layout (setup.py beside the folders) is taken; an installed hpml has them inside.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout, "setup.py")) and _os.path.isdir(_os.path.join(_checkout, "launcher")):
    __path__.append(_checkout)  # noqa: F821 - a package's own __path__
