"""The exact (erf) float GELU compiled by numba (ops/jit.py): gelu._gelu_erf_block's recipe in one pass
over the elements, where the NumPy path makes about twenty calls over scratch rows.

The arithmetic is the NumPy path's: |x| clamped to 40, t = s / (|x| + s) with s = 1 / 0.35 in float32,
the tail sum_k Q[k] t^(k+1) in float32 (the powers by repeated products; the sum here in order k = 0..8,
where the NumPy path's BLAS product may order or fuse it otherwise: within an ulp of the tail), times the
Gaussian factor exp(-|x|^2 / 2) in float64 rounded once to float32, times |x|; then
(x - min(x, 0)) - tail. A NaN input gives NaN as there. Imported only through jit.compiled.

The float64 exp is _exp_of_nonpositive's, not libm's: a call to libm's exp per element keeps the loop
from vectorizing and cost two thirds of the time. Its result is within a few float64 ulps of the true
value, far below the float32 rounding that follows.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..jit import OPTIONS
from .gelu import _GELU_A_MAX, _GELU_Q, _GELU_T_SCALE

_F32 = numba.float32
_ZERO = np.float32(0)
_Q = tuple(_GELU_Q.tolist())
_A_MAX, _T_SCALE = np.float32(_GELU_A_MAX), np.float32(_GELU_T_SCALE)  # (0-d arrays there)

# exp(y) = 2^n exp(r), n = round(y / ln 2), r = y - n ln 2 with ln 2 split in two (the high part has
# zeros in its last bits, so n * high is exact for the n used here), |r| <= ln(2) / 2.
_INVERSE_LN2 = 1.0 / math.log(2.0)
_LN2_HIGH = float.fromhex("0x1.62e42fee00000p-1")
_LN2_LOW = float.fromhex("0x1.a39ef35793c76p-33")
# exp(r) by its Taylor series to r^13 / 13!: the first term left out is below 5e-18 relative at |r| <=
# ln(2) / 2, under a float64 ulp
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(14))
# Below this y, exp(y) times the tail (|tail| < 1.2) times |x| (<= 40) rounds to a float32 0 (under the
# smallest subnormal, 1.4e-45): y is clamped to it, which keeps 2^n in the table
_LOWEST_EXPONENT = -120.0
_FIRST_POWER = -176  # 2^n for n from here to 0 (round(-120 / ln 2) = -173)
_POWERS_OF_TWO = np.array([2.0**n for n in range(_FIRST_POWER, 1)])


@numba.njit(inline="always", **OPTIONS)
def _exp_of_nonpositive(y, powers_of_two):
    """exp(y) for y <= 0 (below _LOWEST_EXPONENT: exp(_LOWEST_EXPONENT)) in arithmetic that vectorizes:
    no call, 2^n from a table."""
    y = y if y > _LOWEST_EXPONENT else _LOWEST_EXPONENT  # (a NaN too: n must index the table)
    n = np.floor(y * _INVERSE_LN2 + 0.5)
    r = (y - n * _LN2_HIGH) - n * _LN2_LOW
    series = _TAYLOR[13]
    for k in range(12, -1, -1):
        series = series * r + _TAYLOR[k]
    return series * powers_of_two[np.int64(n) - _FIRST_POWER]


@numba.njit(numba.void(numba.types.Array(_F32, 1, "C", readonly=True), _F32[::1]), **OPTIONS)
def gelu_erf(x, out):
    coefficients = np.array(_Q, np.float32)
    powers_of_two = _POWERS_OF_TWO
    for i in range(out.size):
        value = x[i]
        a = abs(value)
        a = a if a < _A_MAX else _A_MAX  # (numba's min keeps a NaN; the output is NaN anyway)
        t = _T_SCALE / (a + _T_SCALE)
        power = t
        tail = coefficients[0] * power
        for k in range(1, 9):
            power = power * t
            tail = tail + coefficients[k] * power
        square = np.float64(a) * np.float64(a)
        tail = np.float32(np.float64(tail) * _exp_of_nonpositive(square * -0.5, powers_of_two))
        tail = tail * a
        low = value if value <= _ZERO else _ZERO  # clip(x, -inf, 0): -0.0 stays -0.0, NaN stays NaN in x
        out[i] = (value - low) - tail
