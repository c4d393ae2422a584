"""Requant's float64 path compiled by numba (ops/jit.py): one pass from the exact accumulators to the
quantized output, where the NumPy path makes five (cast, scale, add, cast, clamp, cast).

The arithmetic is the float64 path's (requant.py, FloatMap): value = product * scale + constant per
channel, each step a float64 rounding that the map's bounds prove exact, so its floor is the rounded,
lifted output; clamped to the lifted bounds, which are not negative (the lift sees to it), the cast's
truncation is that floor; then the lift is taken away. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS

_OUTPUTS = (numba.int8, numba.uint8, numba.int16)
_I64 = numba.int64
# the per-channel scale and constant: read-only (the model's shared constants), Requant passes them so
_CHANNELS = numba.types.Array(numba.float64, 1, "C", readonly=True)


@numba.njit(inline="always", **OPTIONS)
def _lifted_floor(value, low, high, lift):
    """floor(clamp(value, low, high)) - lift: the bounds are not negative, so the cast's truncation is
    the floor."""
    if value < low:
        value = low
    if value > high:
        value = high
    return np.int32(value) - lift


@numba.njit(
    [
        numba.void(product[:, ::1], _CHANNELS, _CHANNELS, _I64, _I64, _I64, output[:, ::1])
        for product in (numba.float32, numba.float64)
        for output in _OUTPUTS
    ],
    **OPTIONS,
)
def requantize(product, scale, constant, lowest, highest, lift, out):
    """out [pixels, C] = floor(clamp(product * scale + constant, lowest, highest)) - lift, per channel
    (0 <= lowest <= highest)."""
    low = np.float64(lowest)
    high = np.float64(highest)
    for r in range(product.shape[0]):
        values = product[r]
        target = out[r]
        for c in range(values.size):
            target[c] = _lifted_floor(np.float64(values[c]) * scale[c] + constant[c], low, high, lift)


@numba.njit(
    [numba.void(numba.float64[:, ::1], _I64, _I64, _I64, output[:, ::1]) for output in _OUTPUTS],
    **OPTIONS,
)
def finish(values, lowest, highest, lift, out):
    """out = floor(clamp(values, lowest, highest)) - lift, for values the product already scaled."""
    low = np.float64(lowest)
    high = np.float64(highest)
    for r in range(values.shape[0]):
        row = values[r]
        target = out[r]
        for c in range(row.size):
            target[c] = _lifted_floor(row[c], low, high, lift)
