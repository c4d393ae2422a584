"""Exact integer matrix products on NumPy's float BLAS, and the requantization steps TFLite's quantized
matrix kernels (FULLY_CONNECTED, BATCH_MATMUL) apply to their int32/int64 accumulators.

NumPy has no integer BLAS: an integer matmul is a slow loop. A float matmul of integer-valued arrays is
exact as long as every partial sum is an integer the float type represents exactly, i.e. stays below
2**24 (float32) or 2**53 (float64) in magnitude, whatever order BLAS sums in (and with or without
fused multiply-adds: every intermediate is such an integer). `exact_float_type` picks the cheaper type
from a bound on |sum of |products||, so products are exact integers.

Requantizers turn an int64 array of accumulators into int64 results, before the output zero point and
clamp:
- `simd_requantizer`: what LiteRT's x86 build runs for int8/uint8 (and 16x8 with int32 bias) fully
  connected layers (ruy's x86 kernels and the NEON custom GEMV through its SSE translation): the
  accumulator (shifted left, wrapping in int32, for multipliers above one) times the fixed-point
  multiplier, high half rounded half up, then a rounding right shift, half up.
- `neon_requantizer`: ruy's ARM kernels (vshl, vqdmulh, vrshl) for int8/uint8: at least one bit of the
  shift is a rounding right shift, so the high half's truncation rounds once, half up.
- `single_rounding_requantizer`: ruy's portable C++ kernel (one rounding, half up), which LiteRT runs
  where ruy has no SIMD kernel for the host (fidelity/ruy.py).
- `double_rounding_requantizer`: TFLite's scalar MultiplyByQuantizedMultiplier for int32 accumulators
  (the high half rounded half up, the right shift half away from zero).
- `int64_requantizer`: the overload for int64 accumulators (16-bit multiplier, one rounding half up),
  whose int64 result C truncates to int32.
- `float_scale_requantizer`: the reference kernels that take float scales: round(double(acc) * scale)
  half away from zero, converted to int32 as the host does (x86: INT32_MIN when out of range; ARM:
  saturated).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import ensure
from ...fidelity.arithmetic import HostArithmetic
from .fixed_point import multiply_by_quantized_multiplier, round_half_away, wrap

Requantizer = Callable[[np.ndarray], np.ndarray]

_FLOAT32_EXACT = 1 << 24
_FLOAT64_EXACT = 1 << 53


def exact_float_type(bound: int) -> np.dtype:
    """The float type whose BLAS sums integers of magnitude up to `bound` exactly (float32 when every
    partial sum stays below 2**24, else float64 up to 2**53); a KernelError past that."""
    if bound < _FLOAT32_EXACT:
        return np.dtype(np.float32)
    ensure(
        bound < _FLOAT64_EXACT,
        f"integer sums up to {bound} are past float64's exact integers (2**53): the quantization parameters "
        "(zero points) are too large for pytflite's exact integer products",
    )
    return np.dtype(np.float64)


def simd_requantizer(multiplier, shift) -> Requantizer:
    """vshl (wrapping) + vqrdmulh + vrshl: both roundings half up. `multiplier`/`shift` may be arrays
    (per channel), broadcast against the accumulators' last axis."""
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    rounding = (np.int64(1) << right) >> 1
    any_left = bool(np.any(left))

    def requantize(acc: np.ndarray) -> np.ndarray:
        if any_left:
            acc = wrap(acc << left)
        # vqrdmulh saturates only for INT32_MIN * INT32_MIN; multipliers are never negative
        high = acc * multiplier
        high += 1 << 30
        high >>= 31
        high += rounding
        high >>= right
        return high

    return requantize


def neon_shifts(shift) -> tuple[np.ndarray, np.ndarray]:
    """ruy's ARM kernels' (left, right) shifts for TFLite's exponent: the right shift is min(exponent, -1)
    (never 0, so vrshl rounds what vqdmulh truncated), the left shift what remains."""
    shift = np.asarray(shift, np.int64)
    return np.maximum(shift + 1, 0), np.maximum(-shift, 1)


def neon_requantizer(multiplier, shift) -> Requantizer:
    """vshl (wrapping in int32) + vqdmulh + vrshl: floor((acc << left) * m / 2**31), then a right shift
    rounding half up, which compose into floor(((acc << left) * m + 2**(30 + right)) / 2**(31 + right))."""
    multiplier = np.asarray(multiplier, np.int64)
    left, right = neon_shifts(shift)
    total = 31 + right
    rounding = np.int64(1) << (total - 1)
    any_left = bool(np.any(left))

    def requantize(acc: np.ndarray) -> np.ndarray:
        if any_left:
            acc = wrap(acc << left)
        return (acc * multiplier + rounding) >> total

    return requantize


def single_rounding_requantizer(multiplier, shift) -> Requantizer:
    """ruy's portable C++ kernel (fidelity/ruy.py): one rounding, half up, the left shift folded into
    the 64-bit shift (no int32 wrap before it), the int64 result truncated to int32."""
    total = 31 - np.asarray(shift, np.int64)
    ensure(bool(np.all(total >= 1)), f"requantization exponent {int(np.max(shift))} is above 30")
    multiplier = np.asarray(multiplier, np.int64)
    rounding = np.int64(1) << (total - 1)

    def requantize(acc: np.ndarray) -> np.ndarray:
        return wrap((acc * multiplier + rounding) >> total)

    return requantize


def double_rounding_requantizer(multiplier, shift) -> Requantizer:
    """TFLite's MultiplyByQuantizedMultiplier(int32 x, ...): SRDHM then RoundingDivideByPOT."""
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    return lambda acc: multiply_by_quantized_multiplier(acc, multiplier, shift)


def gemm_requantizer(rounding: str, multiplier, shift) -> Requantizer:
    """The requantizer of a rounding fidelity.ruy.gemm_rounding chose: "simd", "neon", "single" or
    "scalar"."""
    makers = {
        "simd": simd_requantizer,
        "neon": neon_requantizer,
        "single": single_rounding_requantizer,
        "scalar": double_rounding_requantizer,
    }
    return makers[rounding](multiplier, shift)


def int64_requantizer(multiplier, shift) -> Requantizer:
    """TFLite's MultiplyByQuantizedMultiplier(int64 x, ...), its result truncated to int32."""
    multiplier = np.asarray(multiplier, np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total_shift = 15 - np.asarray(shift, np.int64)
    rounding = np.int64(1) << (total_shift - 1)

    def requantize(acc: np.ndarray) -> np.ndarray:
        return wrap((acc * reduced + rounding) >> total_shift)

    return requantize


def float_scale_requantizer(scale, arithmetic: HostArithmetic) -> Requantizer:
    """static_cast<int32_t>(round(double(acc) * scale)): `scale` is the double effective scale,
    `arithmetic` the host's (its conversion)."""
    scale = np.asarray(scale, np.float64)

    def requantize(acc: np.ndarray) -> np.ndarray:
        return arithmetic.float_to_int32(round_half_away(acc.astype(np.float64) * scale))

    return requantize
