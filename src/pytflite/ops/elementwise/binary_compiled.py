"""Float32 ADD, SUB, MUL and DIV with their clamp in one call, compiled by numba (ops/jit.py).

TFLite clamps every float result to the activation's range ([lowest, max] without one, which turns
+-inf into +-FLT_MAX), so on NumPy each of these ops is two calls, the ufunc and the clamp, of about
0.25 us each on the small rows of a loop body; one call of a compiled loop costs about as much as one of
them. The arithmetic is the ufunc's (IEEE float32, no fast-math), the clamp TFLite's
min(max(x, low), high), which leaves NaN as it is. The operands are flat C-contiguous views of the same
size and the bounds a [low, high] array, all writable (numba's dispatch takes a read-only array more
slowly; a constant operand is copied once). Imported only through jit.compiled.
"""

from __future__ import annotations

import numba

from ..jit import OPTIONS

_FLAT = numba.float32[::1]
_SIGNATURE = numba.void(_FLAT, _FLAT, _FLAT, _FLAT)


def _clamped(operation):
    """The compiled out = clamp(operation(a, b)) over flat operands."""
    apply = numba.njit(inline="always", **OPTIONS)(operation)

    @numba.njit(_SIGNATURE, **OPTIONS)
    def kernel(a, b, bounds, out):
        low, high = bounds[0], bounds[1]
        for i in range(out.size):
            x = apply(a[i], b[i])
            out[i] = low if x < low else (high if x > high else x)

    return kernel


add = _clamped(lambda x, y: x + y)
subtract = _clamped(lambda x, y: x - y)
multiply = _clamped(lambda x, y: x * y)
divide = _clamped(lambda x, y: x / y)
