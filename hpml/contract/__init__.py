"""What the writers and the readers of a sweep directory and its result.json files agree on.

The launcher writes manifest.json, config.yaml and state.json; the workloads write result.json; the analysis
reads them all. Every name, number and rule the two sides must share has its one home here:

    contract.sweep_layout   file names and the points/<n>/ layout of a sweep directory
    contract.jsonio         atomic JSON writes (temporary file, fsync, rename), tolerant reads, utc_now
    contract.result_format  result.json's schema version, its statuses, the timed-epoch rule, reasons in one line
    contract.result_schema  the envelope every result.json must hold, checked by report and status alike
    contract.collectives    the bus factor of each collective (nccl-tests' busbw)

Standard library only, and no import of conf/, launcher/, workloads/ or analysis/: every side may import it
without breaking the boundaries of DESIGN.md.
"""
