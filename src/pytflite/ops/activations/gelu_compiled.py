"""The exact (erf) float GELU compiled by numba (ops/jit.py): gelu._gelu_erf_block's recipe in one pass
over the elements, where the NumPy path makes about twenty calls over scratch rows.

The arithmetic is the NumPy path's: |x| clamped to 40, t = s / (|x| + s) with s = 1 / 0.35 in float32,
the tail sum_k Q[k] t^(k+1) in float32 (the powers by repeated products; the sum here in order k = 0..8,
where the NumPy path's BLAS product may order or fuse it otherwise: within an ulp of the tail), times the
Gaussian factor exp(-|x|^2 / 2) in float64 rounded once to float32, times |x|; then
(x - min(x, 0)) - tail. A NaN input gives NaN as there. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from .gelu import _GELU_A_MAX, _GELU_Q, _GELU_T_SCALE

_F32 = numba.float32
_ZERO = np.float32(0)
_Q = tuple(_GELU_Q.tolist())
_A_MAX, _T_SCALE = np.float32(_GELU_A_MAX), np.float32(_GELU_T_SCALE)  # (0-d arrays there)


@numba.njit(numba.void(numba.types.Array(_F32, 1, "A", readonly=True), _F32[::1]), **OPTIONS)
def gelu_erf(x, out):
    coefficients = np.array(_Q, np.float32)
    for i in range(out.size):
        value = x[i]
        a = min(abs(value), _A_MAX)
        t = _T_SCALE / (a + _T_SCALE)
        power = t
        tail = coefficients[0] * power
        for k in range(1, 9):
            power = power * t
            tail = tail + coefficients[k] * power
        square = np.float64(a) * np.float64(a)
        tail = np.float32(np.float64(tail) * np.exp(square * -0.5))
        tail = tail * a
        low = value if value <= _ZERO else _ZERO  # clip(x, -inf, 0): -0.0 stays -0.0, NaN stays NaN in x
        out[i] = (value - low) - tail
