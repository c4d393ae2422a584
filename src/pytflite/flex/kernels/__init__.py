"""pytflite's TF kernels, one module per family; importing one registers its kernels."""

from . import checkpoints, gradients, lists, math  # noqa: F401
