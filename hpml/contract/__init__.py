"""What the writers and the readers of a sweep directory and its result.json files agree on.

The launcher writes manifest.json, config.yaml and state.json; the workloads write result.json; the analysis
reads them all. Every name, number and rule the sides must share has its one home here:

    contract.sweep_layout      file names and the points/<n>/ layout of a sweep directory
    contract.jsonio            atomic JSON writes (temporary file, fsync, rename), bounded tolerant reads, utc_now
    contract.files             only regular files are read (a FIFO or a device would block or never end)
    contract.folders           whether a folder a command is about to write can be made, asked before writing
    contract.cli_args          every verb's argument errors: one `hpml: error:` line, exit 2
    contract.result_format     result.json's schema version, its statuses, the timed-epoch rule, reasons in one line
    contract.result_schema     the envelope every result.json must hold, checked by report and status alike
    contract.idx_data          the idx files of Fashion-MNIST and MNIST: names, checksums, headers, checks
    contract.cache_dir         the one folder of hpml's caches ($HPML_CACHE_DIR, XDG, ~/.cache/hpml)
    contract.units             GB (1e9 bytes), GiB (2**30 bytes), milliseconds per second
    contract.rates             TFLOP/s and GB/s of a measured time, as workers and reports compute them
    contract.limits            upper bounds of sizes and repeat counts (workload schemas, saved models)
    contract.step_efficiency   MFU and the verdict on what bounds a training step, for worker and report
    contract.collectives       the bus factor of each collective (nccl-tests' busbw)
    contract.train_format      the train workload's vocabulary: its step phases, per-worker and per-device batch
    contract.quantize_format   the quantize workload's result and the formulas its worker and report share
    contract.vecadd_format     the cuda_vecadd workload's bytes and bandwidths, shared by worker and report
    contract.telemetry_format  the GPU telemetry sidecar files the samplers write and the report reads
    contract.saved_model       a trained model kept for `hpml evaluate`, and a training run's evaluation record

Standard library only, and no import of conf/, launcher/, workloads/ or analysis/ (tests/test_contract.py checks
it): every side may import it without breaking the boundaries of docs/architecture.md.
"""
