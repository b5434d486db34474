"""Every classification model hpml trains, evaluates or analyses: hpml's own (names.py, small_cnn.py) and
torchvision's, built by name in build.py. Nothing is imported here, so the launcher can read names.py
without importing torch."""
