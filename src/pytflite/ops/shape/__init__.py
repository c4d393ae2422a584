"""Shape and data-movement kernels: RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, RANK, FILL, RANGE, BROADCAST_TO,
BROADCAST_ARGS, TRANSPOSE, CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, TILE, REVERSE_V2.

None of them computes on values: they copy elements into a new arrangement. Prepare works the output
shapes out and everything a copy needs (permutations, slices, broadcast views); invoke is one NumPy copy
per output. Quantized values are copied as stored: TFLite requires equal input/output quantization
only of EXPAND_DIMS, FILL, PACK, UNPACK and int8 CONCATENATION (int16 CONCATENATION: zero points 0), and
ignores the output's parameters elsewhere. The one exception is uint8 CONCATENATION, whose inputs
quantized unlike the output are requantized (ConcatenationWithScaling) through a 256-entry table each.

When an output shape depends on a tensor's values (a shape, axis, perm or multiples tensor), a constant
value is resolved in prepare and a computed one makes the output dynamic: it is resized in invoke before
the copy. RESHAPE instead reports OUTPUT_SHAPE_NOT_KNOWN and the runtime prepares the downstream nodes
after it ran (TFLite's lazy prepare).

SHAPE and RANK outputs are known in prepare even when their input is not constant (shapes are known in
prepare, even those of dynamic tensors): prepare marks them persistent read-only, and the runtime's one
folding mechanism computes them right after prepare, as it does for any node whose inputs are all constant
(core/subgraph.py); downstream kernels then read them as constants. No kernel writes values in prepare.

Modules: reshape.py, squeeze.py, expand_dims.py, shape_rank.py (SHAPE, RANK), fill.py, range_op.py
(RANGE), broadcast.py (BROADCAST_TO, BROADCAST_ARGS), transpose.py, concatenation.py, split.py (SPLIT,
SPLIT_V), pack.py, unpack.py, tile.py and reverse.py (REVERSE_V2) register the kernels; common.py holds the
element types, helpers and the plain-copy invoke they share.
"""

from . import (  # noqa: F401  (importing them registers their kernels)
    broadcast,
    concatenation,
    expand_dims,
    fill,
    pack,
    range_op,
    reshape,
    reverse,
    shape_rank,
    split,
    squeeze,
    tile,
    transpose,
    unpack,
)
