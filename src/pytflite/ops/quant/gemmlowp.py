"""gemmlowp's fixed-point number arithmetic, as TFLite's quantized activation kernels use it, vectorised.

A fixed-point value with `integer_bits` integer bits is a raw signed integer of `bits` (16 or 32) bits
standing for raw / 2**(bits - 1 - integer_bits). Raw values are held in int64 NumPy arrays; every result
is brought back into the raw type's range the way the C code does it: additions and negations wrap,
multiplications are rounding "doubling high" products, power-of-two scalings saturate.

TFLite runs these functions in two forms: gemmlowp's scalar templates, and the SIMD code of its optimized
kernels (NEON's vqrdmulh/vrhadd, or the SSE4 equivalents _mm_mulhrs_epi16/_mm_avg_epu16). Their doubling
high products agree (both round halves up) and so do their divisions by powers of two (half away from
zero); the halving sum differs (half away from zero in scalar code, half up in SIMD code) but only on
negative sums, which none of these functions produce. `FixedPointMath(bits, simd)` still picks one.

Also here: the few fixed-point routines TFLite adds on top of gemmlowp in kernels/internal/common.h
(log of x >= 1, the reciprocal used by the integer softmax, the inverse square root of L2
normalization), written over arrays of rows.
"""

from __future__ import annotations

import numpy as np

from .fixed_point import rounding_divide_by_pot, wrap


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of uint32 values (32 for 0)."""
    _, exponent = np.frexp(np.asarray(x, np.int64).astype(np.float64))  # exact: below 2**53
    return 32 - exponent.astype(np.int64)


class FixedPointMath:
    """gemmlowp's FixedPoint<int{bits}_t, n> operations over raw int64 arrays."""

    def __init__(self, bits: int, simd: bool = False):
        self.bits = bits
        self.simd = simd
        self.min = -(1 << (bits - 1))
        self.max = (1 << (bits - 1)) - 1
        self._half_unit = np.int64(1 << (bits - 2))

    # ---- raw integer operations ----------------------------------------------------------------------

    def frac(self, integer_bits: int) -> int:
        return self.bits - 1 - integer_bits

    def constant(self, raw32: int) -> int:
        """A constant given as its 32-bit raw value, in this raw type (rounded for 16 bits)."""
        if self.bits == 32:
            return raw32
        return int(rounding_divide_by_pot(np.int64(raw32), 32 - self.bits))

    def add(self, a, b):
        return wrap(np.asarray(a, np.int64) + b, self.bits)

    def sub(self, a, b):
        return wrap(np.asarray(a, np.int64) - b, self.bits)

    def neg(self, a):
        return wrap(-np.asarray(a, np.int64), self.bits)

    def saturating_add(self, a, b):
        return np.clip(np.asarray(a, np.int64) + b, self.min, self.max)

    def add_saturating_if_16bit(self, a, b):
        return self.saturating_add(a, b) if self.bits == 16 else self.add(a, b)

    def mul(self, a, b):
        """SaturatingRoundingDoublingHighMul: the high half of 2*a*b, rounded half up. (gemmlowp's scalar
        form adds 2**(bits-2), or 1 - 2**(bits-2) to a negative product, and truncates: the same result
        as the SIMD instructions' floor((a*b + 2**(bits-2)) / 2**(bits-1)).)"""
        result = np.asarray(a, np.int64) * b
        result += self._half_unit
        result >>= self.bits - 1
        return np.minimum(result, self.max, out=result)  # only min * min overflows

    def rounding_half_sum(self, a, b):
        total = np.asarray(a, np.int64) + b
        if self.simd:
            return (total + 1) >> 1
        nudged = total + np.where(total >= 0, 1, -1)
        return np.where(nudged < 0, -((-nudged) >> 1), nudged >> 1)

    def multiply_by_pot(self, x, exponent: int):
        """SaturatingRoundingMultiplyByPOT: a saturating left shift, or a rounding right shift."""
        x = np.asarray(x, np.int64)
        if exponent == 0:
            return x
        if exponent < 0:
            return rounding_divide_by_pot(x, -exponent)
        # saturating: beyond +-(2**(bits-1-exponent) - 1) the shifted value leaves the raw range
        return np.clip(x << exponent, self.min, self.max)

    # ---- fixed-point numbers -----------------------------------------------------------------------------

    def one(self, integer_bits: int) -> int:
        return self.max if integer_bits == 0 else 1 << self.frac(integer_bits)

    def rescale(self, x, source_bits: int, target_bits: int):
        return self.multiply_by_pot(x, source_bits - target_bits)

    def exp_on_interval_between_negative_one_quarter_and_0_excl(self, a):
        """exp(a) for a in [-1/4, 0) (Q0 in, Q0 out): a Taylor expansion around -1/8."""
        constant_term = self.constant(1895147668)  # exp(-1/8)
        one_third = self.constant(715827883)
        x = self.add(a, 1 << (self.frac(0) - 3))
        x2 = self.mul(x, x)
        x3 = self.mul(x2, x)
        x4 = self.mul(x2, x2)
        x4_over_4 = self.multiply_by_pot(x4, -2)
        poly = self.multiply_by_pot(self.add(self.mul(self.add(x4_over_4, x3), one_third), x2), -1)
        return self.add_saturating_if_16bit(constant_term, self.mul(constant_term, self.add(x, poly)))

    # exp(-2**k) in Q0.31 for k = -2 ... 4: the barrel shifter's factors.
    _EXP_FACTORS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535))
    _EXP_FACTORS += ((3, 720401), (4, 242))

    def exp_on_negative_values(self, a, integer_bits: int):
        """exp(a) for a <= 0 with `integer_bits` integer bits, in Q0."""
        a = np.asarray(a, np.int64)
        frac = self.frac(integer_bits)
        quarter = 1 << (frac - 2)
        a_mod_quarter_minus_quarter = self.sub(a & (quarter - 1), quarter)
        result = self.exp_on_interval_between_negative_one_quarter_and_0_excl(
            self.rescale(a_mod_quarter_minus_quarter, integer_bits, 0)
        )
        remainder = self.sub(a_mod_quarter_minus_quarter, a)
        for exponent, factor in self._EXP_FACTORS:
            if integer_bits > exponent:
                selected = (remainder & (1 << (frac + exponent))) != 0
                result = np.where(selected, self.mul(result, self.constant(factor)), result)
        if integer_bits > 5:  # below -32 the result is 0
            result = np.where(a < self.constant(-(1 << (36 - integer_bits))), 0, result)
        return np.where(a == 0, self.one(0), result)

    def _newton_reciprocal(self, a):
        """x ~= 1 / half_denominator in Q2, half_denominator = (1 + a) / 2, by Newton-Raphson."""
        half_denominator = self.rounding_half_sum(a, self.one(0))
        x = self.add(self.constant(1515870810), self.mul(half_denominator, self.constant(-1010580540)))
        one_q2 = self.one(2)
        for _ in range(3):
            one_minus = self.sub(one_q2, self.mul(half_denominator, x))
            x = self.add(x, self.rescale(self.mul(x, one_minus), 4, 2))
        return x

    def one_over_one_plus_x_for_x_in_0_1(self, a):
        """1 / (1 + a) for a in [0, 1] (Q0 in and out)."""
        return self.rescale(self._newton_reciprocal(a), 1, 0)  # x / 2, from Q1 to Q0

    def one_minus_x_over_one_plus_x_for_x_in_0_1(self, a):
        return self.rescale(self.sub(self._newton_reciprocal(a), self.one(2)), 2, 0)

    def tanh(self, a, integer_bits: int):
        """tanh of a fixed-point value (Q0 out)."""
        a = np.asarray(a, np.int64)
        negative = a < 0
        n = np.where(negative, a, self.neg(a))
        # -tanh(-|x|) = (1 - exp(-2|x|)) / (1 + exp(-2|x|)); doubling adds an integer bit
        t = self.one_minus_x_over_one_plus_x_for_x_in_0_1(self.exp_on_negative_values(n, integer_bits + 1))
        return np.where(a == 0, 0, np.where(negative, self.neg(t), t))

    def logistic(self, a, integer_bits: int):
        """1 / (1 + exp(-a)) of a fixed-point value (Q0 out)."""
        a = np.asarray(a, np.int64)
        positive = a > 0
        magnitude = np.where(positive, a, self.neg(a))
        if_positive = self.one_over_one_plus_x_for_x_in_0_1(
            self.exp_on_negative_values(self.neg(magnitude), integer_bits)
        )
        if_negative = self.sub(self.one(0), if_positive)
        half = self.constant(1 << 30)
        return np.where(a == 0, half, np.where(positive, if_positive, if_negative))


# ---- TFLite's additions (kernels/internal/common.h), 32-bit scalar arithmetic -----------------------------

Q31 = FixedPointMath(32)


def get_reciprocal(x: np.ndarray, integer_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """1/x for a positive fixed-point x: (Q0 reciprocal of x scaled into [1, 2), bits of x above 1)."""
    x = np.asarray(x, np.int64)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = integer_bits - headroom_plus_one
    shifted_minus_one = wrap(((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31), 32)
    return Q31.one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), num_bits_over_unit


def _multiply_by_pot_param(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOTParam (32-bit) with a per-element exponent >= 0."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    shifted = np.where(exponent == 0, x, x << exponent)
    saturated = np.where(x > threshold, Q31.max, np.where(x < -threshold, Q31.min, shifted))
    return np.where(exponent == 0, x, saturated)


def log_x_for_x_greater_than_or_equal_to_1(x: np.ndarray, input_integer_bits: int, output_integer_bits: int):
    """log(x) of a fixed-point x >= 1 (TFLite's log_x_for_x_greater_than_or_equal_to_1_impl)."""
    q = Q31
    accum_bits = output_integer_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = q.rescale(np.int64(536870912), 0, accum_bits)

    z_a = np.asarray(x, np.int64)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a & 0xFFFFFFFF)
    r_a_tmp = _multiply_by_pot_param(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = _multiply_by_pot_param(q.mul(r_a_tmp, sqrt_half), np.int64(1))
    z_a_pow_2_adj = q.saturating_add(
        _multiply_by_pot_param(input_integer_bits - z_a_headroom_plus_1, np.int64(31 - accum_bits)),
        shifted_quarter,
    )
    z_b = q.mul(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros32(z_b & 0xFFFFFFFF) - 1
    r_b_raw = _multiply_by_pot_param(z_a, z_b_headroom)
    z_b_pow_2_adj = np.clip(
        _multiply_by_pot_param(input_integer_bits - z_b_headroom, np.int64(31 - accum_bits))
        - shifted_quarter,
        q.min,
        q.max,
    )
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)

    p = q.rounding_half_sum(r, sqrt_sqrt_half)
    d = q.sub(r, sqrt_sqrt_half)
    d = q.add(d, d)
    common_sq = q.mul(d, d)
    num = q.add(q.mul(d, r), q.mul(q.mul(d, common_sq), alpha_n))
    denom_minus_one = q.add(q.mul(p, q.add(q.add(alpha_i, d), q.mul(alpha_d, common_sq))), q.mul(alpha_f, d))
    recip_denom = q.one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = q.rescale(num, 0, accum_bits)
    total = q.add(q.mul(z_pow_2_adj, log_2), q.mul(num_scaled, recip_denom))
    return q.rescale(total, accum_bits, output_integer_bits)


def inv_sqrt_multiplier(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(x, kReverseShift) over an array of non-negative int32
    sums: (multiplier, left shift) with 1/sqrt(x) ~= multiplier * 2**(shift - 31)."""
    x = np.asarray(x, np.int64)
    small = x <= 1
    value = np.where(small, 4, x)
    # an int32 at or above 2**29 is divided by 4 once (then it is below 2**29)
    large = value >= (1 << 29)
    value = np.where(large, value >> 2, value)
    shift = 11 + large.astype(np.int64)
    max_left_shift_bits = count_leading_zeros32(value) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    value = value << (2 * left_shift_bit_pairs)
    q = Q31
    fixed_input = value >> 1  # Q3
    half_input = q.multiply_by_pot(fixed_input, -1)
    half_three = (1 << 28) + (1 << 27)
    estimate = np.full(value.shape, q.one(3), np.int64)
    for _ in range(5):
        cube = q.rescale(q.mul(q.mul(estimate, estimate), estimate), 9, 3)
        estimate = q.rescale(q.sub(q.mul(half_three, estimate), q.mul(half_input, cube)), 6, 3)
    estimate = q.mul(estimate, 1518500250)  # * sqrt(2)/2: Q3 * Q0 -> Q3
    negative = shift < 0
    multiplier = np.where(negative, wrap(estimate << np.where(negative, -shift, 0), 32), estimate)
    shift = np.where(negative, 0, shift)
    multiplier = np.where(small, Q31.max, multiplier)
    shift = np.where(small, 0, shift)
    return multiplier, -shift
