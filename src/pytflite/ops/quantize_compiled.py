"""DEQUANTIZE of a per-tensor quantized 8/16-bit input compiled by numba (ops/jit.py): one pass where
the NumPy path makes three calls. The arithmetic is quantize._affine_blocked's: the first `blocked`
elements as float(q) * scale + offset (TFLite's optimized kernel's blocks of 8, two float32 roundings),
the rest as (float(q) - zero point) * scale (its exact formula; the difference of two small integers is
exact in float32). Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from .jit import OPTIONS

_F32 = numba.float32


@numba.njit(
    [
        numba.void(values[::1], _F32, _F32, _F32, numba.int64, _F32[::1])
        for values in (numba.int8, numba.uint8, numba.int16)
    ],
    **OPTIONS,
)
def dequantize(q, scale, offset, zero_point, blocked, out):
    for i in range(blocked):
        out[i] = np.float32(q[i]) * scale + offset
    for i in range(blocked, q.size):
        out[i] = (np.float32(q[i]) - zero_point) * scale
