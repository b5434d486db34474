"""torchrun's agent as hpml starts it: `python -P -m hpml.launcher.torchrun_agent <torchrun's arguments>` is
`torchrun <torchrun's arguments>` (torch's own console script, which calls the same torch.distributed.run.main),
with Python's cyclic garbage collector paused while the agent imports torch.

Importing torch makes hundreds of thousands of long-lived objects, and every time the collector's thresholds trip
during that import it walks all of them, looking for cycles a module import does not make. The workers start the
same way for the same reason (hpml/workloads/startup.py). The collector is back on, with what the import made
frozen (`gc.freeze`: out of the collector's generations), before torchrun parses its arguments, so the agent runs
torchrun's code as torch's console script would; the workers it forks inherit the frozen set. What it saves a
point: docs/decisions.md ("torchrun's agent imports torch without the cyclic GC").

The launcher never imports this module (its import of torch is inside main); it names it in the command it runs
(launcher/torchrun.py).
"""

import sys

from hpml.contract.collector import cycle_collection_paused


def main() -> None:
    sys.argv[0] = "torchrun"  # its usage and error lines name the command users know, as torch's console script does
    with cycle_collection_paused(frozen_after=True):
        from torch.distributed.run import main as torchrun
    torchrun()  # parses sys.argv[1:]; a failed worker raises, and the agent exits 1 with torchrun's message


if __name__ == "__main__":
    main()
