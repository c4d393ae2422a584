"""Each quantized op's output value as a function of its two input values, one function per code path
(fidelity/simd_paths.py): what quantized.py tabulates or computes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...fidelity.neon import saturate, vshl
from ...fidelity.simd_paths import BLOCK, BROADCAST_BLOCK, SCALAR
from ..quant.fixed_point import rounding_divide_by_pot, saturating_rounding_doubling_high_mul, wrap
from .common import T
from .quant_params import TYPE_RANGE, QuantParams, Rescale
from .requantize import (
    activation_clamp_values,
    clamp_in_place,
    mbqm_smaller_than_one,
    mbqm_smaller_than_one_vectorized,
    requantize_in_place,
    wrap32,
)


@dataclass(frozen=True)
class Separable:
    """A formula combine(first(x1), second(x2)) whose per-input parts depend on one input value each: for
    int16 inputs the runner tabulates them over all 65536 values and calls only `combine` per element."""

    first: Callable
    second: Callable
    combine: Callable

    def __call__(self, x1, x2):
        return self.combine(self.first(x1), self.second(x2))


def add_sub_formulas(p: QuantParams, sign: int, tensor_type, simd: bool) -> dict[str, Callable]:
    """Functions (x1, x2) -> output values, int64 arrays in and out, one per code path."""
    one, two, out, shift = p.first, p.second, p.output, p.left_shift

    def scaled_first(x):
        return mbqm_smaller_than_one((x + one.offset) << shift, one.multiplier, one.shift)

    def scaled_second(x):
        return sign * mbqm_smaller_than_one((x + two.offset) << shift, two.multiplier, two.shift)

    def requantized(simd_clamp: bool, vectorized: bool = False):
        def combine(v1, v2):
            total = np.asarray(np.add(v1, v2, dtype=np.int64))
            if vectorized:
                total = mbqm_smaller_than_one_vectorized(total, out.multiplier, out.shift)
            elif out.shift <= 0:
                total = requantize_in_place(total, out.multiplier, out.shift)
            else:  # SUB's output multiplier above 1: see _divide_by_pot_x86
                total = mbqm_smaller_than_one(total, out.multiplier, out.shift)
            total += out.offset
            return clamp_in_place(total, p.low, p.high, simd_clamp)

        return combine

    formulas = {SCALAR: Separable(scaled_first, scaled_second, requantized(False))}
    if tensor_type == T.INT16 and sign < 0 and out.shift > 0:  # see mbqm_smaller_than_one_vectorized
        formulas[BLOCK] = Separable(scaled_first, scaled_second, requantized(False, vectorized=True))
    if not simd:
        return formulas

    def shifted_first(rescale: Rescale):  # the shift folded into the left shift, before the multiply
        return lambda x: saturating_rounding_doubling_high_mul(
            vshl(x + rescale.offset, shift + rescale.shift), rescale.multiplier
        )

    def shifted_last(rescale: Rescale):  # the (flooring) right shift after the multiply
        return lambda x: vshl(
            saturating_rounding_doubling_high_mul(vshl(x + rescale.offset, shift), rescale.multiplier),
            rescale.shift,
        )

    if tensor_type == T.INT16:
        formulas[BLOCK] = Separable(shifted_first(one), shifted_first(two), requantized(True))
        return formulas
    type_low, type_high = TYPE_RANGE[tensor_type]

    def narrowed(v1, v2):
        """The requantized sum through the 8-bit kernels' int16 lanes: narrowing and the offset wrap."""
        result = rounding_divide_by_pot(
            saturating_rounding_doubling_high_mul(v1 + v2, out.multiplier), -out.shift
        )
        result = saturate(wrap(wrap(result, 16) + out.offset, 16), type_low, type_high)
        return activation_clamp_values(result, p.low, p.high, simd=True)

    last = Separable(shifted_last(one), shifted_last(two), narrowed)
    formulas[BROADCAST_BLOCK] = last
    formulas[BLOCK] = (
        Separable(shifted_first(one), shifted_first(two), narrowed) if tensor_type == T.INT8 else last
    )
    return formulas


def pot_formulas(first_shift: int, second_shift: int, sign: int, low: int, high: int) -> dict[str, Callable]:
    """The int16 power-of-two path (LSTM cells): inputs rounded down to the output's scale by shifts,
    then a saturating int16 add or subtract."""

    def combine(v1, v2):
        total = np.asarray(np.add(v1, v2, dtype=np.int64))
        np.clip(total, -32768, 32767, out=total)
        return clamp_in_place(total, low, high, simd=False)

    return {
        SCALAR: Separable(
            lambda x: rounding_divide_by_pot(x, -first_shift),
            lambda x: sign * rounding_divide_by_pot(x, -second_shift),
            combine,
        )
    }


def mul_formulas(p: QuantParams, tensor_type, simd: bool) -> dict[str, Callable]:
    one, two, out = p.first, p.second, p.output

    def scalar(x1, x2):
        product = requantize_in_place((x1 + one.offset) * (x2 + two.offset), out.multiplier, out.shift)
        product += out.offset
        return clamp_in_place(product, p.low, p.high, simd=False)

    formulas = {SCALAR: scalar}
    if not simd:
        return formulas
    type_low, type_high = TYPE_RANGE[tensor_type]
    left, right = max(0, out.shift), max(0, -out.shift)

    def vector(narrow):
        def compute(x1, x2):
            product = vshl((x1 + one.offset) * (x2 + two.offset), left)
            product = narrow(
                rounding_divide_by_pot(saturating_rounding_doubling_high_mul(product, out.multiplier), right)
            )
            result = saturate(wrap(product + out.offset, 16), type_low, type_high)
            return activation_clamp_values(result, p.low, p.high, simd=True)

        return compute

    formulas[BLOCK] = vector(lambda x: saturate(x, -32768, 32767))
    # uint8's scalar-broadcast loop narrows with vmovn (wrapping) where the others saturate
    formulas[BROADCAST_BLOCK] = vector(
        (lambda x: wrap(x, 16)) if tensor_type == T.UINT8 else (lambda x: saturate(x, -32768, 32767))
    )
    return formulas


def int16_to_8bit_mul_formulas(output_offset: int, low: int, high: int) -> dict[str, Callable]:
    """MUL of int16 inputs into an int8/uint8 output: the Q0.15 product, divided by 2**8, clamped."""

    def scalar(x1, x2):
        product = _srdhm16(x1, x2)
        rescaled = rounding_divide_by_pot(product, 8)
        clamped = np.maximum(np.minimum(rescaled, high - output_offset), low - output_offset)
        return output_offset + clamped

    return {SCALAR: scalar}


def _srdhm16(a, b):
    """gemmlowp's int16 SaturatingRoundingDoublingHighMul."""
    product = np.asarray(a, np.int64) * b
    nudged = product + np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    result = np.where(nudged >= 0, nudged >> 15, -((-nudged) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, result)


def div_formulas(p: QuantParams) -> dict[str, Callable]:
    """Quantized DIV (scalar in every kernel): the divisor's reciprocal by gemmlowp's Newton-Raphson in
    fixed point, the dividend normalized by its leading sign bits, one requantization."""
    one, two, out = p.first, p.second, p.output

    def scalar(x1, x2):
        numerator, denominator = x1 + one.offset, x2 + two.offset
        negative = denominator < 0
        numerator = np.where(negative, -numerator, numerator)
        denominator = np.where(negative, -denominator, denominator)
        denominator = np.maximum(denominator, 1)  # zero divisors fail at invoke; never computed
        headroom_plus_one = _count_leading_zeros32(denominator)
        reciprocal_shift = 31 - headroom_plus_one
        shifted = wrap32((denominator << headroom_plus_one) - (1 << 31))
        reciprocal = _one_over_one_plus_x(shifted)
        headroom = _count_leading_sign_bits32(numerator)
        quotient = saturating_rounding_doubling_high_mul(numerator << headroom, reciprocal)
        total_shift = out.shift - reciprocal_shift - headroom
        result = mbqm_smaller_than_one(quotient, out.multiplier, total_shift) + out.offset
        return activation_clamp_values(result, p.low, p.high, simd=False)

    return {SCALAR: scalar}


def _count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of positive int32 values (< 2**31)."""
    x = np.asarray(x, np.int64)
    _, exponent = np.frexp(x.astype(np.float64))  # exact: x < 2**53; x = m * 2**e, 0.5 <= m < 1
    return np.where(x > 0, 32 - exponent, 32)


def _count_leading_sign_bits32(x: np.ndarray) -> np.ndarray:
    """__builtin_clrsb on int32 (31 for 0)."""
    x = np.asarray(x, np.int64)
    magnitude = np.where(x < 0, ~x, x)
    return np.where(x == 0, 31, _count_leading_zeros32(magnitude) - 1)


def _saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent on int32 values."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, 2**31 - 1, np.where(x < -threshold, -(2**31), x << exponent))


def _one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 on raw int32 Q0.31 values, as raw Q0.31."""
    total = a + (2**31 - 1)  # RoundingHalfSum(a, One()): (a + b + sign) / 2, truncating
    total = total + np.where(total >= 0, 1, -1)
    half_denominator = np.where(total >= 0, total >> 1, -((-total) >> 1))
    srdhm = saturating_rounding_doubling_high_mul
    x = 1515870810 + srdhm(half_denominator, -1010580540)  # 48/17 - 32/17 * d, in Q2.29
    for _ in range(3):
        one_minus = (1 << 29) - srdhm(half_denominator, x)
        x = x + _saturating_shift_left(srdhm(x, one_minus), 2)
    return _saturating_shift_left(x, 1)


def squared_difference_formulas(p: QuantParams) -> dict[str, Callable]:
    one, two, out, shift = p.first, p.second, p.output, p.left_shift

    def scalar(x1, x2):
        difference = mbqm_smaller_than_one((x1 + one.offset) << shift, one.multiplier, one.shift)
        difference = difference - mbqm_smaller_than_one((x2 + two.offset) << shift, two.multiplier, two.shift)
        result = mbqm_smaller_than_one(difference * difference, out.multiplier, out.shift) + out.offset
        return activation_clamp_values(result, p.low, p.high, simd=False)

    return {SCALAR: scalar}
