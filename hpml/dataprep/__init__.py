"""Data sets made from data already on the machine (nothing is downloaded): `hpml data <name>`.

    digits_cifar.py  scikit-learn's bundled 8x8 digits written in CIFAR-10's on-disk python format (so the train
                     workload's real CIFAR-10 reader reads them), and an out-of-distribution image folder
    idx_sets.py      Fashion-MNIST's and MNIST's official .gz files checked (torchvision's MD5s) and unpacked where
                     torchvision's datasets.FashionMNIST / MNIST read them, and a rotated out-of-distribution copy
    cli.py           the `hpml data` command
"""
