"""The fixed-point primitives against scalar Python-integer definitions of the same operations."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytflite.ops.quant import fixed_point as fp

INT32 = st.integers(fp.INT32_MIN, fp.INT32_MAX)


def srdhm_reference(a: int, b: int) -> int:
    if a == b == fp.INT32_MIN:
        return fp.INT32_MAX
    product = a * b
    nudged = product + ((1 << 30) if product >= 0 else 1 - (1 << 30))
    magnitude = abs(nudged) // (1 << 31)  # C division truncates toward zero
    return magnitude if nudged >= 0 else -magnitude


def rounding_divide_reference(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(INT32, INT32), min_size=1, max_size=20))
def test_srdhm(pairs):
    a, b = np.array(pairs, dtype=np.int64).T
    expected = [srdhm_reference(int(x), int(y)) for x, y in pairs]
    np.testing.assert_array_equal(fp.saturating_rounding_doubling_high_mul(a, b), expected)


def test_srdhm_saturates_the_one_overflow():
    assert fp.saturating_rounding_doubling_high_mul(np.array([fp.INT32_MIN]), fp.INT32_MIN)[0] == fp.INT32_MAX


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(INT32, st.integers(0, 31)), min_size=1, max_size=20))
def test_rounding_divide_by_pot(pairs):
    x, e = np.array(pairs, dtype=np.int64).T
    expected = [rounding_divide_reference(int(v), int(k)) for v, k in pairs]
    np.testing.assert_array_equal(fp.rounding_divide_by_pot(x, e), expected)


def test_rounding_divide_rounds_halves_away_from_zero():
    np.testing.assert_array_equal(
        fp.rounding_divide_by_pot(np.array([5, -5, 6, -6, 7, -7]), 1), [3, -3, 3, -3, 4, -4]
    )


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-12, 1e3, allow_nan=False))
def test_quantize_multiplier(real):
    multiplier, shift = fp.quantize_multiplier(real)
    if shift == 0 and multiplier == 0:
        assert real < 2**-31
        return
    assert 2**30 <= multiplier < 2**31
    assert math.isclose(multiplier * 2.0 ** (shift - 31), real, rel_tol=2**-30)
    vector = fp.quantize_multipliers(np.array([real, real * 2]))
    assert (vector[0][0], vector[1][0]) == (multiplier, shift)


def test_quantize_multiplier_edges():
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(1.0) == (2**30, 1)
    assert fp.quantize_multiplier(2**-40) == (0, 0)  # flushed, as TFLite does below 2**-31
    # a mantissa that rounds up to 2**31 carries into the exponent
    assert fp.quantize_multiplier(1.0 - 2**-40) == (2**30, 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**24), 2**24), min_size=1, max_size=10), st.floats(1e-6, 0.99))
def test_multiply_by_quantized_multiplier_is_the_composition(values, real):
    multiplier, shift = fp.quantize_multiplier(real)
    x = np.array(values, dtype=np.int64)
    expected = [rounding_divide_reference(srdhm_reference(v, multiplier), -shift) for v in values]
    np.testing.assert_array_equal(fp.multiply_by_quantized_multiplier(x, multiplier, shift), expected)
    # and it approximates x * real
    approx = fp.multiply_by_quantized_multiplier(x, multiplier, shift)
    assert np.all(np.abs(approx - x * real) <= 1.0 + np.abs(x) * 2**-29)


def test_multiply_by_quantized_multiplier_per_channel_and_left_shift():
    q, s = fp.quantize_multipliers(np.array([0.25, 3.0]))
    out = fp.multiply_by_quantized_multiplier(np.array([[100, 100], [-7, -7]]), q, s)
    np.testing.assert_array_equal(out, [[25, 300], [-2, -21]])


def test_int64_variant_reduces_the_multiplier():
    multiplier, shift = fp.quantize_multiplier(0.3)
    reduced = (multiplier + (1 << 15)) >> 16
    x = np.array([1 << 40, -12345678901, 7], dtype=np.int64)
    expected = [(int(v) * reduced + (1 << (14 - shift))) >> (15 - shift) for v in x]
    np.testing.assert_array_equal(fp.multiply_by_quantized_multiplier_int64(x, multiplier, shift), expected)


def test_activation_ranges():
    assert fp.activation_range("NONE", 0.1, 3, -128, 127) == (-128, 127)
    assert fp.activation_range("RELU", 0.1, 3, -128, 127) == (3, 127)
    assert fp.activation_range("RELU6", 0.1, 3, -128, 127) == (3, 63)
    assert fp.activation_range("RELU_N1_TO_1", 0.01, 0, -128, 127) == (-100, 100)
    assert fp.activation_range("RELU6", 0.01, 0, -128, 127) == (0, 127)


def simd_reference(x: int, multiplier: int, shift: int) -> int:
    """vqrdmulh then vrshl, from their definitions: both round halves toward +inf."""
    left, right = max(shift, 0), max(-shift, 0)
    shifted = ((x << left) + 2**31) % 2**32 - 2**31
    high = min((2 * shifted * multiplier + 2**31) >> 32, fp.INT32_MAX)
    return (high + ((1 << right) >> 1)) >> right


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**20), 2**20), min_size=1, max_size=20), st.floats(1e-6, 30.0))
def test_simd_variant_rounds_halves_up(values, real):
    multiplier, shift = fp.quantize_multiplier(real)
    expected = [simd_reference(v, multiplier, shift) for v in values]
    np.testing.assert_array_equal(
        fp.multiply_by_quantized_multiplier_simd(np.array(values), multiplier, shift), expected
    )


def test_simd_and_scalar_variants_differ_only_below_zero():
    x = np.arange(-1000, 1001)
    multiplier, shift = fp.quantize_multiplier(0.25)  # a right shift: rounding half up vs half away
    simd = fp.multiply_by_quantized_multiplier_simd(x, multiplier, shift)
    scalar = fp.multiply_by_quantized_multiplier(x, multiplier, shift)
    differs = simd != scalar
    assert np.all(x[differs] < 0) and -10 in x[differs]  # -2.5: -2 one way, -3 the other
    assert np.all(simd[differs] == scalar[differs] + 1)


def test_round_half_away_is_exact():
    below_half = np.nextafter(0.5, 0)  # adding 0.5 first would round it up to 1
    values = np.array([below_half, 0.5, -0.5, 1.5, -2.5, 2.4999, -below_half, 0.0, 7.0])
    assert fp.round_half_away(values).tolist() == [0, 1, -1, 2, -3, 2, -0.0, 0, 7]
    assert fp.round_half_away(float(below_half)) == 0 and fp.round_half_away(-2.5) == -3
