"""Slicing and padding: SLICE, STRIDED_SLICE, PAD, PADV2, MIRROR_PAD, DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE.

These kernels only move elements, so they copy raw values of any element type their TFLite kernel
accepts (quantized values keep their quantization). Prepare turns begin/size/end/strides/paddings into
NumPy slice tuples when those tensors are constant; invoke is then one slicing copy into the output. A
computed index tensor makes the output dynamic (its shape depends on values): the plan is made at
invoke and the output resized first.

STRIDED_SLICE follows TFLite's index arithmetic exactly: the ellipsis and new-axis masks are expanded
into an "effective" input shape, begin/end are normalised and clamped per axis (to [0, n] going forward,
[-1, n-1] going backward), masks override them, and shrunk axes are dropped from the output. With
constant input, begin, end and strides the subgraph computes the result once after prepare, into a
persistent constant, as TFLite does.

Modules: slices.py (SLICE, DYNAMIC_UPDATE_SLICE), strided_slice.py, padding.py (PAD, PADV2, MIRROR_PAD),
reverse_sequence.py; common.py what they share.
"""

from . import padding, reverse_sequence, slices, strided_slice  # noqa: F401  (importing them registers their kernels)
