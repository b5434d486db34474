"""`hpml evaluate SWEEP_DIR --images DIR`: every model a sweep's training runs saved, scored on an image folder.

    models.py    find points/*/model.pt, check the saved dict (contract/saved_model.py), rebuild the network
    images.py    the image folder: class folders matched to the model's classes by name, the transform
    accuracy.py  top-1 of one model on the folder, batch-wise, on CUDA when there is one
    report.py    per-model and per-hardware tables as report_kit.sections Sections
    cli.py       the command
"""
