"""hybrid_inputs' asymmetric row quantization compiled by numba (ops/jit.py): what
AsymmetricRowQuantizer does in about twenty NumPy calls, one pass over each row for its range and one
for its values.

The steps and roundings are _asymmetric_row's and _round_rows' (see hybrid_inputs): the range widened
to include 0, the scale float32(high - low) / 255 in double, the zero point of the end that loses less,
rounded half away from zero, the inverse float32(1 / scale); each value x * inverse in float32, rounded
as NEON's blocks of 8 and std::round in the tail, clamped. Rows that are not finite, or whose scale is 0
or infinite, are left to the NumPy path. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from .hybrid_inputs import BELOW_HALF, BLOCK, HALF

_F32 = numba.float32
_ZERO = np.float32(0)
_ONE = np.float32(1)
_LOW, _HIGH = np.float32(-128), np.float32(127)


def _key(value: float) -> int:
    """The integer whose order is the float32's: its bits, the magnitude bits flipped when negative."""
    bits = int(np.array(value, np.float32).view(np.int32))
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


# the keys of -inf and +inf: a NaN's key lies beyond them (below -inf with its sign bit set, else above)
_NEGATIVE_INFINITY, _POSITIVE_INFINITY = _key(-np.inf), _key(np.inf)
_MAGNITUDE = np.int32(0x7FFFFFFF)
_SIGN_SHIFT = np.int32(31)


@numba.njit(inline="always", **OPTIONS)
def _float_of(key, scratch):
    """The float32 whose _key is `key` (the mapping is its own inverse), through a 1-element scratch."""
    scratch[0] = key ^ ((key >> _SIGN_SHIFT) & _MAGNITUDE)
    return scratch.view(np.float32)[0]


# the values quantized: a kernel's input, read-only where it is a model constant (as when folding)
_VALUES = (numba.types.Array(_F32, 2, "C", readonly=True), _F32[:, ::1])


@numba.njit(
    [numba.boolean(values, _F32[:, ::1], _F32[:], numba.int64[:], numba.boolean) for values in _VALUES],
    **OPTIONS,
)
def quantize_rows_asymmetric(values, out, scales, zero_points, centered):
    """quantize_rows_asymmetric(values, centered, out) into out [rows, size], scales [rows] and
    zero_points [rows]; False (and the outputs partly written) when a row needs the NumPy path.

    A row's range is found on the integer keys of its floats (_key), whose min and max vectorize where
    float ones would not (IEEE's NaN rules keep the compiler from reordering them): a NaN or an infinity
    shows as a key at or beyond an infinity's, and goes to the NumPy path."""
    rows, size = values.shape
    blocked = size - size % BLOCK
    scratch = np.empty(1, np.int32)
    for r in range(rows):
        row = values[r]
        lowest = np.int32(0)  # the key of 0.0: the range includes 0
        highest = np.int32(0)
        keys = row.view(np.int32)
        for i in range(size):  # in int32 throughout: a wider type would not vectorize as well
            bits = keys[i]
            key = np.int32(bits ^ ((bits >> _SIGN_SHIFT) & _MAGNITUDE))
            lowest = min(lowest, key)
            highest = max(highest, key)
        if lowest <= _NEGATIVE_INFINITY or highest >= _POSITIVE_INFINITY:
            return False
        low = _float_of(lowest, scratch)
        high = _float_of(highest, scratch)
        target = out[r]
        if low == high:  # a row of zeros: scale 1, zero point 0, values 0
            scales[r] = _ONE
            zero_points[r] = 0
            for i in range(size):
                target[i] = _ZERO
            continue
        spread = high - low  # float32, as in C
        scale = np.float64(spread) / 255.0
        scale32 = np.float32(scale)
        if not np.isfinite(spread) or scale32 == _ZERO:
            return False
        low_scaled = np.float64(low) / scale
        high_scaled = np.float64(high) / scale
        if 128.0 + abs(low_scaled) < 127.0 + abs(high_scaled):
            zero_point = -128.0 - low_scaled
        else:
            zero_point = 127.0 - high_scaled
        zero_point = min(max(zero_point, -128.0), 127.0)
        whole = np.trunc(zero_point)
        if abs(zero_point - whole) >= 0.5:
            whole += np.copysign(1.0, zero_point)
        nudged = np.int64(whole)
        inverse = np.float32(1.0 / np.float64(scale32))
        scales[r] = scale32
        zero_points[r] = nudged
        offset = np.float32(nudged)
        lowest, highest = (_LOW - offset, _HIGH - offset) if centered else (_LOW, _HIGH)
        for i in range(size):
            p = row[i] * inverse
            q = np.trunc(p + np.copysign(HALF if i < blocked else BELOW_HALF, p))
            if not centered:
                q = q + offset
            if q < lowest:
                q = lowest
            if q > highest:
                q = highest
            target[i] = q
    return True


@numba.njit(
    [
        numba.boolean(
            values,
            _F32[:, ::1],
            _F32[::1],
            numba.int64[::1],
            numba.boolean,
            numba.types.Array(_F32, 1, "C", readonly=True),
            _F32[:, ::1],
        )
        for values in _VALUES
    ],
    **OPTIONS,
)
def quantize_rows_with_factors(values, out, scales, zero_points, centered, channel_scales, factors):
    """quantize_rows_asymmetric, then factors [rows, channels] = channel scale * the row's scale in
    float32 (hybrid_compiled.scale_back's factors): what a hybrid kernel multiplies its exact sums by,
    so that scaling back is one NumPy product."""
    if not quantize_rows_asymmetric(values, out, scales, zero_points, centered):
        return False
    for r in range(values.shape[0]):
        scale, row = scales[r], factors[r]
        for c in range(channel_scales.size):
            row[c] = channel_scales[c] * scale
    return True
