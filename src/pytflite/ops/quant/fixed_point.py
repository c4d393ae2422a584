"""Fixed-point requantization, exactly as TFLite's kernels do it, vectorised over NumPy int64 arrays.

A real multiplier M (an input scale over an output scale, say) becomes an int32 `multiplier` with the
binary point after bit 31 and a power-of-two `shift`: M ~= multiplier * 2**(shift - 31). Applying it
to an int32 accumulator x is TFLite's default (double-rounding) MultiplyByQuantizedMultiplier:
    RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2**left, multiplier), right)
where the first rounds the high 32 bits of the doubled product half up (toward +inf; its nudge of
1 - 2**30 for negative products and C's truncating division make it so) and the second divides by
2**right rounding half away from zero. NEON's vector forms (vqrdmulh, then vrshl) differ only in the
second rounding, which goes half up too. Everything is int64 NumPy arithmetic over whole
arrays; `shift` and `multiplier` may be arrays too (per-channel quantization).
"""

from __future__ import annotations

import math

import numpy as np

from ...core.types import INT32_MAX, INT32_MIN
from ...errors import ensure


def round_half_away(value):
    """std::round: halves go away from zero (NumPy's np.round goes to even). Exact for every float:
    adding 0.5 first would round 0.49999999999999994 up."""
    if isinstance(value, np.ndarray):
        whole = np.trunc(value)
        return whole + np.where(np.abs(value - whole) >= 0.5, np.sign(value), 0).astype(value.dtype)
    whole = math.trunc(value)
    return whole + (math.copysign(1, value) if abs(value - whole) >= 0.5 else 0)


def round_non_negative(values: np.ndarray) -> np.ndarray:
    """roundf (halves away from zero) of non-negative float values, exactly (adding 0.5 first would
    round 0.49999997 up), in their own type."""
    whole = np.trunc(values)
    return whole + (values - whole >= values.dtype.type(0.5))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(multiplier, shift) for a real multiplier (QuantizeMultiplier): frexp's mantissa in [0.5, 1)
    scaled by 2**31 and rounded half away from zero; multipliers under 2**-31 flush to zero."""
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    fixed = round_half_away(mantissa * 2**31)
    if fixed == 2**31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(fixed), int(shift)


def quantize_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over an array (per-channel scales): int64 multipliers and shifts."""
    reals = np.asarray(reals, dtype=np.float64)
    mantissa, shift = np.frexp(reals)
    fixed = round_half_away(mantissa * 2.0**31).astype(np.int64)
    carry = fixed == 2**31
    fixed = np.where(carry, fixed // 2, fixed)
    shift = np.where(carry, shift + 1, shift).astype(np.int64)
    flush = (shift < -31) | (reals == 0.0)
    return np.where(flush, 0, fixed), np.where(flush, 0, shift)


def saturating_rounding_doubling_high_mul(a: np.ndarray, b) -> np.ndarray:
    """High 32 bits of 2*a*b rounded half up (gemmlowp's SRDHM, NEON's vqrdmulh); int32 values in int64.

    gemmlowp nudges negative products by 1 - 2**30 and divides truncating toward zero, which equals
    adding 2**30 and flooring; only INT32_MIN * INT32_MIN saturates."""
    product = np.asarray(a, dtype=np.int64) * b
    return np.minimum((product + (1 << 30)) >> 31, INT32_MAX)


def rounding_divide_by_pot(x: np.ndarray, exponent) -> np.ndarray:
    """x / 2**exponent rounded half away from zero (gemmlowp's RoundingDivideByPOT)."""
    x = np.asarray(x, dtype=np.int64)
    mask = (np.int64(1) << np.asarray(exponent, dtype=np.int64)) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def wrap(values, bits: int = 32, out: np.ndarray | None = None) -> np.ndarray:
    """Two's-complement truncation to `bits` bits: C's narrowing conversions and overflowing int32
    arithmetic (vmovn in NEON code). `out` (int64, may be `values`) receives the result."""
    half = 1 << (bits - 1)
    result = np.add(values, half, dtype=np.int64, out=out)
    result &= (1 << bits) - 1
    result -= half
    return result


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """TFLite's default MultiplyByQuantizedMultiplier for int32 accumulators (double rounding).

    A left shift of 32 or more (a real multiplier of 2**31 or more) makes C's `1 << shift` undefined;
    x86 shifts by `shift % 32`, and so does this, on every host: AArch64's LSLV on 32-bit registers also
    takes the count mod 32 (armv7's register shifts, which give 0 from 32 on, are not reproduced)."""
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0) & 31
    right = np.maximum(-shift, 0)
    if np.any(left):
        x = wrap(x << left)  # C multiplies in int32: a left shift may wrap
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def multiply_by_quantized_multiplier_simd(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """The NEON form of the above (MultiplyByQuantizedMultiplier4Rows), which TFLite's optimized kernels
    use on whole vector blocks, and LiteRT's x86 build through its SSE translation: the high-half
    multiply (vqrdmulh) and the right shift (vrshl) both round halves up, toward +inf."""
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    if np.any(left):
        x = wrap(x << left)
    high = saturating_rounding_doubling_high_mul(x, multiplier)
    return (high + ((np.int64(1) << right) >> 1)) >> right


def multiply_by_quantized_multiplier_int64(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """The overload for int64 accumulators (16x8 kernels with int64 bias): the multiplier is reduced
    to 16 bits and the product rounded once, half up."""
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total_shift = 15 - np.asarray(shift, dtype=np.int64)
    return (x * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift


def quantize_value(value: float, scale: float, zero_point: int) -> int:
    """zero_point + round(value / scale) with the division in float32, as TFLite's Quantize helper."""
    with np.errstate(all="ignore"):  # a zero or NaN scale: refused below
        quotient = float(np.float32(value) / np.float32(scale))
    rounded = round_half_away(quotient) if math.isfinite(quotient) else None
    ensure(
        rounded is not None and INT32_MIN <= rounded <= INT32_MAX,
        f"{value} quantized with scale {scale} is not an int32",
    )
    return zero_point + int(rounded)


def activation_range(activation, scale: float, zero_point: int, lowest: int, highest: int) -> tuple[int, int]:
    """The quantized clamp bounds of a fused activation (CalculateActivationRangeQuantized)."""
    name = getattr(activation, "name", activation)
    if name == "RELU":
        return max(lowest, quantize_value(0.0, scale, zero_point)), highest
    if name == "RELU6":
        return max(lowest, quantize_value(0.0, scale, zero_point)), min(
            highest, quantize_value(6.0, scale, zero_point)
        )
    if name == "RELU_N1_TO_1":
        return max(lowest, quantize_value(-1.0, scale, zero_point)), min(
            highest, quantize_value(1.0, scale, zero_point)
        )
    return lowest, highest
