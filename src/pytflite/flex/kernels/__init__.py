"""pytflite's TF kernels, one module per family; importing one registers its kernels."""

from . import (  # noqa: F401
    arrays,
    blocks,
    checkpoints,
    gradients,
    image_boxes,
    image_color,
    images,
    indexing,
    linalg,
    lists,
    math,
    random,
    regex,
    shapes,
    signal,
    string_hashes,
    string_numbers,
    strings,
    tables,
    unicode,
)
