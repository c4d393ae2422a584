"""The integer arithmetic of the quantized kernels as LiteRT's code computes it: multiplications by a
quantized multiplier, rounding divisions by a power of two, the activation clamp."""

from __future__ import annotations

import numpy as np

from ..quant.fixed_point import saturating_rounding_doubling_high_mul


def _divide_by_pot_x86(x: np.ndarray, exponent) -> np.ndarray:
    """gemmlowp's scalar RoundingDivideByPOT on int32 values for any exponent, as x86 code computes it:
    exponents outside [0, 31] (which TFLite's DIV and SUB can produce) shift by their low 6 bits for the
    int64 mask and by their low 5 bits for the int32 shift. Used on every host: AArch64's shifts by a
    register also take the count mod 64 (X registers) and mod 32 (W registers); armv7's, which give 0 or
    the sign from 32 on, are not reproduced."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = wrap32((np.int64(1) << (exponent & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (exponent & 31)) + ((x & mask) > threshold)


def mbqm_smaller_than_one(x: np.ndarray, multiplier: int, shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplierSmallerThanOneExp: no left shift, whatever the sign of `shift`."""
    return _divide_by_pot_x86(saturating_rounding_doubling_high_mul(x, multiplier), -np.asarray(shift))


def mbqm_smaller_than_one_vectorized(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """The same in the compiler-vectorized int16 SUB loop (4 lanes): a right shift by a count outside
    [0, 31] fills with the sign bit (psrad) where the scalar instruction masks the count."""
    exponent = -shift
    if 0 <= exponent <= 31:
        return mbqm_smaller_than_one(x, multiplier, shift)
    x = saturating_rounding_doubling_high_mul(x, multiplier)
    mask = int(wrap32((1 << (exponent & 63)) - 1))
    threshold = (mask >> 1) + (x < 0)
    return (x >> 31) + ((x & mask) > threshold)


def activation_clamp_values(x: np.ndarray, low: int, high: int, simd: bool) -> np.ndarray:
    """The activation clamp: scalar code is min(high, max(low, x)), NEON max(low, min(high, x)) (they
    would differ only for an empty activation range)."""
    if simd:
        return np.maximum(np.minimum(x, high), low)
    return np.minimum(np.maximum(x, low), high)


def requantize_in_place(total: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """MultiplyByQuantizedMultiplier of int32 values held in an int64 array, computed in place: the left
    shift (wrapping in int32), the doubling high multiply (TFLite's scalar one and vqrdmulh agree: the
    high half of 2*x*m rounded half up), the right shift rounding halves away from zero."""
    total = np.asarray(total)  # (a 0-d result arrives as a NumPy scalar)
    if shift > 0:
        total <<= shift
        total += 1 << 31
        total &= 0xFFFFFFFF
        total -= 1 << 31
    total *= multiplier
    total += 1 << 30
    total >>= 31
    exponent = max(0, -shift)
    if exponent:
        negative = total < 0
        total += 1 << (exponent - 1)
        total -= negative
        total >>= exponent
    return total


def clamp_in_place(result: np.ndarray, low: int, high: int, simd: bool) -> np.ndarray:
    """activation_clamp_values in place."""
    result = np.asarray(result)
    if simd and low > high:
        result[...] = low
    else:
        np.clip(result, low, high, out=result)
    return result


def wrap32(x):
    return ((np.asarray(x, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
