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
from .gelu import GELU_A_MAX, GELU_Q, GELU_T_SCALE

_F32 = numba.float32
_ZERO = np.float32(0)
_Q = tuple(GELU_Q.tolist())
_A_MAX, _T_SCALE = np.float32(GELU_A_MAX), np.float32(GELU_T_SCALE)  # (0-d arrays there)

# exp(y) = 2^(k / 32) exp(r), k = round(32 y / ln 2), r = y - k ln(2) / 32 with ln 2 split in two (the
# high part has 33 significant bits, so k * high is exact for the k used here, |k| < 2^13), |r| <=
# ln(2) / 64; 2^(k / 32) = 2^(k >> 5) * 2^((k & 31) / 32), both from tables.
_STEPS = 32
_STEPS_OVER_LN2 = _STEPS / math.log(2.0)
_STEP_HIGH = float.fromhex("0x1.62e42fee00000p-1") / _STEPS
_STEP_LOW = float.fromhex("0x1.a39ef35793c76p-33") / _STEPS
_FRACTIONAL_POWERS = np.array([2.0 ** (j / _STEPS) for j in range(_STEPS)])
# exp(r) by its Taylor series to r^6 / 6!: the first term left out is below 4e-18 relative at |r| <=
# ln(2) / 64, under a float64 ulp
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(7))
# Below this y, exp(y) times the tail (|tail| < 1.2) times |x| (<= 40) rounds to a float32 0 (under the
# smallest subnormal, 1.4e-45): y is clamped to it, which keeps the powers in their tables
_LOWEST_EXPONENT = -120.0
_FIRST_POWER = -176  # 2^n for n from here to 0 (floor(round(-120 * 32 / ln 2) / 32) = -174)
_POWERS_OF_TWO = np.array([2.0**n for n in range(_FIRST_POWER, 1)])


@numba.njit(inline="always", **OPTIONS)
def _exp_of_nonpositive(y, powers_of_two, fractional_powers):
    """exp(y) for y <= 0 (below _LOWEST_EXPONENT: exp(_LOWEST_EXPONENT)) in arithmetic that vectorizes:
    no call, the powers of two from tables."""
    y = y if y > _LOWEST_EXPONENT else _LOWEST_EXPONENT  # (a NaN too: k must index the tables)
    k = np.floor(y * _STEPS_OVER_LN2 + 0.5)
    r = (y - k * _STEP_HIGH) - k * _STEP_LOW
    series = _TAYLOR[6]
    for i in range(5, -1, -1):
        series = series * r + _TAYLOR[i]
    steps = np.int64(k)
    return series * fractional_powers[steps & (_STEPS - 1)] * powers_of_two[(steps >> 5) - _FIRST_POWER]


@numba.njit(numba.void(numba.types.Array(_F32, 1, "C", readonly=True), _F32[::1]), **OPTIONS)
def gelu_erf(x, out):
    coefficients = np.array(_Q, np.float32)
    powers_of_two, fractional_powers = _POWERS_OF_TWO, _FRACTIONAL_POWERS
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
        tail = np.float32(
            np.float64(tail) * _exp_of_nonpositive(square * -0.5, powers_of_two, fractional_powers)
        )
        tail = tail * a
        low = value if value <= _ZERO else _ZERO  # clip(x, -inf, 0): -0.0 stays -0.0, NaN stays NaN in x
        out[i] = (value - low) - tail
