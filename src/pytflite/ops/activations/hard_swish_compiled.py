"""The float HARD_SWISH compiled by numba (ops/jit.py): hard_swish._hard_swish_block's arithmetic in one
pass over the elements, where the NumPy path makes five passes over the tensor (add, clip, two products,
the tail). The same float32 operations in the same order: x * (1/6) times clamp(x + 3, 0, 6) for the
elements in whole blocks of 4, (x * clamp) * (1/6) for the last size % 4, as TFLite's x86 build rounds;
a NaN stays NaN through the clamp, as NumPy's clip leaves it. Imported only through jit.compiled."""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from .common import SIX, THREE, ZERO
from .hard_swish import ONE_SIXTH

# the NumPy path's constants, as scalars (0-d arrays there)
_ZERO, _THREE, _SIX, _ONE_SIXTH = (np.float32(c) for c in (ZERO, THREE, SIX, ONE_SIXTH))


@numba.njit(inline="always", **OPTIONS)
def _relu6_of_x_plus_3(value):
    clamped = value + _THREE
    if clamped < _ZERO:
        clamped = _ZERO
    elif clamped > _SIX:
        clamped = _SIX
    return clamped


@numba.njit(**OPTIONS)
def hard_swish(x, out):
    """HARD_SWISH of the flat float32 array `x` into `out` (same size)."""
    size = x.size
    blocks_end = size - size % 4
    for i in range(blocks_end):
        out[i] = (x[i] * _ONE_SIXTH) * _relu6_of_x_plus_3(x[i])
    for i in range(blocks_end, size):
        out[i] = (x[i] * _relu6_of_x_plus_3(x[i])) * _ONE_SIXTH
